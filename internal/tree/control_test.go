package tree_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/tool"
	"github.com/arbor-run/arbor/internal/tree"
)

// questions delivers every interaction the run's agents open.
func (b *bundle) questions() <-chan agent.Interaction {
	ch := make(chan agent.Interaction, 32)
	b.app.Bus.Subscribe(func(ev agent.Event) {
		if r, ok := ev.(*agent.InteractionRequested); ok {
			ch <- r.Interaction
		}
	})
	return ch
}

// awaitQuestions reads interactions until one with each given question
// text is pending, and returns them by text.
func awaitQuestions(t *testing.T, ch <-chan agent.Interaction, texts ...string) map[string]agent.Interaction {
	t.Helper()
	got := map[string]agent.Interaction{}
	for len(got) < len(texts) {
		in := <-ch
		if in.Question != nil {
			got[in.Question.Question] = in
		}
	}
	for _, want := range texts {
		if _, ok := got[want]; !ok {
			t.Fatalf("no question %q among %v", want, got)
		}
	}
	return got
}

// reached is closed when node id first enters state.
func (b *bundle) reached(id int64, state tree.NodeState) <-chan struct{} {
	ch := make(chan struct{})
	var once bool
	b.app.Bus.Subscribe(func(ev agent.Event) {
		if c, ok := ev.(*tree.NodeChanged); ok && c.Node.ID == id && c.Node.State == state && !once {
			once = true
			close(ch)
		}
	})
	return ch
}

func (b *bundle) driveAsync() <-chan store.Run {
	done := make(chan store.Run, 1)
	go func() {
		r, _ := b.engine.Drive(b.ctx, b.run.ID)
		done <- r
	}()
	return done
}

func answer(text string) agent.Response {
	return agent.Response{Answer: &tool.Answer{Text: text}}
}

func TestStopCancelsRunningSubtree(t *testing.T) {
	t.Parallel()
	b := setup(t, script{
		1: {
			calls(call("spawn", map[string]any{"goal": "worker", "prompt": "p"}),
				call("spawn", map[string]any{"goal": "later", "prompt": "p", "blocked_by": []any{"#2"}})),
			calls(call("ask_user", map[string]any{"question": "root waits"})),
			calls(call("stop", map[string]any{"id": "#2"})),
			complete("draft"),
			complete("final"),
		},
		2: {calls(call("ask_user", map[string]any{"question": "worker waits"}))},
	})
	qs := b.questions()
	done := b.driveAsync()
	got := awaitQuestions(t, qs, "root waits", "worker waits")
	if err := b.app.Broker.Resolve(got["root waits"].ID, answer("go on")); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.Status != store.RunComplete || r.Result != "final" {
		t.Fatalf("run %+v", r)
	}
	n2 := b.node(t, 2)
	wantState(t, n2, tree.StateCancelled)
	if got := strings.Join(b.transitions(2), ","); got != "pending,active,cancelled" {
		t.Fatalf("#2 transitions %s (a late exit must not overwrite)", got)
	}
	if err := b.app.Broker.Resolve(got["worker waits"].ID, answer("late")); !errors.Is(err, agent.ErrUnknownInteraction) {
		t.Fatalf("the stopped worker's question should be withdrawn: %v", err)
	}
	n3 := b.node(t, 3)
	wantState(t, n3, tree.StateFailed)
	if !strings.Contains(n3.Error, "#2 cancelled") {
		t.Fatalf("#3 error %q", n3.Error)
	}
	if got := b.lastToolResults(t, 1, 3); !strings.Contains(got, "#2 is now cancelled") {
		t.Fatalf("stop result %q", got)
	}
}

func TestPauseModifyResume(t *testing.T) {
	t.Parallel()
	b := setup(t, script{
		1: {
			calls(call("spawn", map[string]any{"goal": "worker", "prompt": "p"}),
				call("spawn", map[string]any{"goal": "old goal", "prompt": "p", "blocked_by": []any{"#2"}})),
			calls(call("ask_user", map[string]any{"question": "root waits"})),
			calls(call("pause", map[string]any{"id": "#2"})),
			calls(call("modify", map[string]any{"id": "#3", "goal": "new goal"}),
				call("modify", map[string]any{"id": "#2", "prompt": "new instructions"})),
			calls(call("resume", map[string]any{"id": "#2"})),
			complete("draft"),
			complete("final"),
		},
		2: {calls(call("ask_user", map[string]any{"question": "worker waits"})), complete("worker done")},
		3: {complete("three done")},
	})
	qs := b.questions()
	done := b.driveAsync()
	got := awaitQuestions(t, qs, "root waits", "worker waits")
	if err := b.app.Broker.Resolve(got["root waits"].ID, answer("go on")); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.Status != store.RunComplete || r.Result != "final" {
		t.Fatalf("run %+v", r)
	}
	if got := strings.Join(b.transitions(2), ","); got != "pending,active,paused,pending,active,complete" {
		t.Fatalf("#2 transitions %s", got)
	}
	resumed := b.requests(2)[1]
	if !strings.Contains(resumed.LastUserText(), "Your task was modified") || !strings.Contains(resumed.LastUserText(), "new instructions") {
		t.Fatalf("#2 after resume got %q", resumed.LastUserText())
	}
	if !strings.Contains(string(resumed.Body), "cancelled") {
		t.Fatalf("#2's interrupted tool call should be reported as cancelled")
	}
	if first := b.requests(3)[0].Messages[0].Text(); !strings.Contains(first, "Your goal: new goal") {
		t.Fatalf("#3 prompt %q", first)
	}
	for i, want := range map[int]string{3: "#2 is now paused", 4: "#3 is now pending", 5: "#2 is now active"} {
		if got := b.lastToolResults(t, 1, i); !strings.Contains(got, want) {
			t.Fatalf("root request %d: %q lacks %q", i, got, want)
		}
	}
}

func TestAuthorityRefusals(t *testing.T) {
	t.Parallel()
	b := setup(t, script{
		1: {
			calls(call("spawn", map[string]any{"goal": "a", "prompt": "p"}), call("spawn", map[string]any{"goal": "b", "prompt": "p"})),
			complete("draft"),
			complete("final"),
		},
		2: {
			calls(
				call("stop", map[string]any{"id": "#3"}),
				call("pause", map[string]any{"id": "#1"}),
				call("modify", map[string]any{"id": "3", "goal": "x"}),
				call("resume", map[string]any{"id": "#2"}),
				call("spawn", map[string]any{"goal": "c", "prompt": "p", "blocked_by": []any{"#1"}}),
				call("spawn", map[string]any{"goal": "d", "prompt": "p", "blocked_by": []any{"#99"}}),
				call("stop", map[string]any{"id": "#42"}),
				call("read_node", map[string]any{"id": "nope"}),
			),
			complete("a done"),
		},
		3: {complete("b done")},
	})
	r := b.drive(t)
	if r.Status != store.RunComplete {
		t.Fatalf("run %+v", r)
	}
	res := b.lastToolResults(t, 2, 1)
	for _, want := range []string{
		"#3 is not in your subtree", "#1 is not in your subtree", "#2 is not in your subtree",
		"#1 is an ancestor of the new node", "#99 does not exist", "#42 does not exist", `node id must look like "#3"`,
	} {
		if !strings.Contains(res, want) {
			t.Fatalf("refusals lack %q:\n%s", want, res)
		}
	}
	wantState(t, b.node(t, 3), tree.StateComplete)
}

func TestAskAnsweredThroughBroker(t *testing.T) {
	t.Parallel()
	b := setup(t, script{
		1: {
			calls(call("ask", map[string]any{"question": "How many users?", "options": []any{"<1K", "1K-10K"}, "default": "<1K"}),
				call("spawn", map[string]any{"goal": "plan capacity", "prompt": "p", "blocked_by": []any{"#2"}})),
			complete("draft"),
			complete("final"),
		},
		3: {complete("planned")},
	})
	qs := b.questions()
	done := b.driveAsync()
	in := awaitQuestions(t, qs, "How many users?")["How many users?"]
	if in.Question.AskNode != 2 || in.Question.CallID != "ask:#2" || in.Question.Default != "<1K" || len(in.Question.Options) != 2 {
		t.Fatalf("question %+v", in.Question)
	}
	if err := b.app.Broker.Resolve(in.ID, answer("1K-10K")); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r.Status != store.RunComplete {
		t.Fatalf("run %+v", r)
	}
	if n := b.node(t, 2); n.Result != "1K-10K" || n.Kind != tree.KindAsk {
		t.Fatalf("ask node %+v", n)
	}
	if first := b.requests(3)[0].Messages[0].Text(); !strings.Contains(first, "1K-10K") {
		t.Fatalf("#3 should get the answer: %q", first)
	}
}

func TestAskDeclinedTakesDefault(t *testing.T) {
	t.Parallel()
	b := setup(t, script{
		1: {calls(call("ask", map[string]any{"question": "Size?", "default": "small"})), complete("draft"), complete("final")},
	})
	qs := b.questions()
	done := b.driveAsync()
	in := awaitQuestions(t, qs, "Size?")["Size?"]
	if err := b.app.Broker.Resolve(in.ID, agent.Response{Answer: &tool.Answer{Declined: true}}); err != nil {
		t.Fatal(err)
	}
	<-done
	if n := b.node(t, 2); n.Result != "small" {
		t.Fatalf("declined ask should take the default, got %q", n.Result)
	}
}

// TestAskAnsweredOffline interrupts a run while it waits on an ask,
// answers the ask in the store as `arbor answer` does when no process
// drives the run, and resumes it.
func TestAskAnsweredOffline(t *testing.T) {
	t.Parallel()
	b := setup(t, script{
		1: {
			calls(call("ask", map[string]any{"question": "Region?"}), call("spawn", map[string]any{"goal": "deploy", "prompt": "p", "blocked_by": []any{"#2"}})),
			complete("draft"),
			complete("final"),
		},
		3: {complete("deployed")},
	})
	qs := b.questions()
	rootWaits := b.reached(1, tree.StateWaiting)
	ctx, cancel := context.WithCancel(b.ctx)
	done := make(chan store.Run, 1)
	go func() {
		r, _ := b.engine.Drive(ctx, b.run.ID)
		done <- r
	}()
	awaitQuestions(t, qs, "Region?")
	<-rootWaits
	cancel()
	if r := <-done; r.Status != store.RunInterrupted {
		t.Fatalf("run %+v", r)
	}
	// The refusal says why in its own words, without ErrBadState's
	// generic text after it.
	if err := b.engine.Answer(b.ctx, b.run.ID, 3, "x"); !errors.Is(err, tree.ErrBadState) || err.Error() != "#3 is a task node, not an ask" {
		t.Fatalf("answering a task node: %v", err)
	}
	if err := b.engine.Answer(b.ctx, b.run.ID, 2, "eu-west"); err != nil {
		t.Fatal(err)
	}
	r := b.drive(t)
	if r.Status != store.RunComplete || r.Result != "final" {
		t.Fatalf("resumed run %+v", r)
	}
	if first := b.requests(3)[0].Messages[0].Text(); !strings.Contains(first, "eu-west") {
		t.Fatalf("#3 prompt %q", first)
	}
	// A model call cut by the interrupt is made again; a turn is not.
	seen := map[int]bool{}
	for _, req := range b.requests(1) {
		seen[assistantTurns(req)] = true
	}
	if len(seen) != 3 {
		t.Fatalf("root turns %v, want 0, 1 and 2 once each", seen)
	}
	if got := b.transitions(1); strings.Count(strings.Join(got, ","), "complete") != 1 {
		t.Fatalf("root transitions %v", got)
	}
}

// TestCycleThroughParentIsRefused: #3 is blocked_by #2, so a child of #2
// blocked_by #3 would close a cycle through the implicit "a parent waits
// for its children" (#2 → child → #3 → #2): spawn refuses it with the
// cycle, instead of the run ending stuck.
func TestCycleThroughParentIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, script{
		1: {
			calls(call("spawn", map[string]any{"goal": "a", "prompt": "p"}), call("spawn", map[string]any{"goal": "b", "prompt": "p", "blocked_by": []any{"#2"}})),
			complete("draft"),
			complete("final"),
		},
		2: {
			calls(
				call("spawn", map[string]any{"goal": "a1", "prompt": "p", "blocked_by": []any{"#3"}}),
				call("ask", map[string]any{"question": "q?", "blocked_by": []any{"#3"}}),
			),
			complete("a done"),
		},
		3: {complete("b done")},
	}, setupOpts{maxParallel: 1}) // #2 starts only once the root made both children
	r := b.drive(t)
	if r.Status != store.RunComplete || r.Result != "final" {
		t.Fatalf("run %+v", r)
	}
	res := b.lastToolResults(t, 2, 1)
	want := "blocked_by: #3 would close a cycle #3 → #2 → the new node → #3"
	if strings.Count(res, want) != 2 {
		t.Fatalf("spawn and ask should both be refused with %q:\n%s", want, res)
	}
	if nodes, _ := b.app.Store.Nodes(b.ctx, b.run.ID); len(nodes) != 3 {
		t.Fatalf("%d nodes, want 3: the refused ones must not exist", len(nodes))
	}
}

// TestReturnsFileIsConfinedToTheWorkspace: a returns: file result must
// name a file inside the workspace, like the file tools: an absolute path
// outside it and a symlink leading out are refused as tool errors.
func TestReturnsFileIsConfinedToTheWorkspace(t *testing.T) {
	t.Parallel()
	b := setup(t, script{
		1: {calls(call("spawn", map[string]any{"goal": "write", "prompt": "p", "returns": "file"})), complete("draft"), complete("final")},
		2: {complete("/etc/passwd"), complete("link"), complete("../outside.txt"), complete("out.txt")},
	})
	ws := b.run.Workspace
	if err := os.WriteFile(filepath.Join(ws, "out.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "..", "outside.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	if r := b.drive(t); r.Status != store.RunComplete {
		t.Fatalf("run %+v", r)
	}
	for i, bad := range []string{"/etc/passwd", "link", "../outside.txt"} {
		if got := b.lastToolResults(t, 2, i+1); !strings.Contains(got, "is not in the workspace") {
			t.Fatalf("returns %q: %q", bad, got)
		}
	}
	if n := b.node(t, 2); n.Result != "out.txt" {
		t.Fatalf("#2 result %q", n.Result)
	}
}
