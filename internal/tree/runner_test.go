package tree_test

import (
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/tree"
)

// TestNodeRunnerDefaultAndChoices: config node_runner makes claude-code
// the runner of a child whose spawn names none (here its claude_path does
// not exist, so the child fails saying so); an unknown runner is refused
// at spawn naming the choices; runner arbor runs the child in arbor's loop.
func TestNodeRunnerDefaultAndChoices(t *testing.T) {
	t.Parallel()
	b := setup(t, script{
		1: {
			calls(call("spawn", map[string]any{"goal": "external", "prompt": "p"}),
				call("spawn", map[string]any{"goal": "bogus", "prompt": "p", "runner": "cursor"}),
				call("spawn", map[string]any{"goal": "own", "prompt": "p", "runner": "arbor"})),
			complete("draft"),
			complete("final"),
		},
		3: {complete("own done")},
	}, setupOpts{config: "node_runner: claude-code\nclaude_path: /nonexistent/claude\n"})
	if r := b.drive(t); r.Status != store.RunComplete || r.Result != "final" {
		t.Fatalf("run %+v", r)
	}
	ext := b.node(t, 2)
	if ext.Runner != "claude-code" || ext.State != tree.StateFailed || !strings.Contains(ext.Error, "/nonexistent/claude") {
		t.Fatalf("#2 %+v", ext)
	}
	own := b.node(t, 3)
	if own.Runner != "" || own.State != tree.StateComplete || own.Result != "own done" {
		t.Fatalf("#3 %+v", own)
	}
	if res := b.lastToolResults(t, 1, 1); !strings.Contains(res, `field "runner" must be one of "arbor", "claude-code"`) {
		t.Fatalf("the root's spawn results:\n%s", res)
	}
}
