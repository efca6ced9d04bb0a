package permission_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/permission"
)

// Extra rules (a project's .claude/settings.json) apply with their
// scope's precedence: deny denies even in trust mode, and they survive a
// reload of the scope's file.
func TestExtraRules(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	file := filepath.Join(ws, ".arbor", "permissions.yaml")
	rule := func(spec string, a permission.Action) permission.Rule {
		r, err := permission.ParseRule(spec, a, permission.ScopeProject)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	e, err := permission.New(permission.Options{Mode: permission.ModeTrust, Workspace: ws, ProjectFile: file,
		Extra: []permission.Rule{rule("read_file(.env)", permission.Deny), rule("shell(npm run test *)", permission.Allow)}})
	if err != nil {
		t.Fatal(err)
	}
	if d := e.Decide(permission.Request{Tool: "read_file", Class: permission.ClassRead, Paths: []string{".env"}}); d.Action != permission.Deny || !strings.Contains(d.Reason, "read_file(.env)") {
		t.Fatalf("trust mode, deny rule: %+v", d)
	}
	if err := e.AddRule(rule("shell(ls *)", permission.Allow)); err != nil { // rewrites and reloads the file
		t.Fatal(err)
	}
	e.SetMode(permission.ModeDefault)
	if d := e.Decide(permission.Request{Tool: "shell", Class: permission.ClassExecute, Command: "npm run test -- --watch"}); d.Action != permission.Allow {
		t.Fatalf("after a reload the extra allow rule is gone: %+v", d)
	}
	if d := e.Decide(permission.Request{Tool: "read_file", Class: permission.ClassRead, Paths: []string{".env"}}); d.Action != permission.Deny {
		t.Fatalf("after a reload the extra deny rule is gone: %+v", d)
	}
	b, _ := os.ReadFile(file)
	if strings.Contains(string(b), ".env") {
		t.Fatalf("an extra rule was written to %s:\n%s", file, b)
	}
	if _, err := permission.New(permission.Options{Workspace: ws, Extra: []permission.Rule{{Tool: "shell", Action: permission.Deny, Scope: permission.ScopeSession}}}); err == nil {
		t.Fatal("a session-scope extra rule was taken")
	}
}
