package agent_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/store"
)

// writeLog records the store writes an agent makes, by kind.
type writeLog struct {
	agent.Store
	mu     sync.Mutex
	writes []string
}

func (w *writeLog) add(kind string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writes = append(w.writes, kind)
}

func (w *writeLog) SaveStep(ctx context.Context, st store.Step) (int64, error) {
	kind := "step"
	if st.Create != nil {
		kind = "create+" + kind
	}
	if st.Usage != nil {
		kind += "+usage"
	}
	if st.Status != "" {
		kind += "+" + string(st.Status)
	}
	w.add(kind)
	return w.Store.SaveStep(ctx, st)
}

func (w *writeLog) AppendMessages(ctx context.Context, id string, msgs ...llm.Message) (int64, error) {
	w.add("append")
	return w.Store.AppendMessages(ctx, id, msgs...)
}

func (w *writeLog) AddUsage(ctx context.Context, u store.UsageRecord) error {
	w.add("usage")
	return w.Store.AddUsage(ctx, u)
}

func (w *writeLog) SetSessionStatus(ctx context.Context, id string, s store.SessionStatus) error {
	w.add("status:" + string(s))
	return w.Store.SetSessionStatus(ctx, id, s)
}

func (w *writeLog) StartIntent(ctx context.Context, in store.Intent) error {
	w.add("intent")
	return w.Store.StartIntent(ctx, in)
}

func (w *writeLog) FinishIntent(ctx context.Context, id, call, res string, isErr bool) error {
	w.add("result")
	return w.Store.FinishIntent(ctx, id, call, res, isErr)
}

// TestTurnWrites pins the transactions a turn costs (a step's cost is its
// commits): a plain turn one (the message is stored with the answer), a
// turn with one tool five (the intent and its result are written around
// the tool, for crash safety). The session's status lands with the
// messages, never in a write of its own.
func TestTurnWrites(t *testing.T) {
	cases := []struct {
		name   string
		turns  []fakeTurn
		want   []string
		status store.SessionStatus
	}{
		{"plain", []fakeTurn{text("hi")},
			[]string{"step+usage+idle"}, store.SessionIdle},
		{"one tool", []fakeTurn{calls(call("c1", "echo", `{"text":"x"}`)), text("ok")},
			[]string{"step+usage+active", "intent", "result", "step", "step+usage+idle"}, store.SessionIdle},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := setup(t, c.turns...)
			log := &writeLog{Store: b.store}
			cfg := b.cfg
			cfg.Store = log
			a := agent.New(cfg)
			if r := a.Send(b.ctx, llm.UserText("go")); r.Outcome != agent.OutcomeCompleted {
				t.Fatalf("outcome %s: %v", r.Outcome, r.Err)
			}
			if got := log.writes; !slices.Equal(got, c.want) {
				t.Errorf("writes %q, want %q", got, c.want)
			}
			s, err := b.store.GetSession(b.ctx, "s1")
			if err != nil {
				t.Fatal(err)
			}
			if s.Status != c.status {
				t.Errorf("status %s, want %s", s.Status, c.status)
			}
			// A second turn on the same agent writes the same way.
			log.writes = nil
			b.provider.mu.Lock()
			b.provider.turns = append(b.provider.turns, c.turns...)
			b.provider.mu.Unlock()
			if r := a.Send(b.ctx, llm.UserText("again")); r.Outcome != agent.OutcomeCompleted {
				t.Fatalf("second outcome %s: %v", r.Outcome, r.Err)
			}
			if got := log.writes; !slices.Equal(got, c.want) {
				t.Errorf("second turn writes %q, want %q", got, c.want)
			}
		})
	}
}

// TestSessionCreatedWithTheFirstStep: an agent whose session is not
// stored yet (Config.Create) stores it with its first message, in the same
// transaction, and writes the rest of the turn as usual (here the answer,
// in that same transaction).
func TestSessionCreatedWithTheFirstStep(t *testing.T) {
	b := setup(t, text("hi"))
	log := &writeLog{Store: b.store}
	cfg := b.cfg
	cfg.Store = log
	cfg.SessionID = "new"
	cfg.Create = &store.Session{ID: "new", Title: "made with its first step", Model: "test/model"}
	a := agent.New(cfg)
	if r := a.Send(b.ctx, llm.UserText("go")); r.Outcome != agent.OutcomeCompleted {
		t.Fatalf("outcome %s: %v", r.Outcome, r.Err)
	}
	if want := []string{"create+step+usage+idle"}; !slices.Equal(log.writes, want) {
		t.Errorf("writes %q, want %q", log.writes, want)
	}
	s, err := b.store.GetSession(b.ctx, "new")
	if err != nil {
		t.Fatal(err)
	}
	if s.Title != "made with its first step" || s.Status != store.SessionIdle || s.Usage.OutputTokens == 0 {
		t.Errorf("session %+v", s)
	}
	// EnsureStored has nothing left to write.
	if err := a.EnsureStored(b.ctx); err != nil || len(log.writes) != 1 {
		t.Errorf("EnsureStored: %v, writes %q", err, log.writes)
	}

	// An agent that must write before its first step stores it then.
	cfg.SessionID = "early"
	cfg.Create = &store.Session{ID: "early", Model: "test/model"}
	if err := agent.New(cfg).EnsureStored(b.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.store.GetSession(b.ctx, "early"); err != nil {
		t.Fatal(err)
	}
}

// TestFlushBeforeToolResults: Config.Flush runs after a step's tools and
// before their results are stored; when it fails, the turn fails and the
// results are not stored (the transcript never claims an effect the store
// lost).
func TestFlushBeforeToolResults(t *testing.T) {
	b := setup(t, calls(call("c1", "echo", `{"text":"x"}`)), text("ok"))
	log := &writeLog{Store: b.store}
	cfg := b.cfg
	cfg.Store = log
	cfg.Flush = func(context.Context) error { log.add("flush"); return nil }
	if r := agent.New(cfg).Send(b.ctx, llm.UserText("go")); r.Outcome != agent.OutcomeCompleted {
		t.Fatalf("outcome %s: %v", r.Outcome, r.Err)
	}
	want := []string{"step+usage+active", "intent", "result", "flush", "step", "step+usage+idle"}
	if !slices.Equal(log.writes, want) {
		t.Errorf("writes %q, want %q", log.writes, want)
	}

	b = setup(t, calls(call("c1", "echo", `{"text":"x"}`)), text("ok"))
	cfg = b.cfg
	cfg.Flush = func(context.Context) error { return errors.New("disk full") }
	r := agent.New(cfg).Send(b.ctx, llm.UserText("go"))
	if r.Outcome != agent.OutcomeFailed || r.Err == nil || !strings.Contains(r.Err.Error(), "disk full") {
		t.Fatalf("result %+v, want failed with the flush's error", r)
	}
	recs, err := b.store.Messages(b.ctx, "s1", 0)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(recs); n != 2 {
		t.Fatalf("%d messages stored, want 2 (the prompt and the call, no results)", n)
	}
}

// TestResendableMessageStoredWithTheAnswer: with Config.Resendable, Send's
// message is stored with the answer of the call it starts, in one
// transaction: a tree node's first turn is one commit with its session. A
// turn that ends before the answer (a failed call, Ctrl-C) stores the
// session and the message with its status in one write, so a resume finds
// them; Continue then asks the model again.
func TestResendableMessageStoredWithTheAnswer(t *testing.T) {
	b := setup(t, fakeTurn{err: errors.New("bad gateway")}, text("hi"), text("again"))
	log := &writeLog{Store: b.store}
	cfg := b.cfg
	cfg.Store = log
	cfg.SessionID = "node"
	cfg.Create = &store.Session{ID: "node", Model: "test/model"}
	cfg.Resendable = true
	a := agent.New(cfg)
	if r := a.Send(b.ctx, llm.UserText("first")); r.Outcome != agent.OutcomeFailed {
		t.Fatalf("outcome %s, want failed", r.Outcome)
	}
	if want := []string{"create+step+failed"}; !slices.Equal(log.writes, want) {
		t.Errorf("writes of the failed turn %q, want %q", log.writes, want)
	}
	if s, err := b.store.GetSession(b.ctx, "node"); err != nil || s.Status != store.SessionFailed {
		t.Fatalf("after a failed first call: %+v, %v; want the session stored as failed", s, err)
	}
	log.writes = nil
	if r := a.Continue(b.ctx); r.Outcome != agent.OutcomeCompleted {
		t.Fatalf("outcome %s: %v", r.Outcome, r.Err)
	}
	if r := a.Send(b.ctx, llm.UserText("second")); r.Outcome != agent.OutcomeCompleted {
		t.Fatalf("outcome %s: %v", r.Outcome, r.Err)
	}
	if want := []string{"status:active", "step+usage+idle", "step+usage+idle"}; !slices.Equal(log.writes, want) {
		t.Errorf("writes %q, want %q", log.writes, want)
	}
	got := b.transcript(t, "node")
	if want := []string{"1:user:first", "2:assistant:hi", "3:user:second", "4:assistant:again"}; !slices.Equal(got, want) {
		t.Errorf("stored %q, want %q", got, want)
	}
	// A reload sees what was stored, and the agent goes on from there.
	if err := a.Load(b.ctx); err != nil || len(a.History()) != 4 {
		t.Fatalf("load: %v, %d messages", err, len(a.History()))
	}
}

// TestSlowAnswerFindsTheMessageStored: a message of Send's that cannot be
// made again (not Resendable) is held for its answer only briefly: while
// the model takes longer, the message is written on its own, with the
// active status, and the answer then follows in a second write.
func TestSlowAnswerFindsTheMessageStored(t *testing.T) {
	b := setup(t, slowText("late"))
	log := &writeLog{Store: b.store}
	hold, done := b.sendVia(log, "go")
	// The call waits until the message is stored (or the test's deadline).
	stored := waitFor(t, func() bool { return len(b.messages(t)) == 1 })
	close(hold)
	r := <-done
	if !stored {
		t.Fatal("the message was not stored while its answer was slow")
	}
	if r.Outcome != agent.OutcomeCompleted {
		t.Fatalf("outcome %s: %v", r.Outcome, r.Err)
	}
	if want := []string{"step+active", "step+usage+idle"}; !slices.Equal(log.writes, want) {
		t.Errorf("writes %q, want %q", log.writes, want)
	}
	got := b.transcript(t, "s1")
	if want := []string{"1:user:go", "2:assistant:late"}; !slices.Equal(got, want) {
		t.Errorf("stored %q, want %q", got, want)
	}
	if s, err := b.store.GetSession(b.ctx, "s1"); err != nil || s.Status != store.SessionIdle {
		t.Errorf("session %+v, %v; want idle", s, err)
	}
}

// TestHeldMessageWriteFails: when the held message's own write fails, it
// stays held and goes with the answer's write, which reports the failure:
// the turn fails and the store has neither.
func TestHeldMessageWriteFails(t *testing.T) {
	b := setup(t, slowText("late"))
	fail := &failingSteps{Store: b.store, tried: make(chan struct{}, 4)}
	hold, done := b.sendVia(fail, "go")
	<-fail.tried // the flush's write
	close(hold)
	r := <-done
	if r.Outcome != agent.OutcomeFailed || r.Err == nil || !strings.Contains(r.Err.Error(), "disk full") {
		t.Fatalf("result %+v, want failed with the store's error", r)
	}
	if n := len(b.messages(t)); n != 0 {
		t.Fatalf("%d messages stored, want 0", n)
	}
	if got := len(fail.tried); got < 1 {
		t.Fatalf("the answer's write was not tried (%d)", got)
	}
}

// failingSteps fails every SaveStep and SetSessionStatus.
type failingSteps struct {
	agent.Store
	tried chan struct{}
}

func (f *failingSteps) SaveStep(context.Context, store.Step) (int64, error) {
	f.tried <- struct{}{}
	return 0, errors.New("disk full")
}

func (f *failingSteps) SetSessionStatus(context.Context, string, store.SessionStatus) error {
	return errors.New("disk full")
}

// waitFor polls cond until it holds or ten seconds pass, and reports
// whether it held: it waits for an event, it times nothing.
func waitFor(t *testing.T, cond func() bool) bool {
	t.Helper()
	for range 2000 {
		if cond() {
			return true
		}
		time.Sleep(5 * time.Millisecond)
	}
	return false
}

// slowText is a turn answering s once its hold is closed (sendVia).
func slowText(s string) fakeTurn {
	t := text(s)
	t.hold = make(chan struct{})
	return t
}

// sendVia sends msg on a new agent of b's config writing to st, on a
// goroutine: it returns the hold of the provider's next turn (slowText),
// which the caller closes to let the model answer, and the Send's result.
func (b *bundle) sendVia(st agent.Store, msg string) (hold chan struct{}, done <-chan agent.Result) {
	b.provider.mu.Lock()
	hold = b.provider.turns[0].hold
	b.provider.mu.Unlock()
	cfg := b.cfg
	cfg.Store = st
	a := agent.New(cfg)
	res := make(chan agent.Result, 1)
	go func() { res <- a.Send(b.ctx, llm.UserText(msg)) }()
	return hold, res
}

// transcript is session's stored messages as "seq:role:text".
func (b *bundle) transcript(t *testing.T, session string) []string {
	t.Helper()
	recs, err := b.store.Messages(b.ctx, session, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		got = append(got, fmt.Sprintf("%d:%s:%s", r.Seq, r.Message.Role, r.Message.Text()))
	}
	return got
}
