//go:build unix

// Benchmarks of the coordination engine with an instant in-process model, a
// real SQLite file and the real bus and broker, so what they measure is the
// engine, the agent loop and the store: never a network. bench/tree.sh runs
// them and prints the figures against their targets. (unix only: the idle
// benchmark reads the process CPU time with getrusage.)
package tree_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/tool"
	"github.com/arbor-run/arbor/internal/tree"
)

// BenchmarkFanOutFanIn1000: the root spawns 1,000 children in one step,
// each completes at once, the root synthesizes. One op is one whole run.
func BenchmarkFanOutFanIn1000(b *testing.B) { benchmarkFanOut(b, 1000, 8, 64) }

// BenchmarkFanOutFanIn10000 is the same shape with 10,000 children: what
// grows faster than the number of nodes (a scan of every node per event,
// per dependency, per commit) shows here as ns/node rising over the 1,000
// one's.
func BenchmarkFanOutFanIn10000(b *testing.B) { benchmarkFanOut(b, 10000, 8) }

func benchmarkFanOut(b *testing.B, children int, parallels ...int) {
	fanOut := spawnAll(2, children, false)
	answer := func(_ context.Context, node int64, turn int) (llm.Message, error) {
		switch {
		case node == 1:
			if m, ok := rootAnswers(fanOut, turn); ok {
				return m, nil
			}
		case node > 1 && node <= int64(children)+1 && turn == 0:
			return completeWith(fmt.Sprintf("result of #%d", node)), nil
		}
		return noAnswer(node, turn)
	}
	for _, parallel := range parallels {
		b.Run(fmt.Sprintf("parallel=%d", parallel), func(b *testing.B) {
			env := benchSetup(b, answer)
			runs := 0
			env.store.writes.Store(0)
			tx0, w0 := env.sqlite.WriteStats()
			s0 := env.sqlite.Statements()
			cpu0 := cpuTime(b)
			for b.Loop() {
				if err := env.drive(env.create(b, parallel), "final", children+1); err != nil {
					b.Fatal(err)
				}
				runs++
			}
			perRun := float64(b.Elapsed().Nanoseconds()) / float64(runs)
			nodes := float64(runs * (children + 1))
			b.ReportMetric(perRun/float64(children+1), "ns/node")
			b.ReportMetric(perRun/1e6, "ms/run")
			// CPU time is steadier than wall time on a busy machine.
			b.ReportMetric(float64((cpuTime(b)-cpu0).Milliseconds())/float64(runs), "cpu-ms/run")
			b.ReportMetric(float64(env.store.writes.Load())/nodes, "writes/node")
			// Group commit: how many of those writes one transaction held.
			tx, w := env.sqlite.WriteStats()
			b.ReportMetric(float64(w-w0)/float64(tx-tx0), "writes/tx")
			// SQLite statements per node, BEGIN and COMMIT included.
			b.ReportMetric(float64(env.sqlite.Statements()-s0)/nodes, "stmts/node")
		})
	}
}

// BenchmarkChain200: every node #k up to #200 spawns #k+1, so the tree is
// 200 deep; each level waits for its child, then synthesizes. ns/hop is
// the whole run over its 200 hops: a child's turn, its completion, and the
// parent's wake-up and synthesis.
func BenchmarkChain200(b *testing.B) {
	const depth = 200
	answer := func(_ context.Context, node int64, turn int) (llm.Message, error) {
		switch {
		case node >= 1 && node <= depth && turn == 0:
			return toolCalls(toolCall(0, "spawn", spawnInput{Goal: fmt.Sprintf("level %d", node+1), Prompt: "Go one level deeper."})), nil
		case node >= 1 && node <= depth && turn == 1:
			return completeWith("draft"), nil
		case node >= 1 && node <= depth && turn == 2:
			return completeWith(fmt.Sprintf("result of #%d", node)), nil
		case node == depth+1 && turn == 0:
			return completeWith("leaf"), nil
		}
		return noAnswer(node, turn)
	}
	env := benchSetup(b, answer)
	runs := 0
	env.store.writes.Store(0)
	for b.Loop() {
		if err := env.drive(env.create(b, 0), "result of #1", depth+1); err != nil {
			b.Fatal(err)
		}
		runs++
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(runs*depth), "ns/hop")
	b.ReportMetric(float64(env.store.writes.Load())/float64(runs*depth), "writes/hop")
}

// hopClock records, for the run being measured, when each node's first
// model call arrived and when each node's completion was published.
type hopClock struct {
	mu        sync.Mutex // guards every field
	run       string
	started   map[int64]time.Time
	completed map[int64]time.Time
}

func (h *hopClock) reset(run string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.run, h.started, h.completed = run, map[int64]time.Time{}, map[int64]time.Time{}
}

// hops returns the sum of the delays from #k-1 complete to #k's first
// model call for k in from..to.
func (h *hopClock) hops(from, to int64) (time.Duration, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var sum time.Duration
	for k := from; k <= to; k++ {
		start, ok1 := h.started[k]
		done, ok2 := h.completed[k-1]
		if !ok1 || !ok2 {
			return 0, fmt.Errorf("run %s: no timing for the hop #%d → #%d", h.run, k-1, k)
		}
		sum += start.Sub(done)
	}
	return sum, nil
}

// BenchmarkDispatchLatency isolates the engine's own hop cost: the root
// spawns #2..#201 in one step, #k blocked_by #k-1, and each hop is the time
// from #k-1's complete NodeChanged event to #k's first model call.
func BenchmarkDispatchLatency(b *testing.B) { benchmarkDispatchLatency(b, 0) }

// BenchmarkDispatchLatencySlowSubscriber is BenchmarkDispatchLatency with a
// subscriber that takes 10 ms per event (a client that reads slowly): the
// hop must not change by more than noise.
func BenchmarkDispatchLatencySlowSubscriber(b *testing.B) {
	benchmarkDispatchLatency(b, 10*time.Millisecond)
}

func benchmarkDispatchLatency(b *testing.B, slow time.Duration) {
	const chain = 200
	clock := &hopClock{}
	fanOut := spawnAll(2, chain, true)
	answer := func(_ context.Context, node int64, turn int) (llm.Message, error) {
		switch {
		case node == 1:
			if m, ok := rootAnswers(fanOut, turn); ok {
				return m, nil
			}
		case node > 1 && node <= chain+1 && turn == 0:
			now := time.Now()
			clock.mu.Lock()
			clock.started[node] = now
			clock.mu.Unlock()
			return completeWith(fmt.Sprintf("result of #%d", node)), nil
		}
		return noAnswer(node, turn)
	}
	env := benchSetup(b, answer)
	if slow > 0 {
		env.slowSubscriber(slow)
	}
	// Events are delivered after they are published: the hop starts at
	// the complete event's publish time, which the bus stamps.
	sub := env.bus.Subscribe(func(ev agent.Event) {
		c, ok := ev.(*tree.NodeChanged)
		if !ok || c.Node.State != tree.StateComplete {
			return
		}
		clock.mu.Lock()
		if c.RunID == clock.run {
			clock.completed[c.Node.ID] = c.At
		}
		clock.mu.Unlock()
	})
	b.Cleanup(sub.Close)
	var total time.Duration
	hops := 0
	for b.Loop() {
		id := env.create(b, 0)
		clock.reset(id)
		if err := env.drive(id, "final", chain+1); err != nil {
			b.Fatal(err)
		}
		sub.Flush()
		sum, err := clock.hops(3, chain+1)
		if err != nil {
			b.Fatal(err)
		}
		total += sum
		hops += chain - 1
	}
	b.ReportMetric(float64(total)/1e3/float64(hops), "µs/hop")
}

// BenchmarkActiveNodeMemory holds 200 nodes active at once, each blocked in
// its model call, and reports the heap they take (after a GC) per node,
// with the goroutine stacks reported apart.
func BenchmarkActiveNodeMemory(b *testing.B) {
	const n = 200
	var (
		mu         sync.Mutex // guards blocked, allBlocked, release
		blocked    int
		allBlocked chan struct{}
		release    chan struct{}
	)
	fanOut := spawnAll(2, n, false)
	answer := func(ctx context.Context, node int64, turn int) (llm.Message, error) {
		switch {
		case node == 1:
			if m, ok := rootAnswers(fanOut, turn); ok {
				return m, nil
			}
		case node > 1 && node <= n+1 && turn == 0:
			mu.Lock()
			blocked++
			if blocked == n {
				close(allBlocked)
			}
			rel := release
			mu.Unlock()
			select {
			case <-rel:
			case <-ctx.Done():
				return llm.Message{}, ctx.Err()
			}
			return completeWith(fmt.Sprintf("result of #%d", node)), nil
		}
		return noAnswer(node, turn)
	}
	env := benchSetup(b, answer)
	var heap, stack int64
	runs := 0
	for b.Loop() {
		mu.Lock()
		blocked, allBlocked, release = 0, make(chan struct{}), make(chan struct{})
		all, rel := allBlocked, release
		mu.Unlock()

		before := memStats()
		done := env.driveAsync(env.create(b, n), "final", n+1)
		select {
		case <-all:
		case err := <-done:
			b.Fatalf("the run ended before %d nodes were active: %v", n, err)
		}
		during := memStats()
		heap += int64(during.HeapAlloc) - int64(before.HeapAlloc)
		stack += int64(during.StackInuse) - int64(before.StackInuse)
		close(rel)
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		runs++
	}
	b.ReportMetric(float64(heap)/float64(runs*n), "B/active-node")
	b.ReportMetric(float64(stack)/float64(runs*n), "stack-B/active-node")
}

func memStats() runtime.MemStats {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m
}

// BenchmarkIdleCPU shows that an engine whose only open node waits on an
// ask burns no CPU: the root asks, ends its turn and waits; the process CPU
// time is read over a 200 ms window; then the question is answered.
func BenchmarkIdleCPU(b *testing.B) {
	const window = 200 * time.Millisecond
	ask := toolCalls(toolCall(0, "ask", struct {
		Question string `json:"question"`
	}{"Proceed?"}))
	answer := func(_ context.Context, node int64, turn int) (llm.Message, error) {
		if node == 1 {
			if m, ok := rootAnswers(ask, turn); ok {
				return m, nil
			}
		}
		return noAnswer(node, turn)
	}
	env := benchSetup(b, answer)
	questions := make(chan agent.Interaction, 4)
	rootWaits := make(chan string, 4)
	env.bus.Subscribe(func(ev agent.Event) {
		switch ev := ev.(type) {
		case *agent.InteractionRequested:
			if ev.Interaction.Question != nil {
				questions <- ev.Interaction
			}
		case *tree.NodeChanged:
			if ev.Node.ID == 1 && ev.Node.State == tree.StateWaiting {
				rootWaits <- ev.RunID
			}
		}
	})
	var idle time.Duration
	runs := 0
	for b.Loop() {
		id := env.create(b, 0)
		done := env.driveAsync(id, "final", 2)
		var in *agent.Interaction
		waiting := false
		for in == nil || !waiting {
			select {
			case q := <-questions:
				in = &q
			case <-rootWaits:
				waiting = true
			case err := <-done:
				b.Fatalf("the run ended before it was idle: %v", err)
			}
		}
		start := cpuTime(b)
		time.Sleep(window) // a fixed window: the thing measured is doing nothing
		idle += cpuTime(b) - start
		if err := env.broker.Resolve(in.ID, agent.Response{Answer: &tool.Answer{Text: "yes"}}); err != nil {
			b.Fatal(err)
		}
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		runs++
	}
	b.ReportMetric(float64(idle)/1e6/float64(runs), "cpu-ms/idle-200ms")
}

// cpuTime is the user plus system CPU time of the whole process.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
