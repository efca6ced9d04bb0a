package telemetry_test

import (
	"context"
	"fmt"
	"iter"
	"path/filepath"
	"testing"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/store/sqlite"
	"github.com/arbor-run/arbor/internal/telemetry"
	"github.com/arbor-run/arbor/internal/telemetry/oteltest"
	"github.com/arbor-run/arbor/internal/tool"
)

// instant answers every call at once with a three-word text.
type instant struct{}

func (instant) Name() string { return "instant" }

func (instant) Stream(context.Context, *llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		for _, w := range []string{"all ", "done ", "here"} {
			if !yield(llm.TextDelta{Text: w}, nil) {
				return
			}
		}
		yield(llm.Done{Response: &llm.Response{Message: llm.Message{Role: llm.RoleAssistant,
			Parts: []llm.Part{{Type: llm.PartText, Text: "all done here"}}}, StopReason: llm.StopEndTurn,
			Usage: llm.Usage{InputTokens: 12, OutputTokens: 3}}}, nil)
	}
}

// BenchmarkStep is agent's BenchmarkStep (one loop step end to end: an
// instant provider, a real SQLite file, the events published) with
// tracing off (no SDK, no subscriber: what arbor does without an
// endpoint), on (a Tracer exporting to a real collector; the step's own
// time), and on-with-spans (the step plus the Tracer making its spans,
// the CPU tracing adds per step).
func BenchmarkStep(b *testing.B) {
	for _, mode := range []string{"off", "on", "on-with-spans"} {
		b.Run(mode, func(b *testing.B) {
			ctx := context.Background()
			st, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "arbor.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			bus := agent.NewBus()
			var tr *telemetry.Tracer
			if mode != "off" {
				col := oteltest.Start(b)
				e, err := telemetry.Start(ctx, telemetry.Settings{Endpoint: col.HTTP}, func(string) string { return "" })
				if err != nil {
					b.Fatal(err)
				}
				defer e.Shutdown(ctx)
				tr = telemetry.Subscribe(bus, e, st)
				defer tr.Close(ctx)
			}
			cfg := agent.Config{Model: "instant", Provider: instant{}, System: "be brief",
				Tools: tool.NewRegistry(), Store: st, Bus: bus}
			msg := llm.UserText("go")
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				i++
				b.StopTimer()
				cfg.SessionID = fmt.Sprintf("bench-%d", i)
				if err := st.CreateSession(ctx, store.Session{ID: cfg.SessionID, Status: store.SessionIdle}); err != nil {
					b.Fatal(err)
				}
				a := agent.New(cfg)
				b.StartTimer()
				if r := a.Send(ctx, msg); r.Outcome != agent.OutcomeCompleted {
					b.Fatal(r)
				}
				if mode == "on-with-spans" {
					tr.Handled()
				}
			}
		})
	}
}
