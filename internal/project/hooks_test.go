package project_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/hook"
	"github.com/arbor-run/arbor/internal/project"
	"github.com/arbor-run/arbor/internal/tool"
)

// TestHooksRunInTheirSettingsFolder: a hook of a settings file runs in
// the folder the file belongs to, with CLAUDE_PROJECT_DIR set to it, as
// Claude Code started there runs it: a workspace below the repository
// root whose .claude/settings.json says
// "$CLAUDE_PROJECT_DIR"/.claude/hooks/block.sh finds its script (arbor
// looked for it in the repository root, so the hook failed and the call
// it should have blocked ran).
func TestHooksRunInTheirSettingsFolder(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	ws := filepath.Join(root, "svc")
	const settings = `{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/check.sh"}]}]}}`
	tree(t, root, map[string]string{
		".git/HEAD":                  "ref: refs/heads/main\n",
		".claude/settings.json":      settings,
		".claude/hooks/check.sh":     "#!/bin/sh\ncat >/dev/null\npwd > \"$CLAUDE_PROJECT_DIR\"/root-hook-ran-in\n",
		"svc/.claude/settings.json":  settings,
		"svc/.claude/hooks/check.sh": "#!/bin/sh\ncat >/dev/null\necho \"BLOCKED-BY-SVC in $(pwd)\" >&2\nexit 2\n",
	})
	for _, p := range []string{".claude/hooks/check.sh", "svc/.claude/hooks/check.sh"} {
		if err := os.Chmod(filepath.Join(root, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	k := project.Load(project.Options{Workspace: ws})
	set, problems := hook.FromSettings(k.Hooks, hook.CommandOptions{Dir: k.Root})
	if len(problems) != 0 || len(k.Problems) != 0 {
		t.Fatal(problems, k.Problems)
	}
	var r hook.Runner
	r.Set(set)
	sh := tool.New("shell", "runs", tool.KindExecute, func(_ context.Context, _ tool.Call, _ struct{}) tool.Result {
		return tool.Result{Content: "RAN"}
	})
	res := (&hook.Tool{Tool: sh, Hooks: &r}).Run(t.Context(), tool.Call{ID: "c1", Input: json.RawMessage(`{"command":"rm -rf x"}`)})
	if !res.IsError || !strings.Contains(res.Content, "BLOCKED-BY-SVC in "+ws) {
		t.Fatalf("result %q; want the workspace's hook to block, run in the workspace", res.Content)
	}
	b, err := os.ReadFile(filepath.Join(root, "root-hook-ran-in"))
	if err != nil || strings.TrimSpace(string(b)) != root {
		t.Fatalf("the root's hook ran in %q (%v); want %s", b, err, root)
	}
}
