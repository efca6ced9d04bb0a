package app_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/config"
	"github.com/arbor-run/arbor/internal/permission"
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
	a := openIn(t, home, ws, "", app.Options{Overrides: config.Overrides{Mode: "trust"}})
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

// TestClaudeCodeNamesInArborsRuleFiles: a rule of arbor's own rule file
// written with Claude Code's tool names ("Bash(rm *)", "Bash(git:*)",
// "Edit") governs the arbor tool they name, as the same rule in
// .claude/settings.json does; before, it named no tool and a denied rm
// ran under --mode trust.
func TestClaudeCodeNamesInArborsRuleFiles(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	ws := filepath.Join(home, "ws")
	writeFiles(t, ws, map[string]string{
		".arbor/permissions.yaml": `rules:
  - {rule: "Bash(rm *)", action: deny}
  - {rule: "Bash(git:*)", action: ask}
  - {rule: "Edit", action: deny}
`,
	})
	a := openIn(t, home, ws, "", app.Options{Overrides: config.Overrides{Mode: "trust"}})
	for _, c := range []struct {
		req  permission.Request
		want permission.Action
	}{
		{permission.Request{Tool: "shell", Class: permission.ClassExecute, Command: "rm -rf build"}, permission.Deny},
		{permission.Request{Tool: "shell", Class: permission.ClassExecute, Command: "git push"}, permission.Ask},
		{permission.Request{Tool: "edit", Class: permission.ClassWrite, Paths: []string{"a.go"}}, permission.Deny},
		{permission.Request{Tool: "shell", Class: permission.ClassExecute, Command: "ls"}, permission.Allow},
		// A Claude Code node's call carries Claude Code's name.
		{permission.Request{Tool: "Bash", Class: permission.ClassExecute, Command: "rm -rf build"}, permission.Deny},
	} {
		if d := a.Permissions.Decide(c.req); d.Action != c.want {
			t.Errorf("%s %q: %s (%s), want %s", c.req.Tool, c.req.Command, d.Action, d.Reason, c.want)
		}
	}
	if w := a.Warnings(); len(w) != 0 {
		t.Errorf("Claude Code's names are no mistakes: %q", w)
	}
}
