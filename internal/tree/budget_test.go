package tree_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/tree"
	"github.com/arbor-run/arbor/internal/tree/treetest"
)

// costs returns the tokens and dollars recorded on the sessions of the
// given nodes.
func (b *bundle) costs(t *testing.T, ids ...int64) (tokens int64, usd float64) {
	t.Helper()
	for _, id := range ids {
		n := b.node(t, id)
		if n.SessionID == "" {
			continue
		}
		s, err := b.app.Store.GetSession(b.ctx, n.SessionID)
		if err != nil {
			continue // never started
		}
		tokens += s.Usage.Total()
		usd += s.CostUSD
	}
	return tokens, usd
}

func fanOut(n int, extra map[string]any) []llmtest.ToolCall {
	var cs []llmtest.ToolCall
	for i := range n {
		args := map[string]any{"goal": fmt.Sprintf("leaf %d", i), "prompt": "p"}
		for k, v := range extra {
			args[k] = v
		}
		cs = append(cs, call("spawn", args))
	}
	return cs
}

// TestParallelCallsHoldTheRunBudget: eight children start at once under a
// run budget of 2500 tokens, every call using 1000. Each call reserves
// its estimate before it starts, so they cannot all pass the gate on an
// unspent budget: the run overshoots by at most one call, and every call
// that reached the server is recorded (calls in flight when the budget
// ran out finish instead of being cancelled unrecorded).
func TestParallelCallsHoldTheRunBudget(t *testing.T) {
	t.Parallel()
	for _, model := range []string{"anthropic/claude-test", "openai/gpt-test"} {
		t.Run(model, func(t *testing.T) {
			t.Parallel()
			turn := func(tt llmtest.Turn) llmtest.Turn { tt.Usage = llmtest.Usage{Input: 900, Output: 100}; return tt }
			s := script{1: {turn(calls(fanOut(8, nil)...)), turn(complete("draft")), turn(complete("final"))}}
			for id := int64(2); id <= 9; id++ {
				s[id] = []llmtest.Turn{turn(complete("leaf done"))}
			}
			b := setup(t, s, setupOpts{budgetTokens: 2500, maxParallel: 8, model: model})
			r := b.drive(t)
			if r.Status != store.RunBudget {
				t.Fatalf("run %+v", r)
			}
			tokens, _ := b.costs(t, 1, 2, 3, 4, 5, 6, 7, 8, 9)
			reqs := int64(len(b.srv.Requests()))
			if tokens != 1000*reqs {
				t.Fatalf("%d requests reached the server, %d tokens recorded: every call must be recorded", reqs, tokens)
			}
			if tokens > 2500+1000 {
				t.Fatalf("spent %d tokens of a 2500 budget: more than one call over", tokens)
			}
		})
	}
}

// TestParallelCallsHoldANodeBudget: a child with budget_usd 0.30 fans out
// six leaves at once, each call costing $0.1215 (within its estimate):
// the subtree overshoots by at most one call's estimate (a per-node
// budget of $2.50 spent $5.00 before reservations).
func TestParallelCallsHoldANodeBudget(t *testing.T) {
	t.Parallel()
	// claude-sonnet-4-5: $3 in, $15 out per million tokens: $0.1215 a
	// call; its estimate is at least 8192 output tokens, $0.12288.
	turn := func(tt llmtest.Turn) llmtest.Turn {
		tt.Usage = llmtest.Usage{Input: 500, Output: 8000}
		return tt
	}
	s := script{
		1: {calls(call("spawn", map[string]any{"goal": "capped", "prompt": "p", "budget_usd": 0.3})), complete("draft"), complete("root saw the budget")},
		2: {turn(calls(fanOut(6, nil)...)), turn(complete("draft")), turn(complete("never"))},
	}
	for id := int64(3); id <= 8; id++ {
		s[id] = []llmtest.Turn{turn(complete("leaf done"))}
	}
	b := setup(t, s, setupOpts{model: "anthropic/claude-sonnet-4-5", maxParallel: 8})
	r := b.drive(t)
	if r.Status != store.RunComplete || r.Result != "root saw the budget" {
		t.Fatalf("run %+v", r)
	}
	_, usd := b.costs(t, 2, 3, 4, 5, 6, 7, 8)
	if usd > 0.3+0.13 {
		t.Fatalf("the subtree of #2 spent $%.4f of $0.30: more than one call's estimate over", usd)
	}
	n := b.node(t, 2)
	wantState(t, n, tree.StateFailed)
	if !strings.Contains(n.Error, "node budget exhausted: #2") {
		t.Fatalf("#2: %q", n.Error)
	}
}

// TestDistillationIsRecordedAndCharged: a context_query's distillation is
// a model call of the node: recorded on its session and charged to its
// budget, so here the node's budget is spent after its second call.
func TestDistillationIsRecordedAndCharged(t *testing.T) {
	t.Parallel()
	costly := calls(call("read_node", map[string]any{"id": "#3"}))
	costly.Usage = llmtest.Usage{Input: 550, Output: 50}
	respond := treetest.Responder(script{
		1: {calls(call("spawn", map[string]any{"goal": "a", "prompt": "p"}),
			call("spawn", map[string]any{"goal": "b", "prompt": "p", "blocked_by": []any{"#2"}, "context_query": "summary", "max_tokens": 2100})),
			complete("draft"), complete("final")},
		2: {complete("the result of a")},
		3: {costly, costly, complete("never")},
	})
	b := setup(t, nil, setupOpts{respond: func(req llmtest.Request) llmtest.Turn {
		if nodeOf(req) == 0 {
			return llmtest.Turn{Text: "DISTILLED", Usage: llmtest.Usage{Input: 900, Output: 100}}
		}
		return respond(req)
	}})
	if r := b.drive(t); r.Status != store.RunComplete {
		t.Fatalf("run %+v", r)
	}
	n := b.node(t, 3)
	if n.Error != "node budget exhausted: #3 and its subtree used 2200 of 2100 tokens" {
		t.Fatalf("#3 %s %q: the distillation's 1000 tokens must count", n.State, n.Error)
	}
	if tokens, _ := b.costs(t, 3); tokens != 2200 {
		t.Fatalf("#3's session recorded %d tokens, want 2200 (distillation included)", tokens)
	}
	if got := b.lastToolResults(t, 3, 1); !strings.Contains(got, "context (distilled by context_query \"summary\"):\nDISTILLED") ||
		!strings.Contains(got, "the result of a") {
		t.Fatalf("read_node of #3 should show the distilled context and the raw results:\n%s", got)
	}
}
