package project_test

import (
	"testing"

	"github.com/arbor-run/arbor/internal/project"
)

// TestCommandArgumentsAsClaudeCode: a command's placeholders are filled
// as Claude Code (2.1) fills them: $ARGUMENTS[N] and $N count from 0,
// words split as a shell splits them, a placeholder with no argument is
// left as written, \$ is a plain "$", and "ARGUMENTS: …" is appended only
// to a body that uses no placeholder.
func TestCommandArgumentsAsClaudeCode(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	tree(t, ws, map[string]string{
		".claude/commands/fix.md":   "Fix issue #$ARGUMENTS[0] in $ARGUMENTS[1]; then $0 and $1, not $2 or $1st.\nCost: \\$0. All: $ARGUMENTS\n",
		".claude/commands/plain.md": "Only $5 here\n",
	})
	k := project.Load(project.Options{Workspace: ws})
	for _, c := range []struct{ cmd, args, want string }{
		{"fix", `123 "src/a b.go"`, "Fix issue #123 in src/a b.go; then 123 and src/a b.go, not $2 or $1st.\nCost: $0. All: 123 \"src/a b.go\""},
		{"plain", "a b", "Only $5 here\n\nARGUMENTS: a b"},
		{"plain", "", "Only $5 here"},
	} {
		cmd, ok := k.Command(c.cmd)
		if !ok {
			t.Fatalf("no command %s: %v", c.cmd, k.Problems)
		}
		if got := cmd.Expand(c.args); got != c.want {
			t.Errorf("/%s %s:\n got %q\nwant %q", c.cmd, c.args, got, c.want)
		}
	}
}
