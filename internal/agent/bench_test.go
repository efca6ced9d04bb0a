package agent_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/store"
)

// freshAgent returns an agent on a new session of bd's store, so every
// iteration measures the same work instead of a growing conversation.
func freshAgent(b *testing.B, bd *bundle, i int) *agent.Agent {
	b.StopTimer()
	defer b.StartTimer()
	id := fmt.Sprintf("bench-%d", i)
	if err := bd.store.CreateSession(bd.ctx, store.Session{ID: id, Status: store.SessionIdle}); err != nil {
		b.Fatal(err)
	}
	cfg := bd.cfg
	cfg.SessionID = id
	return agent.New(cfg)
}

// BenchmarkStep measures one loop step end to end with an instant
// in-process provider and a real SQLite file: stream a three-word answer,
// store the user and assistant messages and the usage, publish events.
func BenchmarkStep(b *testing.B) { benchmarkStep(b, 0) }

// BenchmarkStepSlowSubscriber is BenchmarkStep with a subscriber that takes
// 10 ms per event (a client that reads slowly): the step must not change by
// more than noise, since publishing never waits for a subscriber.
func BenchmarkStepSlowSubscriber(b *testing.B) { benchmarkStep(b, 10*time.Millisecond) }

func benchmarkStep(b *testing.B, slow time.Duration) {
	turn := text("all done here")
	turn.repeats = true
	bd := setup(&testing.T{}, turn)
	if slow > 0 {
		bd.bus.Subscribe(func(agent.Event) { time.Sleep(slow) })
	}
	msg := llm.UserText("go")
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		a := freshAgent(b, bd, i)
		if r := a.Send(bd.ctx, msg); r.Outcome != agent.OutcomeCompleted {
			b.Fatal(r)
		}
	}
}

// BenchmarkToolStep measures a turn that runs one tool: two model calls,
// the intent row, the tool, its result message.
func BenchmarkToolStep(b *testing.B) {
	bd := setup(&testing.T{})
	msg := llm.UserText("go")
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		a := freshAgent(b, bd, i)
		bd.provider.mu.Lock()
		bd.provider.turns = append(bd.provider.turns, calls(call("c1", "echo", `{"text":"x"}`)), text("ok"))
		bd.provider.reqs = nil
		bd.provider.mu.Unlock()
		if r := a.Send(bd.ctx, msg); r.Outcome != agent.OutcomeCompleted {
			b.Fatal(r)
		}
	}
}
