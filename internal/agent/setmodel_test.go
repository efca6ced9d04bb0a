package agent_test

import (
	"context"
	"testing"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/tool"
)

// TestSetModelWhileSending switches the model from another goroutine (a
// bus subscriber, as a front end would) while a step is under way: under
// -race the switch must not race with the step, the running step finishes
// on its model and the next step uses the new one.
func TestSetModelWhileSending(t *testing.T) {
	t.Parallel()
	b := setup(t, calls(call("c1", "gate", `{"text":"x"}`)))
	second := &fakeProvider{turns: []fakeTurn{text("from the second model")}}
	switched := make(chan struct{})
	gate := tool.New("gate", "Wait until the model is switched.", tool.KindRead, func(ctx context.Context, c tool.Call, a echoArgs) tool.Result {
		<-switched
		return tool.Result{Content: "ok"}
	})
	b.cfg.Tools = tool.NewRegistry(gate)
	a := agent.New(b.cfg)
	sub := b.bus.Subscribe(func(e agent.Event) {
		// Nothing orders this with the step's reads of the model but the
		// agent's own lock.
		if s, ok := e.(*agent.StepStarted); ok && s.Step == 1 {
			a.SetModel(second, "second-model", "fake/second", nil, 64_000)
			close(switched)
		}
	})
	defer sub.Close()

	res := a.Send(b.ctx, llm.UserText("go"))
	if res.Outcome != agent.OutcomeCompleted || res.Text != "from the second model" || res.Steps != 2 {
		t.Fatalf("result = %+v", res)
	}
	if reqs := b.provider.requests(); len(reqs) != 1 || reqs[0].Model != "fake-model" {
		t.Fatalf("the first model got %d requests; the step under way must finish on it", len(reqs))
	}
	if reqs := second.requests(); len(reqs) != 1 || reqs[0].Model != "second-model" {
		t.Fatalf("the second model got %d requests, want the second step", len(reqs))
	}
	var models []string
	for _, e := range b.events.all() {
		if m, ok := e.(*agent.AssistantMessage); ok {
			models = append(models, m.Model)
		}
	}
	if len(models) != 2 || models[0] != "fake-model" || models[1] != "fake/second" {
		t.Fatalf("assistant messages from %q", models)
	}
	if _, _, known := a.Usage(); known {
		t.Fatal("the second model has no price, so the session's cost is unknown")
	}
}
