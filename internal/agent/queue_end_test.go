package agent_test

import (
	"context"
	"testing"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/tool"
)

// heldStore holds every queued step until released, so the test sees what
// is and is not stored while a turn's last write waits.
type heldStore struct {
	agent.Store
	q       agent.StepQueuer
	release chan struct{}
	queued  int
}

func (h *heldStore) QueueStep(ctx context.Context, st store.Step) func() (int64, error) {
	h.queued++
	wait := h.q.QueueStep(ctx, st)
	return func() (int64, error) {
		<-h.release
		return wait()
	}
}

// TestQueueEnd: with Config.QueueEnd, the results of a tool that ends the
// turn are queued, not waited for; Send returns with Result.Stored, Idle
// is announced only once they are stored, and the next turn goes on from
// the right seqs. With an idempotent tool the step's answer (with the held
// prompt and the session's creation) is queued too; a tool that is not
// idempotent runs only once the answer is stored.
func TestQueueEnd(t *testing.T) {
	t.Run("tool not idempotent", func(t *testing.T) { testQueueEnd(t, false) })
	t.Run("idempotent tool", func(t *testing.T) { testQueueEnd(t, true) })
}

func testQueueEnd(t *testing.T, idem bool) {
	b := setup(t, calls(call("c1", "finish", `{}`)), text("next turn"))
	var finish tool.Tool
	finish = tool.New("finish", "End the turn.", tool.KindRead, func(context.Context, tool.Call, struct{}) tool.Result {
		if got := len(b.messages(t)); !idem && got != 2 {
			t.Errorf("the tool ran with %d messages stored, want 2 (prompt and answer)", got)
		}
		return tool.Result{Content: "finished", EndTurn: true}
	})
	if idem {
		finish = tool.Idempotent(finish)
	}
	held := &heldStore{Store: b.store, q: b.store.(agent.StepQueuer), release: make(chan struct{})}
	cfg := b.cfg
	cfg.Store, cfg.QueueEnd, cfg.Resendable = held, true, true
	cfg.Tools = tool.NewRegistry(finish)
	a := agent.New(cfg)

	r := a.Send(b.ctx, llm.UserText("go"))
	if r.Outcome != agent.OutcomeCompleted || !r.EndedByTool || r.Stored == nil {
		t.Fatalf("Send = %+v, want completed by a tool with Stored set", r)
	}
	queued, stored := 1, 2 // the tool's result; prompt and answer
	if idem {
		queued, stored = 2, 0 // the answer too
	}
	if held.queued != queued {
		t.Fatalf("%d steps queued, want %d", held.queued, queued)
	}
	if got := b.messages(t); len(got) != stored {
		t.Fatalf("%d messages stored before Stored, want %d", len(got), stored)
	}
	for _, ev := range b.events.all() {
		if _, ok := ev.(*agent.Idle); ok {
			t.Fatal("Idle announced before the turn's last write was stored")
		}
	}
	close(held.release)
	if err := r.Stored(); err != nil {
		t.Fatal(err)
	}
	if got := b.messages(t); len(got) != 3 || len(results(got[2])) != 1 {
		t.Fatalf("messages after Stored = %+v, want prompt, call, result", got)
	}
	idle := 0
	for _, ev := range b.events.all() {
		if _, ok := ev.(*agent.Idle); ok {
			idle++
		}
	}
	if idle != 1 {
		t.Fatalf("%d Idle events after Stored, want 1", idle)
	}
	if sess, err := b.store.GetSession(b.ctx, "s1"); err != nil || sess.Status != store.SessionIdle {
		t.Fatalf("session after the turn: %+v, %v; want idle", sess, err)
	}

	// The next turn numbers its messages after the queued ones.
	if r := a.Send(b.ctx, llm.UserText("again")); r.Outcome != agent.OutcomeCompleted || r.Stored != nil {
		t.Fatalf("second Send = %+v, want completed with nothing queued", r)
	}
	recs, err := b.store.Messages(b.ctx, "s1", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 5 || recs[4].Seq != 5 || recs[4].Message.Text() != "next turn" {
		t.Fatalf("transcript after the second turn: %d messages, last %+v", len(recs), recs[len(recs)-1])
	}
}
