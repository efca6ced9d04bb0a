package tree_test

import (
	"errors"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/tree"
)

// TestIdleHostedLeaseSleeps hosts a run with a short heartbeat: while no
// child runs, the lease is renewed for the idle TTL (the heartbeat sleeps
// a third of it) and stays exclusive; a child agent that starts brings
// the short beat back.
func TestIdleHostedLeaseSleeps(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, setupOpts{respond: func(llmtest.Request) llmtest.Turn {
		return llmtest.Turn{Text: "never seen", Fault: &llmtest.Fault{Kind: llmtest.FaultStall}}
	}})
	tree.SetHeartbeat(b.engine, 5*time.Millisecond)
	tree.SetIdleLeaseTTL(b.engine, time.Hour)
	const id = "sess-idle"
	h, err := b.engine.Host(b.ctx, tree.HostOptions{ID: id, SessionID: id, Workspace: b.app.Workspace})
	if err != nil {
		t.Fatal(err)
	}
	h.Start()
	defer h.Close()
	key := store.RunLeaseKey(id)
	expires := func() time.Duration {
		l, err := b.app.Store.GetLease(b.ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		return time.Until(l.Expires)
	}
	for expires() < 30*time.Minute { // the first beat finds the run idle
	}

	// Idle, the lease is as exclusive as a busy one.
	other := tree.New(tree.Options{Store: b.app.Store})
	if _, err := other.Host(b.ctx, tree.HostOptions{ID: id, SessionID: id}); !errors.Is(err, store.ErrLeaseHeld) {
		t.Fatalf("a second Host of an idle hosted run: %v, want ErrLeaseHeld", err)
	}

	// A child that starts (its model stalls, so it keeps running) wakes
	// the heartbeat, which renews for the short TTL again.
	if r := hostTool(t, h, "spawn", map[string]any{"goal": "wait", "prompt": "wait"}); r.IsError {
		t.Fatalf("spawn = %+v", r)
	}
	for expires() > time.Minute {
	}
}
