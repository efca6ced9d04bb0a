package permission_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/permission"
)

// TestRoleRuleFiles: a role's rule files (Chord's agents/<role>.yaml
// layout) add their rules to the project and user scopes, rules added to
// those scopes go to them (other content kept), and SetRoleFiles swaps
// them for another role's.
func TestRoleRuleFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	builder := filepath.Join(ws, ".arbor", "agents", "builder.yaml")
	planner := filepath.Join(ws, ".arbor", "agents", "planner.yaml")
	userBuilder := filepath.Join(dir, "config", "arbor", "agents", "builder.yaml")
	if err := os.MkdirAll(filepath.Dir(builder), 0o755); err != nil {
		t.Fatal(err)
	}
	existing := "# the builder's own file\nmodel: fast\npermission:\n  read_file: allow\n  shell:\n    \"git log*\": allow\n"
	if err := os.WriteFile(builder, []byte(existing), 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := permission.New(permission.Options{Workspace: ws, ProjectRoleFile: builder, UserRoleFile: userBuilder})
	if err != nil {
		t.Fatal(err)
	}
	requireAction(t, e.Decide(shell("git log --oneline")), allow)
	requireAction(t, e.Decide(shell("git status")), ask)

	// The spec's tool:regex form, stored in the role's project file.
	r, err := permission.ParseRule("shell:^git status$", allow, permission.ScopeProject)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.AddRule(r); err != nil {
		t.Fatal(err)
	}
	u, err := permission.ParseRule("shell(make *)", allow, permission.ScopeUser)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.AddRule(u); err != nil {
		t.Fatal(err)
	}
	requireAction(t, e.Decide(shell("git status")), allow)
	requireAction(t, e.Decide(shell("git status --short")), ask)
	b, err := os.ReadFile(builder)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# the builder's own file", "model: fast", "read_file: allow", `"git log*": allow`, `"re:^git status$": allow`} {
		if !strings.Contains(string(b), want) {
			t.Fatalf("the role file lacks %q:\n%s", want, b)
		}
	}
	if b, err := os.ReadFile(userBuilder); err != nil || !strings.Contains(string(b), `"make *": allow`) {
		t.Fatalf("user role file: %q, %v", b, err)
	}

	// A new engine reads both files back.
	e2, err := permission.New(permission.Options{Workspace: ws, ProjectRoleFile: builder, UserRoleFile: userBuilder})
	if err != nil {
		t.Fatal(err)
	}
	requireAction(t, e2.Decide(shell("git status")), allow)
	requireAction(t, e2.Decide(shell("make all")), allow)

	// Another role has rules of its own.
	if err := e2.SetRoleFiles(planner, ""); err != nil {
		t.Fatal(err)
	}
	requireAction(t, e2.Decide(shell("git status")), ask)
	requireAction(t, e2.Decide(shell("make all")), ask)

	// A broken role file is refused and the rules stay as they were.
	if err := os.WriteFile(planner, []byte("permission:\n  shell: [1, 2]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := e2.SetRoleFiles(builder, userBuilder); err != nil {
		t.Fatal(err)
	}
	if err := e2.SetRoleFiles(planner, ""); err == nil {
		t.Fatal("a broken role file was accepted")
	}
	requireAction(t, e2.Decide(shell("git status")), allow)
}
