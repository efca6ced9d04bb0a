package tree_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/tree"
)

// TestPersonControl pauses, resumes and stops nodes as a person does from
// the web view: any node of the tree, while the engine drives the run.
func TestPersonControl(t *testing.T) {
	t.Parallel()
	b := setup(t, script{
		1: {
			calls(call("spawn", map[string]any{"goal": "worker", "prompt": "p"}),
				call("spawn", map[string]any{"goal": "other", "prompt": "p"})),
			calls(call("ask_user", map[string]any{"question": "root waits"})),
			complete("draft"),
			complete("final"),
		},
		2: {calls(call("ask_user", map[string]any{"question": "worker waits"})), complete("worker done")},
		3: {calls(call("ask_user", map[string]any{"question": "other waits"}))},
	})
	if _, err := b.engine.Control(b.run.ID, 1, tree.OpStop); !errors.Is(err, tree.ErrNotDriven) {
		t.Fatalf("control of a run nobody drives: %v", err)
	}
	qs := b.questions()
	done := b.driveAsync()
	got := awaitQuestions(t, qs, "root waits", "worker waits", "other waits")
	if !b.engine.Driving(b.run.ID) {
		t.Fatal("Driving is false during the drive")
	}
	if s, err := b.engine.Control(b.run.ID, 2, tree.OpPause); err != nil || s != tree.StatePaused {
		t.Fatalf("pause #2: %s %v", s, err)
	}
	if _, err := b.engine.Control(b.run.ID, 2, tree.OpPause); !errors.Is(err, tree.ErrBadState) {
		t.Fatalf("pausing twice: %v", err)
	}
	if _, err := b.engine.Control(b.run.ID, 42, tree.OpStop); !errors.Is(err, tree.ErrUnknownNode) {
		t.Fatalf("unknown node: %v", err)
	}
	if s, err := b.engine.Control(b.run.ID, 2, tree.OpResume); err != nil || s != tree.StatePending && s != tree.StateActive {
		t.Fatalf("resume #2: %s %v", s, err)
	}
	if s, err := b.engine.Control(b.run.ID, 3, tree.OpStop); err != nil || s != tree.StateCancelled {
		t.Fatalf("stop #3: %s %v", s, err)
	}
	if err := b.app.Broker.Resolve(got["root waits"].ID, answer("go on")); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.Status != "complete" || r.Result != "final" {
		t.Fatalf("run %+v", r)
	}
	wantState(t, b.node(t, 2), tree.StateComplete)
	wantState(t, b.node(t, 3), tree.StateCancelled)
	if got := strings.Join(b.transitions(2), ","); !strings.HasPrefix(got, "pending,active,paused,pending,active") {
		t.Fatalf("#2 transitions %s", got)
	}
}
