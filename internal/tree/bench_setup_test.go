//go:build unix

package tree_test

// Scaffolding of the engine benchmarks (bench_test.go): an instant
// in-process model, node agents as the app builds them, a write-counting
// store.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
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

func (s *countingStore) CreateRun(ctx context.Context, r store.Run, nodes ...store.Node) error {
	return s.count(s.Store.CreateRun(ctx, r, nodes...))
}

func (s *countingStore) Commit(ctx context.Context, r *store.Run, nodes ...store.Node) error {
	return s.count(s.Store.Commit(ctx, r, nodes...))
}

// CommitAsync counts like Commit; the sqlite store queues it (group commit).
func (s *countingStore) CommitAsync(ctx context.Context, r *store.Run, nodes ...store.Node) func() error {
	s.writes.Add(1)
	return s.Store.(tree.AsyncCommitter).CommitAsync(ctx, r, nodes...)
}

// QueueStep counts like SaveStep; the sqlite store queues it.
func (s *countingStore) QueueStep(ctx context.Context, st store.Step) func() (int64, error) {
	s.writes.Add(1)
	return s.Store.(agent.StepQueuer).QueueStep(ctx, st)
}

func (s *countingStore) CreateSession(ctx context.Context, sess store.Session) error {
	return s.count(s.Store.CreateSession(ctx, sess))
}

func (s *countingStore) SetSessionStatus(ctx context.Context, id string, status store.SessionStatus) error {
	return s.count(s.Store.SetSessionStatus(ctx, id, status))
}

func (s *countingStore) AppendMessages(ctx context.Context, id string, msgs ...llm.Message) (int64, error) {
	seq, err := s.Store.AppendMessages(ctx, id, msgs...)
	return seq, s.count(err)
}

func (s *countingStore) SaveStep(ctx context.Context, st store.Step) (int64, error) {
	seq, err := s.Store.SaveStep(ctx, st)
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
	err := store.ErrNotFound
	if !spec.Fresh {
		_, err = a.store.GetSession(ctx, spec.SessionID)
	}
	resume := err == nil
	var create *store.Session
	if errors.Is(err, store.ErrNotFound) {
		// As the app does: stored with the first step.
		create, err = &store.Session{ID: spec.SessionID, Title: spec.Title, Model: "bench/instant", RunID: spec.RunID, NodeID: spec.NodeID}, nil
	}
	if err != nil {
		return nil, err
	}
	ag := agent.New(agent.Config{Create: create,
		SessionID: spec.SessionID, Model: "instant", ModelRef: "bench/instant", Provider: a.model,
		Tools: tool.NewRegistry(spec.Tools...), Store: a.store, Bus: a.bus, System: spec.System,
		Gate: spec.Gate, Flush: spec.Flush, Resendable: true, QueueEnd: spec.QueueEnd, LoopLimit: -1, Compaction: agent.CompactionPolicy{Disabled: true},
	})
	if resume {
		if err := ag.Load(ctx); err != nil {
			return nil, err
		}
	}
	return ag, nil
}

func (a *benchAgents) Distill(_ context.Context, _ tree.AgentSpec, _, text string) (string, error) {
	return text, nil
}

// benchEnv is one benchmark's engine on its own SQLite file.
type benchEnv struct {
	ctx    context.Context
	store  *countingStore
	sqlite *sqlite.Store // the store under store, for its WriteStats
	bus    *agent.Bus
	broker *agent.Broker
	engine *tree.Engine
	runs   int
	// counter counts completions; drive flushes it before reading.
	counter *agent.Subscription

	mu        sync.Mutex     // guards completed
	completed map[string]int // run id → nodes that completed
}

func benchSetup(b testing.TB, answer answerFunc) *benchEnv {
	b.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(b.TempDir(), "arbor.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	cs := &countingStore{Store: st}
	bus := agent.NewBus()
	env := &benchEnv{ctx: context.Background(), store: cs, sqlite: st, bus: bus, broker: agent.NewBroker(bus), completed: map[string]int{}}
	env.engine = tree.New(tree.Options{
		Store: cs, Agents: &benchAgents{store: cs, bus: bus, model: &benchModel{answer: answer}},
		Bus: bus, Broker: env.broker,
	})
	env.counter = bus.Subscribe(func(ev agent.Event) {
		if c, ok := ev.(*tree.NodeChanged); ok && c.Node.State == tree.StateComplete && c.From != tree.StateComplete {
			env.mu.Lock()
			env.completed[c.RunID]++
			env.mu.Unlock()
		}
	})
	b.Cleanup(env.counter.Close)
	return env
}

// slowSubscriber adds a subscriber that takes per for every event, as a
// client that reads its output slowly would; the engine must not notice.
// It is never waited for.
func (env *benchEnv) slowSubscriber(per time.Duration) {
	env.bus.Subscribe(func(agent.Event) { time.Sleep(per) })
}

// create stores a new run and returns its id.
func (env *benchEnv) create(b testing.TB, maxParallel int) string {
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
	env.counter.Flush()
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
