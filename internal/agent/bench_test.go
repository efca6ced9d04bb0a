package agent_test

import (
	"testing"

	"github.com/arbor-run/arbor/internal/llm"
)

// BenchmarkStep measures one loop step end to end with an instant
// in-process provider and a real SQLite file: stream a three-word answer,
// store the user and assistant messages and the usage, publish events.
func BenchmarkStep(b *testing.B) {
	turn := text("all done here")
	turn.repeats = true
	bd := setup(&testing.T{}, turn)
	msg := llm.UserText("go")
	b.ReportAllocs()
	for b.Loop() {
		if r := bd.agent.Send(bd.ctx, msg); r.Outcome != "completed" {
			b.Fatal(r)
		}
	}
}

// BenchmarkToolStep measures a step that runs one tool: the intent row,
// the tool, its result, and the follow-up model call.
func BenchmarkToolStep(b *testing.B) {
	bd := setup(&testing.T{})
	msg := llm.UserText("go")
	b.ReportAllocs()
	for b.Loop() {
		bd.provider.mu.Lock()
		bd.provider.turns = append(bd.provider.turns, calls(call("", "echo", `{"text":"x"}`)), text("ok"))
		bd.provider.reqs = nil
		bd.provider.mu.Unlock()
		if r := bd.agent.Send(bd.ctx, msg); r.Outcome != "completed" {
			b.Fatal(r)
		}
	}
}
