package tree_test

import (
	"math"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/tree"
)

const twoProviders = `node_models:
  fast: openai/gpt-5-mini
  strong: anthropic/claude-opus-4-5
`

// TestChildrenOnTwoProviders: the root (on anthropic/claude-sonnet-4-5)
// spawns one child on each of two providers — the scripted server speaks
// both wire formats — and each node is charged at its own model's price;
// the run's cost is their sum.
func TestChildrenOnTwoProviders(t *testing.T) {
	t.Parallel()
	u := func(tt llmtest.Turn) llmtest.Turn {
		tt.Usage = llmtest.Usage{Input: 1000, Output: 100}
		return tt
	}
	b := setup(t, script{
		1: {
			u(calls(call("spawn", map[string]any{"goal": "cheap", "prompt": "p", "model": "fast"}),
				call("spawn", map[string]any{"goal": "hard", "prompt": "p", "model": "strong"}))),
			u(complete("draft")),
			u(calls(call("read_tree", map[string]any{}))),
			u(complete("final")),
		},
		2: {u(complete("cheap done"))},
		3: {u(complete("hard done"))},
	}, setupOpts{model: "anthropic/claude-sonnet-4-5", config: twoProviders, maxParallel: 1})
	if r := b.drive(t); r.Status != store.RunComplete || r.Result != "final" {
		t.Fatalf("run %+v", r)
	}
	for id, want := range map[int64]string{1: llmtest.FormatAnthropic, 2: llmtest.FormatOpenAI, 3: llmtest.FormatAnthropic} {
		for _, req := range b.requests(id) {
			if req.Format != want {
				t.Fatalf("#%d was asked in the %s format, want %s", id, req.Format, want)
			}
		}
	}
	if got := b.requests(2)[0].Model; got != "gpt-5-mini" {
		t.Fatalf("#2 ran on %q", got)
	}
	if got := b.requests(3)[0].Model; got != "claude-opus-4-5" {
		t.Fatalf("#3 ran on %q", got)
	}
	// $ per call: sonnet 1000×3/M + 100×15/M; gpt-5-mini 1000×0.25/M +
	// 100×2/M; opus 1000×5/M + 100×25/M.
	want := map[int64]float64{1: 4 * 0.0045, 2: 0.00045, 3: 0.0075}
	var sum float64
	for id, usd := range want {
		_, got := b.costs(t, id)
		if math.Abs(got-usd) > 1e-9 {
			t.Fatalf("#%d cost $%.6f, want $%.6f", id, got, usd)
		}
		sum += got
	}
	if _, all := b.costs(t, 1, 2, 3); math.Abs(all-sum) > 1e-9 || math.Abs(sum-0.02595) > 1e-9 {
		t.Fatalf("run cost $%.6f, nodes sum to $%.6f", all, sum)
	}
	tr := b.lastToolResults(t, 1, 3)
	if !strings.Contains(tr, "#2 [complete] spawn: cheap (model: openai/gpt-5-mini)") || !strings.Contains(tr, "(model: anthropic/claude-opus-4-5)") {
		t.Fatalf("read_tree should show the children's models:\n%s", tr)
	}
	var desc string
	for _, tool := range b.requests(1)[0].Tools {
		if tool.Name == "spawn" {
			desc = tool.Description
		}
	}
	if !strings.Contains(desc, "fast = openai/gpt-5-mini ($0.25 in / $2 out per million tokens)") || !strings.Contains(desc, "strong = anthropic/claude-opus-4-5") {
		t.Fatalf("spawn's description should list the choices with prices: %q", desc)
	}
}

// TestUnknownModelChoiceIsRefused: a model that is not a configured
// choice is a tool error listing the choices.
func TestUnknownModelChoiceIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, script{
		1: {calls(call("spawn", map[string]any{"goal": "x", "prompt": "p", "model": "gpt-9"})), complete("done")},
	}, setupOpts{config: twoProviders})
	if r := b.drive(t); r.Status != store.RunComplete {
		t.Fatalf("run %+v", r)
	}
	if got := b.lastToolResults(t, 1, 1); !strings.Contains(got, `model: "gpt-9" is not one of the choices: fast, strong`) {
		t.Fatalf("result %q", got)
	}
}

// TestUnpricedModelUnderADollarBudgetIsRefused: a child on a model whose
// price is unknown could not be held to a budget in dollars, so spawn
// refuses it under one (here the parent's budget_usd), and refuses
// budget_usd for it.
func TestUnpricedModelUnderADollarBudgetIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, script{
		1: {calls(call("spawn", map[string]any{"goal": "capped", "prompt": "p", "budget_usd": 1.0})), complete("draft"), complete("final")},
		2: {
			calls(call("spawn", map[string]any{"goal": "x", "prompt": "p", "model": "local"}),
				call("spawn", map[string]any{"goal": "y", "prompt": "p", "model": "local", "max_tokens": 100}),
				call("spawn", map[string]any{"goal": "z", "prompt": "p", "model": "fast", "budget_usd": 0.5})),
			complete("draft"), complete("capped done"),
		},
		3: {complete("z done")},
	}, setupOpts{model: "anthropic/claude-sonnet-4-5", config: twoProviders + "  local: anthropic/claude-unpriced\n"})
	if r := b.drive(t); r.Status != store.RunComplete {
		t.Fatalf("run %+v", r)
	}
	got := b.lastToolResults(t, 2, 1)
	if strings.Count(got, "the price of anthropic/claude-unpriced is unknown") != 2 || !strings.Contains(got, `{"id": "#3"}`) {
		t.Fatalf("results %q", got)
	}
}

// TestInvalidToolJSONOverOpenAI: a node on the OpenAI wire format whose
// model sends tool arguments that are not valid JSON gets a tool error
// back and goes on; the node does not fail.
func TestInvalidToolJSONOverOpenAI(t *testing.T) {
	t.Parallel()
	b := setup(t, script{
		1: {calls(call("spawn", map[string]any{"goal": "sloppy", "prompt": "p", "model": "fast"})), complete("draft"), complete("final")},
		2: {{ToolCalls: []llmtest.ToolCall{{Name: "read_node", RawInput: `{"id": "#1"`}}}, complete("recovered")},
	}, setupOpts{config: twoProviders})
	if r := b.drive(t); r.Status != store.RunComplete || r.Result != "final" {
		t.Fatalf("run %+v", r)
	}
	n := b.node(t, 2)
	wantState(t, n, tree.StateComplete)
	if n.Result != "recovered" {
		t.Fatalf("#2 result %q", n.Result)
	}
	if got := b.lastToolResults(t, 2, 1); !strings.Contains(got, "not valid JSON, so it was not run") {
		t.Fatalf("tool result %q", got)
	}
	if f := b.requests(2)[0].Format; f != llmtest.FormatOpenAI {
		t.Fatalf("#2 spoke %s", f)
	}
}
