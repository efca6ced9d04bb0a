package permission_test

import (
	"testing"

	"github.com/arbor-run/arbor/internal/permission"
)

// TestRegexRules: the "tool:regex" form of the envelope protocol's spec
// reads as "tool(re:regex)" and matches commands and paths by regular
// expression; it persists in a rule file and reads back the same.
func TestRegexRules(t *testing.T) {
	t.Parallel()
	t.Run("parse", func(t *testing.T) {
		t.Parallel()
		r, err := permission.ParseRule("shell:^git status$", allow, permission.ScopeSession)
		if err != nil || r.Tool != "shell" || r.Pattern != "re:^git status$" || r.String() != "shell(re:^git status$)" {
			t.Fatalf("rule %+v, %v", r, err)
		}
		if r, err := permission.ParseRule("mcp:server", allow, permission.ScopeSession); err != nil || r.Tool != "mcp:server" || r.Pattern != "" {
			t.Fatalf("a tool name with a colon: %+v, %v", r, err)
		}
		if _, err := permission.ParseRule("shell:^git (", allow, permission.ScopeSession); err == nil {
			t.Fatal("an invalid regex was accepted")
		}
	})
	t.Run("commands", func(t *testing.T) {
		t.Parallel()
		b := setup(t, permission.ModeDefault)
		b.add(t, "shell:^git status$", allow, permission.ScopeSession)
		requireAction(t, b.engine.Decide(shell("git status")), allow)
		requireAction(t, b.engine.Decide(shell("git status --short")), ask)
		requireAction(t, b.engine.Decide(shell("git status && rm -rf x")), ask)
	})
	t.Run("paths", func(t *testing.T) {
		t.Parallel()
		b := setup(t, permission.ModeDefault)
		b.add(t, `write_file:^src/[a-z]+\.go$`, allow, permission.ScopeSession)
		requireAction(t, b.engine.Decide(write("src/a.go")), allow)
		requireAction(t, b.engine.Decide(write(b.ws+"/src/a.go")), allow)
		requireAction(t, b.engine.Decide(write("src/x/a.go")), ask)
	})
	t.Run("persisted", func(t *testing.T) {
		t.Parallel()
		b := setup(t, permission.ModeDefault)
		b.add(t, "shell:^make( test)?$", allow, permission.ScopeProject)
		requireAction(t, b.open(t, permission.ModeDefault).Decide(shell("make test")), allow)
	})
}
