package permission_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/permission"
)

// TestSensitiveWritesAsk: writing a file arbor, git, an editor or a shell
// acts on (arbor's and Claude Code's rules and settings, git's hooks and
// config, .mcp.json, shell start-up files) asks in auto-edit mode, as
// Claude Code asks for them in acceptEdits mode, and a rule without a
// pattern does not allow it; a rule naming the path does, and trust
// mode still allows everything.
func TestSensitiveWritesAsk(t *testing.T) {
	t.Parallel()
	sensitive := []string{".arbor/permissions.yaml", ".arbor/config.yaml", ".arbor/agents/main.yaml",
		".claude/settings.json", ".claude/settings.local.json", ".CLAUDE/Settings.json", ".git/hooks/pre-commit",
		".git/config", "sub/.git/hooks/post-checkout", ".mcp.json", ".vscode/tasks.json", ".bashrc",
		"./.git//config", "src/../.claude/settings.json"}
	write := func(p string) permission.Request {
		return permission.Request{Tool: "write_file", Class: permission.ClassWrite, Paths: []string{p}}
	}
	t.Run("auto-edit-asks", func(t *testing.T) {
		b := setup(t, permission.ModeAutoEdit)
		for _, p := range sensitive {
			if d := b.engine.Decide(write(p)); d.Action != permission.Ask {
				t.Fatalf("write %s in auto-edit mode: %s (%s); want ask", p, d.Action, d.Reason)
			}
		}
		if d := b.engine.Decide(write("src/main.go")); d.Action != permission.Allow {
			t.Fatalf("write src/main.go in auto-edit mode: %s (%s); want allow", d.Action, d.Reason)
		}
		if d := b.engine.Decide(permission.Request{Tool: "read_file", Class: permission.ClassRead, Paths: []string{".arbor/permissions.yaml"}}); d.Action != permission.Allow {
			t.Fatalf("read .arbor/permissions.yaml: %s; want allow", d.Action)
		}
		d := b.engine.Decide(write(".arbor/permissions.yaml"))
		if !strings.Contains(d.Reason, ".arbor/permissions.yaml") {
			t.Fatalf("reason %q does not name the file", d.Reason)
		}
	})
	t.Run("through-a-symlink", func(t *testing.T) {
		b := setup(t, permission.ModeAutoEdit)
		if err := os.Mkdir(filepath.Join(b.ws, ".claude"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(".claude", filepath.Join(b.ws, "innocent")); err != nil {
			t.Fatal(err)
		}
		if d := b.engine.Decide(write("innocent/settings.json")); d.Action != permission.Ask {
			t.Fatalf("write innocent/settings.json (-> .claude): %s; want ask", d.Action)
		}
	})
	t.Run("bare-rule-does-not-allow", func(t *testing.T) {
		b := setup(t, permission.ModeDefault)
		b.add(t, "write_file", permission.Allow, permission.ScopeSession)
		if d := b.engine.Decide(write(".git/hooks/pre-commit")); d.Action != permission.Ask {
			t.Fatalf("write .git/hooks/pre-commit under a bare allow rule: %s; want ask", d.Action)
		}
		if d := b.engine.Decide(write("src/main.go")); d.Action != permission.Allow {
			t.Fatalf("write src/main.go under a bare allow rule: %s; want allow", d.Action)
		}
		b.add(t, "write_file(.git/hooks/**)", permission.Allow, permission.ScopeSession)
		if d := b.engine.Decide(write(".git/hooks/pre-commit")); d.Action != permission.Allow {
			t.Fatalf("write .git/hooks/pre-commit under a rule naming it: %s; want allow", d.Action)
		}
	})
	t.Run("trust-allows", func(t *testing.T) {
		b := setup(t, permission.ModeTrust)
		if d := b.engine.Decide(write(".claude/settings.json")); d.Action != permission.Allow {
			t.Fatalf("write .claude/settings.json in trust mode: %s; want allow", d.Action)
		}
	})
}
