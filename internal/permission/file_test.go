package permission_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/permission"
)

func TestRulePersistence(t *testing.T) {
	t.Parallel()
	t.Run("scopes saved and reloaded by a new engine", func(t *testing.T) {
		t.Parallel()
		b := setup(t, permission.ModeDefault)
		session := b.add(t, "shell(ls *)", allow, permission.ScopeSession)
		project := b.add(t, "shell(git *)", allow, permission.ScopeProject)
		user := b.add(t, "shell(rm *)", deny, permission.ScopeUser)
		if got := b.engine.Rules(); !slices.Equal(got, []permission.Rule{session, project, user}) {
			t.Fatalf("Rules() = %+v", got)
		}
		e := b.open(t, permission.ModeDefault)
		if got := e.Rules(); !slices.Equal(got, []permission.Rule{project, user}) {
			t.Fatalf("reloaded rules = %+v, want project and user rules only", got)
		}
		requireAction(t, e.Decide(shell("git log")), allow)
		requireAction(t, e.Decide(shell("rm x")), deny)
		requireAction(t, e.Decide(shell("ls")), ask)
	})
	t.Run("file modes", func(t *testing.T) {
		t.Parallel()
		b := setup(t, permission.ModeDefault)
		b.add(t, "shell(git *)", allow, permission.ScopeProject)
		b.add(t, "shell(git *)", allow, permission.ScopeUser)
		for path, want := range map[string]os.FileMode{
			b.projectFile: 0o644, b.userFile: 0o600, filepath.Dir(b.userFile): 0o700 | os.ModeDir,
		} {
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode() != want {
				t.Fatalf("%s mode = %v, want %v", path, fi.Mode(), want)
			}
		}
	})
	t.Run("file shape", func(t *testing.T) {
		t.Parallel()
		b := setup(t, permission.ModeDefault)
		b.add(t, "shell(git *)", allow, permission.ScopeProject)
		b.add(t, "write_file(/tmp/**)", allow, permission.ScopeProject)
		b.add(t, "shell(git *)", allow, permission.ScopeProject) // a duplicate is not written twice
		data, err := os.ReadFile(b.projectFile)
		if err != nil {
			t.Fatal(err)
		}
		want := `rules:
  - rule: "shell(git *)"
    action: allow
  - rule: "write_file(/tmp/**)"
    action: allow
`
		if !strings.HasSuffix(string(data), want) || !strings.HasPrefix(string(data), "# arbor permission rules") {
			t.Fatalf("file content:\n%s\nwant a header comment and then:\n%s", data, want)
		}
	})
	t.Run("appending keeps hand-written entries and comments", func(t *testing.T) {
		t.Parallel()
		b := setup(t, permission.ModeDefault)
		b.write(t, "ws/.arbor/permissions.yaml", `# team rules
rules:
  # never push from an agent
  - {rule: "shell(git push*)", action: deny}
`)
		e := b.open(t, permission.ModeDefault)
		r, _ := permission.ParseRule("shell(make *)", allow, permission.ScopeProject)
		if err := e.AddRule(r); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(b.projectFile)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []string{"# team rules", "# never push from an agent", "shell(git push*)", "shell(make *)"} {
			if !strings.Contains(string(data), s) {
				t.Fatalf("file lost %q:\n%s", s, data)
			}
		}
		if got := len(b.open(t, permission.ModeDefault).Rules()); got != 2 {
			t.Fatalf("%d rules after append, want 2", got)
		}
	})
	t.Run("remove", func(t *testing.T) {
		t.Parallel()
		b := setup(t, permission.ModeDefault)
		keep := b.add(t, "shell(go *)", allow, permission.ScopeUser)
		gone := b.add(t, "shell(git *)", allow, permission.ScopeUser)
		sess := b.add(t, "shell(ls)", allow, permission.ScopeSession)
		for _, r := range []permission.Rule{gone, sess} {
			if err := b.engine.RemoveRule(r); err != nil {
				t.Fatal(err)
			}
		}
		if got := b.engine.Rules(); !slices.Equal(got, []permission.Rule{keep}) {
			t.Fatalf("rules after remove = %+v", got)
		}
		if got := b.open(t, permission.ModeDefault).Rules(); !slices.Equal(got, []permission.Rule{keep}) {
			t.Fatalf("reloaded rules after remove = %+v", got)
		}
		for _, r := range []permission.Rule{gone, sess} {
			if err := b.engine.RemoveRule(r); !errors.Is(err, permission.ErrRuleNotFound) {
				t.Fatalf("second remove err = %v, want ErrRuleNotFound", err)
			}
		}
	})
	t.Run("unpersisted scope", func(t *testing.T) {
		t.Parallel()
		b := setup(t, permission.ModeDefault)
		e, err := permission.New(permission.Options{Workspace: b.ws})
		if err != nil {
			t.Fatal(err)
		}
		r, _ := permission.ParseRule("shell", allow, permission.ScopeUser)
		if err := e.AddRule(r); !errors.Is(err, permission.ErrNotPersisted) {
			t.Fatalf("err = %v, want ErrNotPersisted", err)
		}
		if _, err := os.Stat(b.userFile); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("user file written without being configured: %v", err)
		}
	})
	t.Run("invalid rules are refused", func(t *testing.T) {
		t.Parallel()
		b := setup(t, permission.ModeDefault)
		for _, r := range []permission.Rule{
			{Tool: "shell", Action: "maybe", Scope: permission.ScopeSession},
			{Tool: "shell", Action: allow, Scope: "galaxy"},
			{Tool: "", Action: allow, Scope: permission.ScopeSession},
		} {
			if err := b.engine.AddRule(r); !errors.Is(err, permission.ErrInvalidRule) {
				t.Fatalf("AddRule(%+v) err = %v, want ErrInvalidRule", r, err)
			}
		}
	})
}

func TestRuleFileErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, content, mention string
	}{
		{"not yaml", "rules: [unclosed", "permissions.yaml"},
		{"unknown key", "rulez: []", "rulez"},
		{"bad action", `rules: [{rule: "shell", action: perhaps}]`, "rule 1"},
		{"bad rule", `rules: [{rule: "shell(", action: allow}]`, "rule 1"},
		{"not a list", `rules: {rule: shell}`, "permissions.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, permission.ModeDefault)
			path := b.write(t, "ws/.arbor/permissions.yaml", tt.content)
			_, err := permission.New(permission.Options{Workspace: b.ws, ProjectFile: path})
			if !errors.Is(err, permission.ErrRuleFile) {
				t.Fatalf("err = %v, want ErrRuleFile", err)
			}
			if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tt.mention) {
				t.Fatalf("error %q does not name %s and %s", err, path, tt.mention)
			}
		})
	}
	t.Run("empty file holds no rules", func(t *testing.T) {
		t.Parallel()
		b := setup(t, permission.ModeDefault)
		path := b.write(t, "ws/.arbor/permissions.yaml", "# nothing yet\n")
		e, err := permission.New(permission.Options{Workspace: b.ws, ProjectFile: path})
		if err != nil || len(e.Rules()) != 0 {
			t.Fatalf("New on an empty file = %v rules, %v", e, err)
		}
		r, _ := permission.ParseRule("shell(ls *)", allow, permission.ScopeProject)
		if err := e.AddRule(r); err != nil {
			t.Fatal(err)
		}
		if data, _ := os.ReadFile(path); !strings.Contains(string(data), "shell(ls *)") {
			t.Fatalf("rule not appended:\n%s", data)
		}
	})
	t.Run("missing workspace", func(t *testing.T) {
		t.Parallel()
		_, err := permission.New(permission.Options{Workspace: filepath.Join(t.TempDir(), "nope")})
		if err == nil {
			t.Fatal("New accepted a missing workspace")
		}
	})
}
