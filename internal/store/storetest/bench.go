package storetest

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/store"
)

// The benchmarks every dialect runs, so their figures compare: a dialect's
// bench_test.go names each one and passes a BenchOpener.

// BenchOpener returns an empty store for one benchmark, closed when b ends.
type BenchOpener func(b *testing.B) store.Store

// assistantTurn is a typical step: a sentence of text and one tool call.
func assistantTurn(i int) llm.Message {
	input := fmt.Sprintf(`{"command":"go test ./internal/store/... -run TestStep%d -count=1","timeout_ms":120000,"description":"run the store tests"}`, i)
	return llm.Message{Role: llm.RoleAssistant, Parts: []llm.Part{
		llm.TextPart("I'll run the store tests to see whether the migration change broke anything."),
		{Type: llm.PartToolCall, ToolCall: &llm.ToolCall{
			ID: fmt.Sprintf("toolu_%024d", i), Name: "bash", Input: json.RawMessage(input),
		}},
	}}
}

// toolTurn answers assistantTurn(i) with about 1 KiB of output.
func toolTurn(i int) llm.Message {
	out := strings.Repeat("ok  \tgithub.com/arbor-run/arbor/internal/store/sqlite\t0.259s\n", 18)
	return llm.Message{Role: llm.RoleUser, Parts: []llm.Part{
		{Type: llm.PartToolResult, ToolResult: &llm.ToolResult{CallID: fmt.Sprintf("toolu_%024d", i), Content: out}},
	}}
}

// benchSession opens a store holding the session "bench".
func benchSession(b *testing.B, open BenchOpener) store.Store {
	b.Helper()
	st := open(b)
	if err := st.CreateSession(b.Context(), store.Session{ID: "bench", Model: "anthropic/claude-sonnet-4-5"}); err != nil {
		b.Fatal(err)
	}
	return st
}

// BenchmarkAppendMessage appends one assistant message with a tool call,
// one committed transaction each.
func BenchmarkAppendMessage(b *testing.B, open BenchOpener) {
	st := benchSession(b, open)
	msg := assistantTurn(1)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := st.AppendMessages(b.Context(), "bench", msg); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMessagesLoad loads a 200-message session (100 steps of an
// assistant tool call and its ~1 KiB result), as resuming a session does.
func BenchmarkMessagesLoad(b *testing.B, open BenchOpener) {
	st := benchSession(b, open)
	var msgs []llm.Message
	for i := range 100 {
		msgs = append(msgs, assistantTurn(i), toolTurn(i))
	}
	if _, err := st.AppendMessages(b.Context(), "bench", msgs...); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		recs, err := st.Messages(b.Context(), "bench", 0)
		if err != nil {
			b.Fatal(err)
		}
		if len(recs) != 200 {
			b.Fatalf("loaded %d messages, want 200", len(recs))
		}
	}
}

// BenchmarkCommitTransition commits one engine transition: a node's new
// state plus the run row, in one transaction, on a run of ten nodes.
func BenchmarkCommitTransition(b *testing.B, open BenchOpener) {
	st := benchSession(b, open)
	ctx := b.Context()
	run := store.Run{ID: "bench-run", Goal: "Port the parser to Go", Status: store.RunRunning, Model: "anthropic/claude-sonnet-4-5", MaxParallel: 4}
	if err := st.CreateRun(ctx, run); err != nil {
		b.Fatal(err)
	}
	nodes := []store.Node{{RunID: run.ID, ID: 1, Kind: "goal", Goal: run.Goal, State: "waiting"}}
	for id := int64(2); id <= 10; id++ {
		nodes = append(nodes, store.Node{
			RunID: run.ID, ID: id, ParentID: 1, Kind: "task", Spawn: "spawn",
			Goal: "Port one module", Prompt: strings.Repeat("Keep the public API. ", 20),
			BlockedBy: []int64{id - 1}, Returns: "text", State: "pending",
		})
	}
	if err := st.Commit(ctx, &run, nodes...); err != nil {
		b.Fatal(err)
	}
	node := nodes[4]
	states := []store.NodeState{"active", "waiting", "synthesizing", "complete"}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		node.State = states[i%len(states)]
		node.Attempts = i
		run.Result = string(node.State)
		if err := st.Commit(ctx, &run, node); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkCommitSpawns commits a step that spawned 1,000 children: one
// commit of 1,000 new nodes, as a fan-out's root makes (and nothing else
// runs beside it). ns/node is the commit's time per node.
func BenchmarkCommitSpawns(b *testing.B, open BenchOpener) {
	st := open(b)
	ctx := b.Context()
	const children = 1000
	runs := 0
	for b.Loop() {
		runs++
		run := store.Run{ID: fmt.Sprintf("bench-run-%d", runs), Goal: "Fan out", Status: store.RunRunning,
			Model: "anthropic/claude-sonnet-4-5", MaxParallel: 8}
		if err := st.CreateRun(ctx, run); err != nil {
			b.Fatal(err)
		}
		nodes := make([]store.Node, 0, children+1)
		nodes = append(nodes, store.Node{RunID: run.ID, ID: 1, Kind: "goal", Goal: run.Goal, State: "waiting"})
		for id := int64(2); id <= children+1; id++ {
			nodes = append(nodes, store.Node{
				RunID: run.ID, ID: id, ParentID: 1, Kind: "task", Spawn: "spawn", Goal: fmt.Sprintf("leaf %d", id),
				Prompt: "Answer at once.", Returns: "text", State: "pending", CallID: fmt.Sprintf("call_%d", id),
			})
		}
		if err := st.Commit(ctx, &run, nodes...); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(runs*children), "ns/node")
}

// BenchmarkParallelSteps has eight writers at once store steps of their
// own sessions (an assistant message with a tool call and its usage, one
// transaction each), as eight agents of a tree do: the figure is the
// store's write throughput under contention, where group commit pays.
func BenchmarkParallelSteps(b *testing.B, open BenchOpener) {
	st := open(b)
	ctx := b.Context()
	stats, _ := st.(interface {
		WriteStats() (transactions, writes int64)
	})
	var tx0, w0 int64
	if stats != nil {
		tx0, w0 = stats.WriteStats()
	}
	var next atomic.Int64
	b.SetParallelism(max(1, 8/runtime.GOMAXPROCS(0)))
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		id := fmt.Sprintf("bench-%d", next.Add(1))
		if err := st.CreateSession(ctx, store.Session{ID: id, Model: "anthropic/claude-sonnet-4-5"}); err != nil {
			b.Error(err)
			return
		}
		i := 0
		for pb.Next() {
			i++
			_, err := st.SaveStep(ctx, store.Step{SessionID: id, Messages: []llm.Message{assistantTurn(i)},
				Usage: &store.UsageRecord{Model: "anthropic/claude-sonnet-4-5", Usage: llm.Usage{InputTokens: 1200, OutputTokens: 80}}})
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
	if stats != nil { // a dialect with group commit says how it grouped
		tx, w := stats.WriteStats()
		b.ReportMetric(float64(w-w0)/float64(tx-tx0), "writes/tx")
	}
}
