package permission_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/permission"
)

// TestRulesNamingNoTool: a rule of a rule file whose tool is none of
// Options.Tools (a typo: "shel") is reported by Problems, naming the file,
// the entry and the likely tool, and is kept; rules naming a tool of the
// list (tolerantly) or an MCP tool are not reported. Before, such a deny
// rule was taken without a word and matched nothing.
func TestRulesNamingNoTool(t *testing.T) {
	t.Parallel()
	tools := []string{"shell", "read_file", "write_file"}
	open := func(t *testing.T, b *bundle, tools []string) *permission.Engine {
		t.Helper()
		e, err := permission.New(permission.Options{Mode: permission.ModeTrust, Workspace: b.ws,
			ProjectFile: b.projectFile, UserFile: b.userFile, Tools: func() []string { return tools }})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	b := setup(t, permission.ModeDefault)
	b.write(t, "ws/.arbor/permissions.yaml", `rules:
  - {rule: "Read-File(src/**)", action: allow}
  - {rule: "shel(touch *)", action: deny}
  - {rule: "mcp__github__delete_repo", action: deny}
  - {rule: "mcp__github__*", action: ask}
`)
	b.write(t, "config/arbor/permissions.yaml", `rules: [{rule: "frobnicate", action: allow}]`)

	t.Run("reported with file, entry and a likely fix", func(t *testing.T) {
		t.Parallel()
		e := open(t, b, tools)
		ps := e.Problems()
		if len(ps) != 2 {
			t.Fatalf("problems %q, want the project's rule 2 and the user's rule 1", ps)
		}
		want := b.projectFile + `: rule 2 "shel(touch *)" (deny) names no tool arbor has (did you mean shell?); it is kept, and matches no call`
		if !errors.Is(ps[0], permission.ErrUnknownTool) || ps[0].Error() != want {
			t.Fatalf("problem %q\nwant     %q", ps[0], want)
		}
		if got := ps[1].Error(); !strings.HasPrefix(got, b.userFile+`: rule 1 "frobnicate" (allow) names no tool arbor has;`) {
			t.Fatalf("user file's problem %q: want it named, without a guess", got)
		}
		if len(e.Rules()) != 5 {
			t.Fatalf("rules %v: want every rule kept", e.Rules())
		}
		requireAction(t, e.Decide(shell("touch x")), allow) // kept, and still matches no call
	})
	t.Run("no list, no check", func(t *testing.T) {
		t.Parallel()
		if ps := open(t, b, nil).Problems(); len(ps) != 0 {
			t.Fatalf("problems %q without Options.Tools", ps)
		}
	})
}

func TestNearest(t *testing.T) {
	t.Parallel()
	names := []string{"shell", "read_file", "write_file", "Bash", "permissions"}
	for in, want := range map[string]string{
		"shel": "shell", "Shell": "shell", "raed_file": "read_file", "write-files": "write_file",
		"Bahs": "Bash", "permission": "permissions", "sh": "", "frobnicate": "", "file": "",
	} {
		if got := permission.Nearest(in, names); got != want {
			t.Errorf("Nearest(%q) = %q, want %q", in, got, want)
		}
	}
}
