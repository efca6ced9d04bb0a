package owner_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/owner"
	"github.com/arbor-run/arbor/internal/tool"
	"github.com/arbor-run/arbor/internal/tree"
)

// turnOwner is an owner endpoint with one registered turn whose engine
// side records what the remote worker asked of it.
type turnOwner struct {
	addr   string
	turns  *owner.Turns
	bus    *agent.Bus
	broker *agent.Broker
	turn   *owner.Turn
	remove func()

	mu      sync.Mutex
	charged []llm.Usage
	flushes int
	drafts  []string
	calls   []string // tool call ids
}

func newTurnOwner(t *testing.T, token string) *turnOwner {
	t.Helper()
	o := &turnOwner{turns: &owner.Turns{}, bus: agent.NewBus()}
	o.broker = agent.NewBroker(o.bus)
	complete := tool.New("complete", "Finish.", tool.KindInteract, func(_ context.Context, c tool.Call, a struct {
		Result string `json:"result"`
	}) tool.Result {
		o.mu.Lock()
		o.calls = append(o.calls, c.ID)
		o.mu.Unlock()
		return tool.Result{Content: "Draft recorded: " + a.Result, EndTurn: true}
	})
	rt := tree.RemoteTurn{
		Spec: tree.AgentSpec{
			RunID: "r1", NodeID: 3, SessionID: "r1.3", Title: "#3 leaf", System: "be brief", Fresh: true,
			Tools: []tool.Tool{complete},
			Gate: func(ctx context.Context, est llm.Usage, cost float64) error {
				if est.InputTokens > 1000 {
					return fmt.Errorf("run budget: %w", tree.ErrBudgetExhausted)
				}
				return nil
			},
			Charge: func(u llm.Usage, cost float64) {
				o.mu.Lock()
				o.charged = append(o.charged, u)
				o.mu.Unlock()
			},
			Flush: func(context.Context) error {
				o.mu.Lock()
				o.flushes++
				o.mu.Unlock()
				return nil
			},
		},
		Input: tree.TurnInput{
			Notice: "your children ended",
			Prompt: func(context.Context) (string, error) { return "do the leaf", nil },
			RecoverDraft: func(d string) {
				o.mu.Lock()
				o.drafts = append(o.drafts, d)
				o.mu.Unlock()
			},
		},
		Attempt: 1,
	}
	o.turn, o.remove = o.turns.Add("turn-1", rt)
	addr, stop, err := owner.ServeTCP(t.Context(), owner.Options{RunID: "r1", Bus: o.bus, Broker: o.broker, Turns: o.turns, Token: token}, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	o.addr = addr
	return o
}

func (o *turnOwner) client(token, turn string) owner.TurnClient {
	return owner.TurnClient{Client: owner.Client{Socket: o.addr, Network: "tcp", Token: token}, Turn: turn}
}

// pooled is client with its connections reused from one request to the
// next, as a worker's turn does.
func (o *turnOwner) pooled(t *testing.T, token, turn string) owner.TurnClient {
	c := o.client(token, turn)
	c.Pool = &owner.Pool{}
	t.Cleanup(c.Pool.Close)
	return c
}

func TestRemoteTurnReachesItsOwner(t *testing.T) {
	o := newTurnOwner(t, "secret")
	c := o.pooled(t, "secret", "turn-1")
	ctx := t.Context()

	spec, err := c.Spec(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if spec.Session != "r1.3" || spec.Title != "#3 leaf" || spec.System != "be brief" || !spec.Fresh ||
		spec.Notice != "your children ended" || spec.Prompt != "do the leaf" || len(spec.Tools) != 1 || spec.Tools[0].Name != "complete" {
		t.Fatalf("spec: %+v", spec)
	}
	if p, err := c.Prompt(ctx); err != nil || p != "do the leaf" {
		t.Fatalf("prompt: %q %v", p, err)
	}
	// The gate's refusal keeps its sentinel across the wire.
	if err := c.Gate(ctx, llm.Usage{InputTokens: 10}, 0); err != nil {
		t.Fatalf("gate: %v", err)
	}
	if err := c.Gate(ctx, llm.Usage{InputTokens: 5000}, 0); !errors.Is(err, tree.ErrBudgetExhausted) {
		t.Fatalf("gate over budget: %v, want ErrBudgetExhausted", err)
	}
	if err := c.Charge(ctx, llm.Usage{InputTokens: 7, OutputTokens: 3}, 0.01); err != nil {
		t.Fatal(err)
	}
	if err := c.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Draft(ctx, "recovered"); err != nil {
		t.Fatal(err)
	}
	// A tree tool's result keeps EndTurn (complete ends the turn).
	res, err := c.TreeTool(ctx, "complete", tool.Call{ID: "call_9", Input: json.RawMessage(`{"result":"42"}`)})
	if err != nil || res.Content != "Draft recorded: 42" || !res.EndTurn || res.IsError {
		t.Fatalf("tool: %+v %v", res, err)
	}
	if _, err := c.TreeTool(ctx, "shell", tool.Call{ID: "call_10"}); !errors.Is(err, owner.ErrBadRequest) {
		t.Fatalf("unknown tool: %v", err)
	}
	o.mu.Lock()
	if len(o.charged) != 1 || o.charged[0].InputTokens != 7 || o.flushes != 1 || len(o.drafts) != 1 || o.drafts[0] != "recovered" ||
		len(o.calls) != 1 || o.calls[0] != "call_9" {
		t.Fatalf("owner side: charged %v flushes %d drafts %v calls %v", o.charged, o.flushes, o.drafts, o.calls)
	}
	o.mu.Unlock()

	// Events land on the owner's bus, in order, deltas left out.
	got := make(chan agent.Event, 8)
	sub := o.bus.Subscribe(func(ev agent.Event) { got <- ev })
	defer sub.Close()
	msg := &agent.AssistantMessage{Message: llm.Message{Role: llm.RoleAssistant, Parts: []llm.Part{{Type: llm.PartText, Text: "hi"}}}}
	msg.SessionID = "r1.3"
	delta := &agent.TextDelta{Text: "h"}
	// What a hook of the turn said for the person reaches the driver's
	// front ends too.
	said := &agent.HookMessage{Text: "Stop says: tests pass", Level: agent.LevelNotice}
	said.SessionID = "r1.3"
	if err := c.Publish(ctx, []agent.Event{delta, said, msg}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"hook", "message"} {
		select {
		case ev := <-got:
			hm, isHook := ev.(*agent.HookMessage)
			am, isMsg := ev.(*agent.AssistantMessage)
			switch {
			case want == "hook" && isHook && hm.SessionID == "r1.3" && hm.Text == "Stop says: tests pass" && hm.Level == agent.LevelNotice:
			case want == "message" && isMsg && am.SessionID == "r1.3" && am.Message.Text() == "hi":
			default:
				t.Fatalf("event: %#v, want the %s", ev, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("no %s reached the owner's bus", want)
		}
	}

	// The end arrives once; the result's error keeps its sentinel.
	if err := c.End(ctx, agent.Result{Outcome: agent.OutcomeFailed, Err: fmt.Errorf("model: %w", llm.ErrRateLimited)}); err != nil {
		t.Fatal(err)
	}
	if err := c.End(ctx, agent.Result{Outcome: agent.OutcomeCompleted}); err != nil {
		t.Fatal(err)
	}
	end := <-o.turn.Ended()
	if r := end.Result(); r.Outcome != agent.OutcomeFailed || !llm.Retryable(r.Err) {
		t.Fatalf("end: %+v", r)
	}
	select {
	case e := <-o.turn.Ended():
		t.Fatalf("a second end was delivered: %+v", e)
	default:
	}
}

func TestRemoteTurnRefusals(t *testing.T) {
	o := newTurnOwner(t, "secret")
	ctx := t.Context()
	for _, tok := range []string{"", "wrong"} {
		if _, err := o.client(tok, "turn-1").Spec(ctx); !errors.Is(err, owner.ErrUnauthorized) {
			t.Fatalf("token %q: %v, want ErrUnauthorized", tok, err)
		}
	}
	if err := o.client("secret", "turn-2").Ping(ctx); !errors.Is(err, owner.ErrStaleTurn) {
		t.Fatalf("unknown turn: %v, want ErrStaleTurn", err)
	}
	if err := o.client("secret", "turn-1").Ping(ctx); err != nil {
		t.Fatal(err)
	}
	o.remove()
	if err := o.client("secret", "turn-1").Ping(ctx); !errors.Is(err, owner.ErrStaleTurn) {
		t.Fatalf("removed turn: %v, want ErrStaleTurn", err)
	}
	// Without a token a TCP endpoint is refused outright.
	if _, _, err := owner.ServeTCP(ctx, owner.Options{Turns: o.turns}, "127.0.0.1:0"); err == nil {
		t.Fatal("ServeTCP without a token served")
	}
	// Nothing listening: ErrUnreachable, so the worker ends the turn.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c := owner.TurnClient{Client: owner.Client{Socket: addr, Network: "tcp", Token: "secret"}, Turn: "turn-1"}
	if err := c.Ping(ctx); !errors.Is(err, owner.ErrUnreachable) {
		t.Fatalf("no owner: %v, want ErrUnreachable", err)
	}
}

// TestRemoteInteractionWaitsForTheOwnersBroker: an approval forwarded by
// a turn's worker is pending on the owner's broker (where its front ends
// see it) until resolved there, and a forward whose worker goes away is
// withdrawn.
func TestRemoteInteractionWaitsForTheOwnersBroker(t *testing.T) {
	o := newTurnOwner(t, "secret")
	c := o.pooled(t, "secret", "turn-1")
	ctx := t.Context()
	type outcome struct {
		resp agent.Response
		err  error
	}
	done := make(chan outcome, 1)
	go func() {
		resp, err := c.Interact(ctx, agent.Interaction{Kind: agent.KindApproval, SessionID: "r1.3",
			Approval: &tool.ApprovalRequest{CallID: "c1", Tool: "write_file", Kind: tool.KindWrite, Input: json.RawMessage(`{"path":"a.txt"}`)}})
		done <- outcome{resp, err}
	}()
	var pending []agent.Interaction
	deadline := time.Now().Add(5 * time.Second)
	for len(pending) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		pending = o.broker.Pending()
	}
	if len(pending) != 1 || pending[0].SessionID != "r1.3" || pending[0].Approval == nil || pending[0].Approval.Tool != "write_file" {
		t.Fatalf("pending on the owner: %+v", pending)
	}
	if err := o.broker.Resolve(pending[0].ID, agent.Response{Approval: &tool.Approval{Allow: true, Message: "go"}}); err != nil {
		t.Fatal(err)
	}
	out := <-done
	if out.err != nil || out.resp.Approval == nil || !out.resp.Approval.Allow || out.resp.Approval.Message != "go" {
		t.Fatalf("forwarded approval: %+v %v", out.resp, out.err)
	}

	// A question whose worker gives up is withdrawn from the owner.
	qctx, cancel := context.WithCancel(ctx)
	go func() {
		_, err := c.Interact(qctx, agent.Interaction{Kind: agent.KindQuestion, SessionID: "r1.3", Question: &tool.Question{Question: "Which region?"}})
		done <- outcome{err: err}
	}()
	for len(o.broker.Pending()) == 0 {
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	deadline = time.Now().Add(5 * time.Second)
	for len(o.broker.Pending()) > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if p := o.broker.Pending(); len(p) != 0 {
		t.Fatalf("the abandoned question is still pending: %+v", p)
	}
}
