package app_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/config"
)

// TestRuleMistakesAreReported: a deny rule of .arbor/permissions.yaml
// naming no tool arbor has ("shel", a typo), a misspelt key of a
// settings file's permissions ("dney") and a misspelt top-level key
// ("permission") are each reported at start, naming the file and the
// rule or key. Before, all three were taken without a word, and under
// --mode trust the command the rule meant to deny ran. Rules naming
// arbor's tools, the tree's, Claude Code's or an MCP server's, and
// Claude Code's own settings, are not reported.
func TestRuleMistakesAreReported(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	ws := filepath.Join(home, "ws")
	writeFiles(t, ws, map[string]string{
		".arbor/permissions.yaml": `rules:
  - {rule: "shel(touch *)", action: deny}
  - {rule: "shell(rm *)", action: deny}
  - {rule: "Bash(git *)", action: allow}
  - {rule: "NotebookEdit", action: deny}
  - {rule: "spawn", action: allow}
  - {rule: "handoff", action: ask}
  - {rule: "skill", action: allow}
  - {rule: "job_kill", action: allow}
  - {rule: "mcp__github__delete_repo", action: deny}
`,
		".claude/settings.json":       `{"permissions": {"dney": ["Bash(touch:*)"], "defaultMode": "acceptEdits", "allow": ["Read"]}, "model": "opus"}`,
		".claude/settings.local.json": `{"permission": {"deny": ["Bash(touch:*)"]}}`,
	})
	env := map[string]string{"XDG_CONFIG_HOME": filepath.Join(home, "config"), "XDG_STATE_HOME": filepath.Join(home, "state"), "HOME": home}
	a, err := app.Open(context.Background(), app.Options{Workspace: ws, Getenv: func(k string) string { return env[k] },
		Overrides: config.Overrides{Mode: "trust"}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	warnings := a.Warnings()
	all := strings.Join(warnings, "\n")
	for _, w := range []string{
		filepath.Join(ws, ".arbor/permissions.yaml") + `: rule 1 "shel(touch *)" (deny) names no tool arbor has (did you mean shell?)`,
		filepath.Join(ws, ".claude/settings.json") + `: permissions.dney: not a key of permissions: arbor reads allow, ask, deny (did you mean deny?)`,
		filepath.Join(ws, ".claude/settings.local.json") + `: permission: not a settings key arbor reads (did you mean permissions?)`,
	} {
		if !strings.Contains(all, w) {
			t.Errorf("warnings lack %q:\n%s", w, all)
		}
	}
	if len(warnings) != 3 {
		t.Errorf("%d warnings, want the three mistakes only:\n%s", len(warnings), all)
	}
}
