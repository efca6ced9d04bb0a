//go:build unix

// Benchmarks of the coordination engine with an instant in-process model, a
// real SQLite file and the real bus and broker, so what they measure is the
// engine, the agent loop and the store: never a network. bench/tree.sh runs
// them and prints the figures against their targets. (unix only: the idle
// benchmark reads the process CPU time with getrusage.)
package tree_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/store/sqlite"
	"github.com/arbor-run/arbor/internal/tool"
	"github.com/arbor-run/arbor/internal/tree"
)

// answerFunc decides the model's answer to turn turn (the number of
// assistant messages already in the request) of node node. It may block
// until ctx ends.
type answerFunc func(ctx context.Context, node int64, turn int) (llm.Message, error)

// benchModel is an instant in-process llm.Provider.
type benchModel struct{ answer answerFunc }

func (m *benchModel) Name() string { return "bench" }

func (m *benchModel) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		node, turn := nodeTurn(req)
		msg, err := m.answer(ctx, node, turn)
		if err != nil {
			yield(nil, err)
			return
		}
		stop := llm.StopEndTurn
		if len(msg.ToolCalls()) > 0 {
			stop = llm.StopToolUse
		}
		yield(llm.Done{Response: &llm.Response{
			Message: msg, StopReason: stop, Usage: llm.Usage{InputTokens: 100, OutputTokens: 10},
		}}, nil)
	}
}

// nodeTurn reads the node from the first user message ("You are node #N",
// "You are the root node #1"; 0 when absent) and the turn from the number
// of assistant messages.
func nodeTurn(req *llm.Request) (node int64, turn int) {
	if len(req.Messages) > 0 {
		if _, rest, ok := strings.Cut(req.Messages[0].Text(), "node #"); ok {
			end := strings.IndexFunc(rest, func(r rune) bool { return r < '0' || r > '9' })
			if end < 0 {
				end = len(rest)
			}
			node, _ = strconv.ParseInt(rest[:end], 10, 64)
		}
	}
	for _, m := range req.Messages {
		if m.Role == llm.RoleAssistant {
			turn++
		}
	}
	return node, turn
}

var errNoAnswer = errors.New("the benchmark model has no answer")

func noAnswer(node int64, turn int) (llm.Message, error) {
	return llm.Message{}, fmt.Errorf("%w for #%d turn %d", errNoAnswer, node, turn)
}

// spawnInput is the spawn tool's input as a model writes it.
type spawnInput struct {
	Goal      string   `json:"goal"`
	Prompt    string   `json:"prompt"`
	BlockedBy []string `json:"blocked_by,omitempty"`
}

func toolCall(i int, name string, input any) llm.ToolCall {
	raw, err := json.Marshal(input)
	if err != nil {
		panic(err) // inputs are the benchmark's own structs
	}
	return llm.ToolCall{ID: fmt.Sprintf("call_%d", i), Name: name, Input: raw}
}

func toolCalls(calls ...llm.ToolCall) llm.Message {
	m := llm.Message{Role: llm.RoleAssistant}
	for i := range calls {
		m.Parts = append(m.Parts, llm.Part{Type: llm.PartToolCall, ToolCall: &calls[i]})
	}
	return m
}

func completeWith(result string) llm.Message {
	return toolCalls(toolCall(0, "complete", struct {
		Result string `json:"result"`
	}{result}))
}

// spawnAll is one assistant message spawning children #first..#first+n-1;
// chained makes each blocked_by the one before it.
func spawnAll(first int64, n int, chained bool) llm.Message {
	calls := make([]llm.ToolCall, n)
	for i := range calls {
		id := first + int64(i)
		in := spawnInput{Goal: fmt.Sprintf("part %d", id), Prompt: "Do this part and complete with its result."}
		if chained && i > 0 {
			in.BlockedBy = []string{fmt.Sprintf("#%d", id-1)}
		}
		calls[i] = toolCall(i, "spawn", in)
	}
	return toolCalls(calls...)
}

// rootAnswers answers the root: fan out, a draft, then the final synthesis.
func rootAnswers(fanOut llm.Message, turn int) (llm.Message, bool) {
	switch turn {
	case 0:
		return fanOut, true
	case 1:
		return completeWith("draft"), true
	case 2:
		return completeWith("final"), true
	}
	return llm.Message{}, false
}

// countingStore counts the write transactions of the store it wraps, so
// the figures can be read as "so many writes of so many µs each".
type countingStore struct {
	store.Store
	writes atomic.Int64
}

func (s *countingStore) count(err error) error { s.writes.Add(1); return err }

func (s *countingStore) CreateRun(ctx context.Context, r store.Run) error {
	return s.count(s.Store.CreateRun(ctx, r))
}

func (s *countingStore) Commit(ctx context.Context, r *store.Run, nodes ...store.Node) error {
	return s.count(s.Store.Commit(ctx, r, nodes...))
}

func (s *countingStore) CreateSession(ctx context.Context, sess store.Session) error {
	return s.count(s.Store.CreateSession(ctx, sess))
}

func (s *countingStore) SetSessionStatus(ctx context.Context, id, status string) error {
	return s.count(s.Store.SetSessionStatus(ctx, id, status))
}

func (s *countingStore) AppendMessages(ctx context.Context, id string, msgs ...llm.Message) (int64, error) {
	seq, err := s.Store.AppendMessages(ctx, id, msgs...)
	return seq, s.count(err)
}

func (s *countingStore) StartIntent(ctx context.Context, in store.Intent) error {
	return s.count(s.Store.StartIntent(ctx, in))
}

func (s *countingStore) FinishIntent(ctx context.Context, id, callID, result string, isError bool) error {
	return s.count(s.Store.FinishIntent(ctx, id, callID, result, isError))
}

func (s *countingStore) AddUsage(ctx context.Context, u store.UsageRecord) error {
	return s.count(s.Store.AddUsage(ctx, u))
}

func (s *countingStore) SaveCompaction(ctx context.Context, c store.Compaction) error {
	return s.count(s.Store.SaveCompaction(ctx, c))
}

// benchAgents is the benchmarks' tree.Agents: every node is a session of the
// one agent loop with the instant model and only the tree tools.
type benchAgents struct {
	store store.Store
	bus   *agent.Bus
	model llm.Provider
}

func (a *benchAgents) NewAgent(ctx context.Context, spec tree.AgentSpec) (*agent.Agent, error) {
	_, err := a.store.GetSession(ctx, spec.SessionID)
	resume := err == nil
	if errors.Is(err, store.ErrNotFound) {
		err = a.store.CreateSession(ctx, store.Session{ID: spec.SessionID, Title: spec.Title, Model: "bench/instant"})
	}
	if err != nil {
		return nil, err
	}
	ag := agent.New(agent.Config{
		SessionID: spec.SessionID, Model: "instant", ModelRef: "bench/instant", Provider: a.model,
		Tools: tool.NewRegistry(spec.Tools...), Store: a.store, Bus: a.bus, System: spec.System,
		Gate: spec.Gate, LoopLimit: -1, Compaction: agent.CompactionPolicy{Disabled: true},
	})
	if resume {
		if err := ag.Load(ctx); err != nil {
			return nil, err
		}
	}
	return ag, nil
}

func (a *benchAgents) Distill(_ context.Context, _, text string) (string, error) { return text, nil }

// benchEnv is one benchmark's engine on its own SQLite file.
type benchEnv struct {
	ctx    context.Context
	store  *countingStore
	bus    *agent.Bus
	broker *agent.Broker
	engine *tree.Engine
	runs   int

	mu        sync.Mutex     // guards completed
	completed map[string]int // run id → nodes that completed
}

func benchSetup(b *testing.B, answer answerFunc) *benchEnv {
	b.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "arbor.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	cs := &countingStore{Store: st}
	bus := agent.NewBus()
	env := &benchEnv{ctx: context.Background(), store: cs, bus: bus, broker: agent.NewBroker(bus), completed: map[string]int{}}
	env.engine = tree.New(tree.Options{
		Store: cs, Agents: &benchAgents{store: cs, bus: bus, model: &benchModel{answer: answer}},
		Bus: bus, Broker: env.broker,
	})
	bus.Subscribe(func(ev agent.Event) {
		if c, ok := ev.(*tree.NodeChanged); ok && c.Node.State == tree.StateComplete && c.From != tree.StateComplete {
			env.mu.Lock()
			env.completed[c.RunID]++
			env.mu.Unlock()
		}
	})
	return env
}

// create stores a new run and returns its id.
func (env *benchEnv) create(b *testing.B, maxParallel int) string {
	b.Helper()
	env.runs++
	id := fmt.Sprintf("bench-%d", env.runs)
	_, err := env.engine.Create(env.ctx, tree.RunOptions{ID: id, Goal: "benchmark goal", Model: "bench/instant", MaxParallel: maxParallel})
	if err != nil {
		b.Fatal(err)
	}
	return id
}

// drive runs id to its end and checks that it completed with result want
// and that exactly nodes nodes completed on the way.
func (env *benchEnv) drive(id, want string, nodes int) error {
	r, err := env.engine.Drive(env.ctx, id)
	if err != nil {
		return err
	}
	if r.Status != store.RunComplete || r.Result != want {
		return fmt.Errorf("run %s ended %s (result %q, error %q), want complete with %q", id, r.Status, r.Result, r.Error, want)
	}
	env.mu.Lock()
	got := env.completed[id]
	env.mu.Unlock()
	if got != nodes {
		return fmt.Errorf("run %s: %d nodes completed, want %d", id, got, nodes)
	}
	return nil
}

// driveAsync drives id on another goroutine; the channel gets drive's error.
func (env *benchEnv) driveAsync(id, want string, nodes int) <-chan error {
	done := make(chan error, 1)
	go func() { done <- env.drive(id, want, nodes) }()
	return done
}

// BenchmarkFanOutFanIn1000: the root spawns 1,000 children in one step,
// each completes at once, the root synthesizes. One op is one whole run.
func BenchmarkFanOutFanIn1000(b *testing.B) {
	const children = 1000
	fanOut := spawnAll(2, children, false)
	answer := func(_ context.Context, node int64, turn int) (llm.Message, error) {
		switch {
		case node == 1:
			if m, ok := rootAnswers(fanOut, turn); ok {
				return m, nil
			}
		case node > 1 && node <= children+1 && turn == 0:
			return completeWith(fmt.Sprintf("result of #%d", node)), nil
		}
		return noAnswer(node, turn)
	}
	for _, parallel := range []int{8, 64} {
		b.Run(fmt.Sprintf("parallel=%d", parallel), func(b *testing.B) {
			env := benchSetup(b, answer)
			runs := 0
			env.store.writes.Store(0)
			for b.Loop() {
				if err := env.drive(env.create(b, parallel), "final", children+1); err != nil {
					b.Fatal(err)
				}
				runs++
			}
			perRun := float64(b.Elapsed().Nanoseconds()) / float64(runs)
			b.ReportMetric(perRun/(children+1), "ns/node")
			b.ReportMetric(perRun/1e6, "ms/run")
			b.ReportMetric(float64(env.store.writes.Load())/float64(runs*(children+1)), "writes/node")
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
func BenchmarkDispatchLatency(b *testing.B) {
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
	env.bus.Subscribe(func(ev agent.Event) {
		c, ok := ev.(*tree.NodeChanged)
		if !ok || c.Node.State != tree.StateComplete {
			return
		}
		now := time.Now()
		clock.mu.Lock()
		if c.RunID == clock.run {
			clock.completed[c.Node.ID] = now
		}
		clock.mu.Unlock()
	})
	var total time.Duration
	hops := 0
	for b.Loop() {
		id := env.create(b, 0)
		clock.reset(id)
		if err := env.drive(id, "final", chain+1); err != nil {
			b.Fatal(err)
		}
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
