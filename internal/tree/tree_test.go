package tree_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/tree"
	"github.com/arbor-run/arbor/internal/tree/treetest"
)

func TestSingleNodeWorksAlone(t *testing.T) {
	t.Parallel()
	b := setup(t, script{1: {{Text: "The answer is 42."}}})
	r := b.drive(t)
	if r.Status != store.RunComplete || r.Result != "The answer is 42." {
		t.Fatalf("run %+v", r)
	}
	if got := strings.Join(b.transitions(1), ","); got != "active,complete" {
		t.Fatalf("root transitions %s", got)
	}
	req := b.requests(1)[0]
	if !strings.Contains(req.System, "coordination tree") || !strings.Contains(req.Messages[0].Text(), "the goal") {
		t.Fatalf("root request: system %q first %q", req.System, req.Messages[0].Text())
	}
	for _, name := range []string{"spawn", "fork", "ask", "complete", "read_tree", "read_node", "stop", "pause", "resume", "modify", "shell"} {
		found := false
		for _, tl := range req.Tools {
			found = found || tl.Name == name
		}
		if !found {
			t.Fatalf("tool %s not offered", name)
		}
	}
}

func TestChainAndSynthesis(t *testing.T) {
	t.Parallel()
	b := setup(t, script{
		1: {
			calls(call("spawn", map[string]any{"goal": "Audit the API", "prompt": "Count endpoints."}),
				call("spawn", map[string]any{"goal": "Recommend", "prompt": "Use the audit.", "blocked_by": []any{"#2"}})),
			complete("draft before children"),
			complete("FINAL: migrate"),
		},
		2: {complete("47 endpoints")},
		3: {{Text: "Recommendation: migrate slowly."}}, // ends without complete
	})
	r := b.drive(t)
	if r.Status != store.RunComplete || r.Result != "FINAL: migrate" {
		t.Fatalf("run %+v", r)
	}
	wantState(t, b.node(t, 2), tree.StateComplete)
	n3 := b.node(t, 3)
	if n3.Result != "Recommendation: migrate slowly." || n3.ParentID != 1 {
		t.Fatalf("#3 %+v", n3)
	}
	// #3 started only after #2, with #2's result in its first request.
	first3 := b.requests(3)[0].Messages[0].Text()
	if !strings.Contains(first3, "47 endpoints") || !strings.Contains(first3, "Use the audit.") || !strings.Contains(first3, "#1 the goal") {
		t.Fatalf("#3 first prompt:\n%s", first3)
	}
	// The spawn call returned ids.
	if got := b.lastToolResults(t, 1, 1); !strings.Contains(got, `"#2"`) || !strings.Contains(got, `"#3"`) {
		t.Fatalf("spawn results %q", got)
	}
	// Root: waiting, then one synthesis that saw both results.
	// The root waits unless its children finish before its own turn ends.
	if got := strings.Join(b.transitions(1), ","); got != "active,waiting,synthesizing,complete" && got != "active,synthesizing,complete" {
		t.Fatalf("root transitions %s", got)
	}
	syn := b.requests(1)[2].LastUserText()
	if !strings.Contains(syn, "All 2 of your child tasks have ended") || !strings.Contains(syn, "47 endpoints") || !strings.Contains(syn, "migrate slowly") {
		t.Fatalf("synthesis message %q", syn)
	}
	if n := len(b.requests(1)); n != 3 {
		t.Fatalf("root made %d model calls, want 3 (synthesis exactly once)", n)
	}
}

func TestFanOutForkAndContextQuery(t *testing.T) {
	t.Parallel()
	spawns := []llmtest.ToolCall{}
	for _, g := range []string{"alpha", "beta", "gamma"} {
		spawns = append(spawns, call("spawn", map[string]any{"goal": "Research " + g, "prompt": "Find facts about " + g}))
	}
	spawns = append(spawns,
		call("fork", map[string]any{"goal": "Compare", "prompt": "Compare all findings.", "blocked_by": []any{"2", 3, "#4"}}),
		call("spawn", map[string]any{"goal": "Summarize", "prompt": "Summarize.", "blocked_by": []any{"#2"}, "context_query": "only the numbers"}))
	b := setup(t, script{
		1: {calls(spawns...), complete("draft"), complete("done")},
		2: {complete("alpha has 1 leg")},
		3: {complete("beta has 2 legs")},
		4: {complete("gamma has 3 legs")},
		5: {calls(call("read_node", map[string]any{"id": "#2"})), complete("alpha < beta < gamma")},
		6: {complete("1")},
	})
	r := b.drive(t)
	if r.Status != store.RunComplete {
		t.Fatalf("run %+v", r)
	}
	fork := b.requests(5)[0].Messages[0].Text()
	for _, want := range []string{"alpha has 1 leg", "beta has 2 legs", "gamma has 3 legs"} {
		if !strings.Contains(fork, want) {
			t.Fatalf("fork context lacks %q:\n%s", want, fork)
		}
	}
	// context_query: one distillation request, and #6 sees only its output.
	var distill []llmtest.Request
	for _, req := range b.srv.Requests() {
		if nodeOf(req) == 0 {
			distill = append(distill, req)
		}
	}
	if len(distill) != 1 || !strings.Contains(distill[0].LastUserText(), "only the numbers") || !strings.Contains(distill[0].LastUserText(), "alpha has 1 leg") {
		t.Fatalf("distillation requests: %d", len(distill))
	}
	six := b.requests(6)[0].Messages[0].Text()
	if !strings.Contains(six, "DISTILLED(") || strings.Contains(six, "alpha has 1 leg") {
		t.Fatalf("#6 should see the distilled context only:\n%s", six)
	}
	if n := b.node(t, 6); n.Context == "" || !strings.Contains(n.Context, "DISTILLED") {
		t.Fatalf("#6 context %q", n.Context)
	}
	// read_node still returns the raw result.
	if got := b.lastToolResults(t, 5, 1); !strings.Contains(got, "alpha has 1 leg") {
		t.Fatalf("read_node %q", got)
	}
	if n := len(b.requests(1)); n != 3 {
		t.Fatalf("root made %d calls, want 3", n)
	}
}

func TestSynthesisSpawnsMoreAndWaitsAgain(t *testing.T) {
	t.Parallel()
	b := setup(t, script{
		1: {
			calls(call("spawn", map[string]any{"goal": "first", "prompt": "p"})),
			complete("draft"),
			calls(call("spawn", map[string]any{"goal": "second", "prompt": "p"})),
			complete("draft 2"),
			complete("both done"),
		},
		2: {complete("one")},
		3: {complete("two")},
	})
	r := b.drive(t)
	if r.Result != "both done" {
		t.Fatalf("run %+v", r)
	}
	// Whether the root waits between the two syntheses depends on how fast
	// #3 is; either way it synthesizes once per set of children.
	if got := strings.Join(b.transitions(1), ","); !strings.HasPrefix(got, "active,") || !strings.HasSuffix(got, ",synthesizing,complete") {
		t.Fatalf("root transitions %s", got)
	}
	if syn := b.requests(1)[2].LastUserText(); !strings.Contains(syn, "All 1 of your child tasks") {
		t.Fatalf("first synthesis %q", syn)
	}
	if n := len(b.requests(1)); n != 5 {
		t.Fatalf("root made %d calls, want 5", n)
	}
	if syn := b.requests(1)[4].LastUserText(); !strings.Contains(syn, "All 2 of your child tasks") || !strings.Contains(syn, "two") {
		t.Fatalf("second synthesis %q", syn)
	}
}

func TestFailurePropagates(t *testing.T) {
	t.Parallel()
	b := setup(t, script{
		1: {
			calls(call("spawn", map[string]any{"goal": "breaks", "prompt": "p"}),
				call("spawn", map[string]any{"goal": "needs it", "prompt": "p", "blocked_by": []any{"#2"}}),
				call("spawn", map[string]any{"goal": "needs that", "prompt": "p", "blocked_by": []any{"#3"}})),
			complete("draft"),
			complete("reported the failure"),
		},
		2: {{Fault: &llmtest.Fault{Kind: llmtest.FaultServer, Status: 400}}},
	})
	r := b.drive(t)
	if r.Status != store.RunComplete || r.Result != "reported the failure" {
		t.Fatalf("run %+v", r)
	}
	wantState(t, b.node(t, 2), tree.StateFailed)
	for _, id := range []int64{3, 4} {
		n := b.node(t, id)
		wantState(t, n, tree.StateFailed)
		if !strings.Contains(n.Error, "dependency #") {
			t.Fatalf("#%d error %q", id, n.Error)
		}
		if len(b.requests(id)) != 0 {
			t.Fatalf("#%d ran", id)
		}
	}
	if syn := b.requests(1)[2].LastUserText(); !strings.Contains(syn, "#2 task (failed)") || !strings.Contains(syn, "#4 task (failed)") {
		t.Fatalf("synthesis should list the failures: %q", syn)
	}
}

// TestBudgetExhausted: a run whose token or dollar budget is spent ends
// budget_exhausted after the call that spent it, and its error names the
// flag of arbor resume that raises that limit.
func TestBudgetExhausted(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		opts setupOpts
		flag string
	}{
		"tokens": {setupOpts{goal: "g", budgetTokens: 1}, "--max-tokens"},
		"dollars": {setupOpts{goal: "g", budgetUSD: 0.000001,
			config: "providers:\n  anthropic:\n    models:\n      claude-test:\n        price: {input: 3, output: 15}\n"}, "--budget"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, script{
				1: {calls(call("spawn", map[string]any{"goal": "a", "prompt": "p"})), complete("draft"), complete("done")},
				2: {complete("child result")},
			}, c.opts)
			r := b.drive(t)
			if r.Status != store.RunBudget || !strings.Contains(r.Error, "budget exhausted") {
				t.Fatalf("run %+v", r)
			}
			if n := len(b.srv.Requests()); n != 1 {
				t.Fatalf("%d model calls after the budget was spent, want 1", n)
			}
			if got := tree.RaiseFlag(r.Error); got != c.flag {
				t.Fatalf("RaiseFlag(%q) = %s, want %s", r.Error, got, c.flag)
			}
		})
	}
}

func TestNodeTimeoutFailsTheNode(t *testing.T) {
	t.Parallel()
	b := setup(t, script{
		1: {calls(call("spawn", map[string]any{"goal": "slow", "prompt": "p"})), complete("draft"), complete("the child timed out")},
		2: {{Text: "never", Fault: &llmtest.Fault{Kind: llmtest.FaultStall}}},
	}, setupOpts{goal: "g", nodeTimeout: 3 * time.Second})
	// The timeout applies to every node: it must be long enough for the
	// root's own turns on a loaded machine, since only #2 is meant to stall.
	r := b.drive(t)
	if r.Status != store.RunComplete || r.Result != "the child timed out" {
		t.Fatalf("run %+v", r)
	}
	n := b.node(t, 2)
	wantState(t, n, tree.StateFailed)
	if !strings.Contains(n.Error, "timed out after 3000ms") {
		t.Fatalf("#2 error %q", n.Error)
	}
}

func TestFailedParentCancelsItsSubtree(t *testing.T) {
	t.Parallel()
	b := setup(t, script{
		1: {calls(call("spawn", map[string]any{"goal": "middle", "prompt": "p"})), complete("draft"), complete("root saw the failure")},
		2: {
			calls(call("spawn", map[string]any{"goal": "leaf", "prompt": "p"})),
			{Fault: &llmtest.Fault{Kind: llmtest.FaultServer, Status: 400}}, // the middle node fails while its leaf waits
		},
		3: {calls(call("ask_user", map[string]any{"question": "leaf waits"}))},
	})
	r := b.drive(t)
	if r.Status != store.RunComplete || r.Result != "root saw the failure" {
		t.Fatalf("run %+v", r)
	}
	wantState(t, b.node(t, 2), tree.StateFailed)
	// The leaf waits on a question nobody answers: only the cascade ends it.
	leaf := b.node(t, 3)
	wantState(t, leaf, tree.StateCancelled)
	if !strings.Contains(leaf.Error, "parent #2 failed") {
		t.Fatalf("leaf error %q", leaf.Error)
	}
}

// TestNodeBudget: a child's own budget bounds its subtree; when it is
// spent the child's next model call is refused, the child fails, and the
// run goes on: the root synthesizes with the failure.
func TestNodeBudget(t *testing.T) {
	t.Parallel()
	costly := func() llmtest.Turn {
		turn := calls(call("read_node", map[string]any{"id": "#2"}))
		turn.Usage = llmtest.Usage{Input: 550, Output: 50}
		return turn
	}
	b := setup(t, script{
		1: {calls(call("spawn", map[string]any{"goal": "capped", "prompt": "p", "max_tokens": 1000})), complete("draft"), complete("root saw the budget")},
		2: {costly(), costly(), complete("never")}, // 600 + 600 tokens: the third call is refused
	})
	r := b.drive(t)
	if r.Status != store.RunComplete || r.Result != "root saw the budget" {
		t.Fatalf("run %+v", r)
	}
	n := b.node(t, 2)
	wantState(t, n, tree.StateFailed)
	if n.Error != "node budget exhausted: #2 and its subtree used 1200 of 1000 tokens" || n.MaxTokens != 1000 {
		t.Fatalf("#2 error %q, max_tokens %d", n.Error, n.MaxTokens)
	}
	if len(b.requests(2)) != 2 {
		t.Fatalf("#2 made %d model calls, want 2", len(b.requests(2)))
	}
	if got := b.lastToolResults(t, 2, 1); !strings.Contains(got, "spent: $0.0000, 600 tokens (with its subtree); max 1000 tokens") {
		t.Fatalf("read_node shows no budget: %q", got)
	}
	if syn := b.requests(1)[2].LastUserText(); !strings.Contains(syn, "#2 task (failed) capped") {
		t.Fatalf("the root's synthesis should report the failure: %q", syn)
	}
}

// TestNodeBudgetSurvivesResume: what a subtree spent before an interrupt
// still counts against its budget after arbor resume.
func TestNodeBudgetSurvivesResume(t *testing.T) {
	t.Parallel()
	costly := calls(call("read_node", map[string]any{"id": "#2"}))
	costly.Usage = llmtest.Usage{Input: 550, Output: 50}
	var resumed atomic.Bool
	s := script{
		1: {calls(call("spawn", map[string]any{"goal": "capped", "prompt": "p", "max_tokens": 1000})), complete("draft"), complete("root saw the budget")},
		2: {costly, costly, complete("never")},
	}
	respond := treetest.Responder(s)
	b := setup(t, nil, setupOpts{respond: func(req llmtest.Request) llmtest.Turn {
		if nodeOf(req) == 2 && assistantTurns(req) == 1 && !resumed.Load() {
			return llmtest.Turn{Fault: &llmtest.Fault{Kind: llmtest.FaultStall}} // interrupted here
		}
		return respond(req)
	}})
	// Interrupt only once the root's draft is stored (it is waiting) and
	// #2's second call stalls: interrupting the root's complete call
	// itself would report it to the model as interrupted, and the root
	// would need one more scripted turn.
	rootWaits := make(chan struct{})
	var once sync.Once
	sub := b.app.Bus.Subscribe(func(ev agent.Event) {
		if c, ok := ev.(*tree.NodeChanged); ok && c.Node.ID == 1 && c.Node.State == tree.StateWaiting {
			once.Do(func() { close(rootWaits) })
		}
	})
	defer sub.Close()
	ctx, cancel := context.WithCancel(b.ctx)
	done := make(chan store.Run)
	go func() {
		r, err := b.engine.Drive(ctx, b.run.ID)
		if err != nil {
			t.Error(err)
		}
		done <- r
	}()
	select {
	case <-rootWaits:
	case r := <-done:
		t.Fatalf("the run ended before the root waited: %+v", r)
	}
	for len(b.requests(2)) < 2 {
		b.srv.WaitRequests(len(b.srv.Requests()) + 1)
	}
	cancel()
	if r := <-done; r.Status != store.RunInterrupted {
		t.Fatalf("first drive %+v", r)
	}
	resumed.Store(true)
	r := b.drive(t)
	if r.Status != store.RunComplete || r.Result != "root saw the budget" {
		t.Fatalf("resumed run %+v", r)
	}
	if n := b.node(t, 2); n.Error != "node budget exhausted: #2 and its subtree used 1200 of 1000 tokens" {
		t.Fatalf("#2 after resume: %s %q", n.State, n.Error)
	}
}

// TestNotifyReachesTheParentsSynthesis: a child's progress notes are
// shown to its parent with the children's results.
func TestNotifyReachesTheParentsSynthesis(t *testing.T) {
	t.Parallel()
	b := setup(t, script{
		1: {calls(call("spawn", map[string]any{"goal": "scan", "prompt": "p"})), complete("draft"), complete("final")},
		2: {calls(call("notify", map[string]any{"message": "found 3 of 5 files"})), complete("all 5 files")},
	})
	if r := b.drive(t); r.Status != store.RunComplete || r.Result != "final" {
		t.Fatalf("run %+v", r)
	}
	if got := b.lastToolResults(t, 2, 1); got != "Sent to #1." {
		t.Fatalf("notify result %q", got)
	}
	syn := b.requests(1)[2].LastUserText()
	if !strings.Contains(syn, "Progress notes they sent you on the way:\n- #2 (scan): found 3 of 5 files") || !strings.Contains(syn, "all 5 files") {
		t.Fatalf("synthesis message %q", syn)
	}
}

// TestCompleteKeptByTheTranscript: complete's draft is written with the
// transition that ends the turn, so a process killed in between leaves
// only the transcript (the call and its "recorded" result). Resuming
// takes the draft from there: the node completes with it, and its model
// is not asked again.
func TestCompleteKeptByTheTranscript(t *testing.T) {
	t.Parallel()
	b := setup(t, script{})
	st := b.app.Store
	sid := b.run.ID + ".1"
	root := b.node(t, 1)
	started := time.Now().UTC()
	root.State, root.SessionID, root.StartedAt = tree.StateActive, sid, &started
	if err := st.Commit(b.ctx, nil, root); err != nil {
		t.Fatal(err)
	}
	if err := st.CreateSession(b.ctx, store.Session{ID: sid, Model: "anthropic/claude-test", RunID: b.run.ID, NodeID: 1}); err != nil {
		t.Fatal(err)
	}
	input := json.RawMessage(`{"result":"kept by the transcript"}`)
	msgs := []llm.Message{
		llm.UserText("You are the root node #1. the goal"),
		{Role: llm.RoleAssistant, Parts: []llm.Part{{Type: llm.PartToolCall, ToolCall: &llm.ToolCall{ID: "c1", Name: "complete", Input: input}}}},
		{Role: llm.RoleUser, Parts: []llm.Part{{Type: llm.PartToolResult, ToolResult: &llm.ToolResult{CallID: "c1", Content: "Result recorded."}}}},
	}
	if _, err := st.AppendMessages(b.ctx, sid, msgs...); err != nil {
		t.Fatal(err)
	}
	r := b.drive(t)
	if r.Status != store.RunComplete || r.Result != "kept by the transcript" {
		t.Fatalf("run %+v", r)
	}
	if n := len(b.srv.Requests()); n != 0 {
		t.Fatalf("the model was asked %d times, want none", n)
	}
}

// TestEndedNodesDropTheirAgents: a node's agent is kept for its next turn
// (a synthesis) only while the node has not ended, so a run does not hold
// every finished node's agent and transcript until it ends. At the root's
// synthesis its three children have completed: only the root's agent is
// left.
func TestEndedNodesDropTheirAgents(t *testing.T) {
	t.Parallel()
	var (
		mu   sync.Mutex
		held []int64
		eng  *tree.Engine
		run  string
	)
	s := script{
		1: {calls(
			call("spawn", map[string]any{"goal": "a", "prompt": "p"}),
			call("spawn", map[string]any{"goal": "b", "prompt": "p"}),
			call("spawn", map[string]any{"goal": "c", "prompt": "p"})), complete("draft"), complete("final")},
		2: {complete("ra")},
		3: {complete("rb")},
		4: {complete("rc")},
	}
	respond := treetest.Responder(s)
	b := setup(t, nil, setupOpts{respond: func(req llmtest.Request) llmtest.Turn {
		if nodeOf(req) == 1 && assistantTurns(req) == 2 { // the synthesis
			mu.Lock()
			held = tree.AgentsHeld(eng, run)
			mu.Unlock()
		}
		return respond(req)
	}})
	mu.Lock()
	eng, run = b.engine, b.run.ID
	mu.Unlock()
	if r := b.drive(t); r.Status != store.RunComplete || r.Result != "final" {
		t.Fatalf("run %+v", r)
	}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(held) != "[1]" {
		t.Fatalf("agents kept at the root's synthesis: %v, want [1]", held)
	}
}
