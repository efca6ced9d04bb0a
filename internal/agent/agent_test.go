package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/store/sqlite"
	"github.com/arbor-run/arbor/internal/tool"
)

// fakeProvider answers from a list of responses, in process. A response
// with block set waits for the request context to end.
type fakeProvider struct {
	mu    sync.Mutex
	turns []fakeTurn
	reqs  []*llm.Request
}

type fakeTurn struct {
	resp    llm.Response
	block   chan struct{} // closed when the call has started; the call then waits for ctx
	hold    chan struct{} // the call answers once it is closed
	err     error
	repeats bool // answer every later call with this turn too
}

func (p *fakeProvider) Name() string { return "fake" }

func (p *fakeProvider) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Event, error] {
	return func(yield func(llm.Event, error) bool) {
		p.mu.Lock()
		p.reqs = append(p.reqs, req)
		if len(p.turns) == 0 {
			p.mu.Unlock()
			yield(nil, errors.New("fake provider: script exhausted"))
			return
		}
		t := p.turns[0]
		if !t.repeats {
			p.turns = p.turns[1:]
		}
		p.mu.Unlock()
		if t.block != nil {
			close(t.block)
			<-ctx.Done()
			yield(nil, ctx.Err())
			return
		}
		if t.hold != nil {
			select {
			case <-t.hold:
			case <-ctx.Done():
				yield(nil, ctx.Err())
				return
			}
		}
		if t.err != nil {
			yield(nil, t.err)
			return
		}
		for _, w := range strings.SplitAfter(t.resp.Message.Text(), " ") {
			if w != "" && !yield(llm.TextDelta{Text: w}, nil) {
				return
			}
		}
		r := t.resp
		yield(llm.Done{Response: &r}, nil)
	}
}

func (p *fakeProvider) requests() []*llm.Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*llm.Request(nil), p.reqs...)
}

func text(s string) fakeTurn {
	return fakeTurn{resp: llm.Response{
		Message:    llm.Message{Role: llm.RoleAssistant, Parts: []llm.Part{llm.TextPart(s)}},
		StopReason: llm.StopEndTurn, Usage: llm.Usage{InputTokens: 100, OutputTokens: 10},
	}}
}

func calls(cs ...llm.ToolCall) fakeTurn {
	parts := make([]llm.Part, len(cs))
	for i := range cs {
		parts[i] = llm.Part{Type: llm.PartToolCall, ToolCall: &cs[i]}
	}
	return fakeTurn{resp: llm.Response{
		Message:    llm.Message{Role: llm.RoleAssistant, Parts: parts},
		StopReason: llm.StopToolUse, Usage: llm.Usage{InputTokens: 100, OutputTokens: 10},
	}}
}

func call(id, name, input string) llm.ToolCall {
	return llm.ToolCall{ID: id, Name: name, Input: json.RawMessage(input)}
}

type echoArgs struct {
	Text string `json:"text"`
}

type bundle struct {
	ctx      context.Context
	store    store.Store
	bus      *agent.Bus
	provider *fakeProvider
	events   *recorder
	agent    *agent.Agent
	cfg      agent.Config
	// toolStarted is closed by the "wait" tool when it starts.
	toolStarted chan struct{}
}

type recorder struct {
	sub    *agent.Subscription
	mu     sync.Mutex
	events []agent.Event
}

func (r *recorder) add(e agent.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// all returns every event published so far.
func (r *recorder) all() []agent.Event {
	r.sub.Flush()
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]agent.Event(nil), r.events...)
}

func setup(t *testing.T, turns ...fakeTurn) *bundle {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "arbor.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.CreateSession(ctx, store.Session{ID: "s1", Status: store.SessionIdle, CostKnown: true}); err != nil {
		t.Fatal(err)
	}
	b := &bundle{ctx: ctx, store: st, bus: agent.NewBus(), provider: &fakeProvider{turns: turns}, events: &recorder{}, toolStarted: make(chan struct{})}
	b.events.sub = b.bus.Subscribe(b.events.add)
	t.Cleanup(b.events.sub.Close)
	var once sync.Once
	echo := tool.New("echo", "Echo text back.", tool.KindRead, func(ctx context.Context, c tool.Call, a echoArgs) tool.Result {
		return tool.Result{Content: "echo: " + a.Text}
	})
	wait := tool.New("wait", "Wait until cancelled.", tool.KindRead, func(ctx context.Context, c tool.Call, a echoArgs) tool.Result {
		once.Do(func() { close(b.toolStarted) })
		<-ctx.Done()
		return tool.Result{Content: "stopped waiting", IsError: true}
	})
	price := llm.Price{InputPerMTok: 3, OutputPerMTok: 15}
	b.cfg = agent.Config{
		SessionID: "s1", Model: "fake-model", Provider: b.provider, System: "be brief",
		Tools: tool.NewRegistry(echo, wait), Store: st, Bus: b.bus, Price: &price,
	}
	b.agent = agent.New(b.cfg)
	return b
}

func (b *bundle) messages(t *testing.T) []llm.Message {
	t.Helper()
	recs, err := b.store.Messages(b.ctx, "s1", 0)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]llm.Message, len(recs))
	for i, r := range recs {
		out[i] = r.Message
	}
	return out
}

func results(m llm.Message) []llm.ToolResult {
	var out []llm.ToolResult
	for _, p := range m.Parts {
		if p.ToolResult != nil {
			out = append(out, *p.ToolResult)
		}
	}
	return out
}

func TestPlainTurn(t *testing.T) {
	t.Parallel()
	b := setup(t, text("hello there friend"))
	res := b.agent.Send(b.ctx, llm.UserText("hi"))
	if res.Outcome != agent.OutcomeCompleted || res.Text != "hello there friend" || res.Steps != 1 {
		t.Fatalf("result = %+v", res)
	}
	msgs := b.messages(t)
	if len(msgs) != 2 || msgs[0].Text() != "hi" || msgs[1].Role != llm.RoleAssistant {
		t.Fatalf("stored %+v", msgs)
	}
	req := b.provider.requests()[0]
	if req.System != "be brief" || req.Model != "fake-model" || len(req.Tools) != 2 {
		t.Fatalf("request = %+v", req)
	}
	var deltas []string
	var last uint64
	var kinds []string
	for _, e := range b.events.all() {
		m := agent.MetaOf(e)
		if m.Seq <= last || m.SessionID != "s1" {
			t.Fatalf("event %T meta %+v after seq %d", e, m, last)
		}
		last = m.Seq
		switch e := e.(type) {
		case *agent.TextDelta:
			deltas = append(deltas, e.Text)
		case *agent.StepStarted:
			kinds = append(kinds, "step")
		case *agent.AssistantMessage:
			kinds = append(kinds, "assistant")
		case *agent.UsageUpdated:
			kinds = append(kinds, "usage")
			if e.CallCost <= 0 || !e.CostKnown || e.Total.InputTokens != 100 {
				t.Fatalf("usage event %+v", e)
			}
		case *agent.Idle:
			kinds = append(kinds, "idle:"+string(e.Outcome))
		}
	}
	if len(deltas) != 3 || strings.Join(kinds, ",") != "step,assistant,usage,idle:completed" {
		t.Fatalf("deltas %q kinds %v", deltas, kinds)
	}
	s, err := b.store.GetSession(b.ctx, "s1")
	if err != nil || s.Status != store.SessionIdle || s.Usage.OutputTokens != 10 || s.CostUSD <= 0 {
		t.Fatalf("session %+v %v", s, err)
	}
}

func TestToolRoundTrip(t *testing.T) {
	t.Parallel()
	b := setup(t,
		calls(call("c1", "echo", `{"text":"a"}`), call("c2", "Echo", `{"text":"b"}`)),
		calls(call("c3", "nope", `{}`), call("c4", "echo", `{"txt":1}`)),
		text("done"))
	res := b.agent.Send(b.ctx, llm.UserText("go"))
	if res.Outcome != agent.OutcomeCompleted || res.Text != "done" || res.Steps != 3 {
		t.Fatalf("result = %+v", res)
	}
	msgs := b.messages(t)
	if len(msgs) != 6 {
		t.Fatalf("want 6 messages, got %d", len(msgs))
	}
	r := results(msgs[2])
	if len(r) != 2 || r[0].Content != "echo: a" || r[1].Content != "echo: b" || r[0].IsError {
		t.Fatalf("results %+v", r)
	}
	r = results(msgs[4])
	if !r[0].IsError || !strings.Contains(r[0].Content, "nope") || !r[1].IsError || !strings.Contains(r[1].Content, "txt") {
		t.Fatalf("bad calls should come back as error results naming what was wrong: %+v", r)
	}
	intents, err := b.store.Intents(b.ctx, "s1")
	if err != nil || len(intents) != 4 {
		t.Fatalf("intents %+v %v", intents, err)
	}
	for _, in := range intents {
		if in.Status != store.IntentFinished {
			t.Fatalf("intent %+v not finished", in)
		}
	}
	// The third request carries the second step's tool results.
	reqs := b.provider.requests()
	if got := results(reqs[2].Messages[4]); len(got) != 2 {
		t.Fatalf("third request messages: %+v", reqs[2].Messages)
	}
}

func TestSecretsRedactedFromToolOutput(t *testing.T) {
	t.Parallel()
	b := setup(t, calls(call("c1", "echo", `{"text":"key=sk-live-123456789"}`)), text("ok"))
	b.cfg.Secrets = []string{"sk-live-123456789"}
	a := agent.New(b.cfg)
	if res := a.Send(b.ctx, llm.UserText("go")); res.Outcome != agent.OutcomeCompleted {
		t.Fatalf("result %+v", res)
	}
	r := results(b.messages(t)[2])[0]
	if r.Content != "echo: key=[REDACTED]" {
		t.Fatalf("stored result %q", r.Content)
	}
	intents, _ := b.store.Intents(b.ctx, "s1")
	for _, e := range b.events.all() {
		if f, ok := e.(*agent.ToolCallFinished); ok && strings.Contains(f.Result, "sk-live") {
			t.Fatal("secret reached an event")
		}
	}
	if strings.Contains(intents[0].Result, "sk-live") {
		t.Fatal("secret reached the intent record")
	}
}

// stopOnce is a Stop hook that sends a turn back once with feedback.
type stopOnce struct{ feedback string }

func (h *stopOnce) Stopping(_ context.Context, s agent.StopCheck) string {
	if s.Active {
		return ""
	}
	return h.feedback
}

func (*stopOnce) Compacting(context.Context, agent.Compaction) string { return "" }

func (*stopOnce) Compacted(context.Context, agent.Compaction) string { return "" }

// TestSecretsRedactedFromStopHookFeedback: a Stop hook's feedback (a
// project's script, which may print anything) reaches the model and the
// transcript with the secrets redacted, as tool output does.
func TestSecretsRedactedFromStopHookFeedback(t *testing.T) {
	t.Parallel()
	b := setup(t, text("done"), text("done again"))
	b.cfg.Secrets = []string{"sk-live-123456789"}
	b.cfg.Hooks = &stopOnce{feedback: "the tests need ANTHROPIC_API_KEY=sk-live-123456789"}
	a := agent.New(b.cfg)
	if res := a.Send(b.ctx, llm.UserText("go")); res.Outcome != agent.OutcomeCompleted {
		t.Fatalf("result %+v", res)
	}
	msgs := b.messages(t)
	if len(msgs) < 3 || msgs[2].Text() != "Stop hook feedback: the tests need ANTHROPIC_API_KEY=[REDACTED]" {
		t.Fatalf("messages %+v", msgs)
	}
}

func TestCancelDuringTool(t *testing.T) {
	t.Parallel()
	b := setup(t, calls(call("c1", "wait", `{"text":""}`), call("c2", "echo", `{"text":"x"}`)))
	ctx, cancel := context.WithCancel(b.ctx)
	go func() { <-b.toolStarted; cancel() }()
	res := b.agent.Send(ctx, llm.UserText("go"))
	if res.Outcome != agent.OutcomeCancelled {
		t.Fatalf("result = %+v", res)
	}
	msgs := b.messages(t)
	if len(msgs) != 3 {
		t.Fatalf("want user, assistant, results; got %d", len(msgs))
	}
	r := results(msgs[2])
	if len(r) != 2 || !r[0].IsError || !strings.HasPrefix(r[0].Content, "cancelled") || !strings.HasPrefix(r[1].Content, "cancelled") {
		t.Fatalf("results %+v", r)
	}
	s, _ := b.store.GetSession(b.ctx, "s1")
	if s.Status != store.SessionInterrupted {
		t.Fatalf("status %q", s.Status)
	}
}

func TestCancelDuringModelCall(t *testing.T) {
	t.Parallel()
	started := make(chan struct{})
	b := setup(t, fakeTurn{block: started})
	ctx, cancel := context.WithCancel(b.ctx)
	go func() { <-started; cancel() }()
	res := b.agent.Send(ctx, llm.UserText("go"))
	if res.Outcome != agent.OutcomeCancelled {
		t.Fatalf("result = %+v", res)
	}
	if msgs := b.messages(t); len(msgs) != 1 {
		t.Fatalf("only the user message should be stored, got %+v", msgs)
	}
	if !b.agent.NeedsContinue() {
		t.Fatal("an unanswered user message should need a continue")
	}
}

func TestModelErrorFails(t *testing.T) {
	t.Parallel()
	b := setup(t, fakeTurn{err: &llm.APIError{Provider: "fake", StatusCode: 400, Message: "bad"}})
	res := b.agent.Send(b.ctx, llm.UserText("go"))
	if res.Outcome != agent.OutcomeFailed || !errors.Is(res.Err, llm.ErrInvalidRequest) {
		t.Fatalf("result = %+v", res)
	}
	var sawError bool
	for _, e := range b.events.all() {
		if _, ok := e.(*agent.Error); ok {
			sawError = true
		}
	}
	if !sawError {
		t.Fatal("no Error event")
	}
}

func TestMaxTurns(t *testing.T) {
	t.Parallel()
	turn := calls(call("", "echo", `{"text":"again"}`))
	turn.repeats = true
	b := setup(t, turn)
	b.cfg.MaxTurns = 2
	b.cfg.LoopLimit = -1
	a := agent.New(b.cfg)
	res := a.Send(b.ctx, llm.UserText("go"))
	if res.Outcome != agent.OutcomeMaxTurns || res.Steps != 2 {
		t.Fatalf("result = %+v", res)
	}
	// Calls without ids got one, so the transcript stays valid.
	for _, m := range b.messages(t) {
		for _, c := range m.ToolCalls() {
			if c.ID == "" {
				t.Fatal("tool call stored without an id")
			}
		}
	}
}

func TestLoopDetection(t *testing.T) {
	t.Parallel()
	turn := calls(call("", "echo", `{"text":"same"}`))
	turn.repeats = true
	b := setup(t, turn)
	res := b.agent.Send(b.ctx, llm.UserText("go"))
	if res.Outcome != agent.OutcomeLoop || res.Steps != 6 {
		t.Fatalf("result = %+v", res)
	}
	msgs := b.messages(t)
	warned := results(msgs[6])[0] // third call's result
	if !strings.Contains(warned.Content, "3 times in a row") {
		t.Fatalf("third result should warn: %q", warned.Content)
	}
	stopped := results(msgs[len(msgs)-1])[0]
	if !strings.HasPrefix(stopped.Content, "not run") {
		t.Fatalf("sixth call should not run: %q", stopped.Content)
	}
}

// TestCompactionIsGatedAndCharged: a compaction summary is a model call
// like a step: it passes the gate with an estimate before it starts, and
// is charged and recorded on the session after.
func TestCompactionIsGatedAndCharged(t *testing.T) {
	t.Parallel()
	b := setup(t, text("first answer"), text("the summary"), text("second answer"))
	var mu sync.Mutex
	var gates []llm.Usage
	var charged []llm.Usage
	cfg := b.cfg
	cfg.ContextWindow = 1 // every step compacts what it can
	cfg.Compaction = agent.CompactionPolicy{KeepRecent: 1}
	cfg.Gate = func(_ context.Context, est llm.Usage, cost float64) error {
		mu.Lock()
		defer mu.Unlock()
		if est.OutputTokens != agent.DefaultOutputEstimate || cost <= 0 {
			t.Errorf("estimate %+v $%v", est, cost)
		}
		gates = append(gates, est)
		return nil
	}
	cfg.Charge = func(u llm.Usage, _ float64) {
		mu.Lock()
		defer mu.Unlock()
		charged = append(charged, u)
	}
	ag := agent.New(cfg)
	if res := ag.Send(b.ctx, llm.UserText("hi")); res.Outcome != agent.OutcomeCompleted {
		t.Fatalf("first send %+v", res)
	}
	if res := ag.Send(b.ctx, llm.UserText("more")); res.Outcome != agent.OutcomeCompleted || res.Text != "second answer" {
		t.Fatalf("second send %+v", res)
	}
	if len(b.provider.requests()) != 3 {
		t.Fatalf("%d model calls, want 3 (step, summary, step)", len(b.provider.requests()))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(gates) != 3 || len(charged) != 3 {
		t.Fatalf("%d gates, %d charges; want 3 of each", len(gates), len(charged))
	}
	s, err := b.store.GetSession(b.ctx, "s1")
	if err != nil || s.Usage.OutputTokens != 30 {
		t.Fatalf("session usage %+v %v: the summary must be recorded", s.Usage, err)
	}
	if u, _, _ := ag.Usage(); u.OutputTokens != 30 {
		t.Fatalf("agent usage %+v", u)
	}
}

// TestInvalidToolArgumentsGoBackToTheModel: a call whose arguments were
// not valid JSON is not run; its result tells the model, and the turn
// goes on.
func TestInvalidToolArgumentsGoBackToTheModel(t *testing.T) {
	t.Parallel()
	bad := llm.ToolCall{ID: "c1", Name: "echo", Input: json.RawMessage(`{}`), InvalidInput: `{"text": "hi"`}
	b := setup(t, calls(bad), text("sorry, fixed"))
	res := b.agent.Send(b.ctx, llm.UserText("hi"))
	if res.Outcome != agent.OutcomeCompleted || res.Text != "sorry, fixed" {
		t.Fatalf("result %+v", res)
	}
	rs := results(b.messages(t)[2])
	if len(rs) != 1 || !rs[0].IsError || !strings.Contains(rs[0].Content, "not valid JSON") || !strings.Contains(rs[0].Content, `\"text\": \"hi\"`) {
		t.Fatalf("tool result %+v", rs)
	}
}
