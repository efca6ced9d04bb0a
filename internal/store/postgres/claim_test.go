package postgres

import (
	"errors"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/store"
)

// TestClaimNodeSharesATransaction queues claims of every kind beside a
// step: they commit together, and each claim reads what its own
// statements found.
func TestClaimNodeSharesATransaction(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := b.ctx
	must(t, b.st.CreateRun(ctx, store.Run{ID: "r1"}))
	must(t, b.st.Commit(ctx, nil,
		store.Node{RunID: "r1", ID: 1, Kind: store.KindGoal, State: store.StateActive, Attempts: 1},
		store.Node{RunID: "r1", ID: 2, ParentID: 1, Kind: store.KindTask, State: store.StateActive, Attempts: 1},
		store.Node{RunID: "r1", ID: 3, ParentID: 1, Kind: store.KindTask, State: store.StateActive, Attempts: 2},
		store.Node{RunID: "r1", ID: 4, ParentID: 1, Kind: store.KindTask, State: store.StateComplete, Attempts: 1},
		store.Node{RunID: "r1", ID: 5, ParentID: 1, Kind: store.KindTask, State: store.StateSynthesizing, Attempts: 1}))
	must(t, b.st.CreateSession(ctx, store.Session{ID: "s1"}))
	now := time.Now()
	lease := func(node, owner string) store.LeaseRequest {
		return store.LeaseRequest{Key: "node:r1/" + node, Owner: store.Owner{ID: owner, PID: 1, Host: "h"}, Now: now, TTL: time.Minute}
	}
	held, err := b.st.AcquireLease(ctx, lease("3", "holder"))
	must(t, err)
	runnable := []store.NodeState{store.StateActive, store.StateSynthesizing}
	claim := func(id int64, attempt int, owner string) NodeClaim {
		return NodeClaim{RunID: "r1", ID: id, Attempt: attempt, States: runnable,
			Lease: lease(string(rune('0'+id)), owner)}
	}

	type result struct {
		got ClaimedNode
		err error
	}
	cases := []NodeClaim{
		claim(2, 1, "a"),      // free: taken
		claim(3, 2, "a"),      // held by another live owner
		claim(4, 1, "a"),      // complete: not runnable
		claim(5, 0, "b"),      // stale attempt
		claim(9, 1, "a"),      // no such node
		claim(3, 2, "holder"), // the holder again: renewed
	}
	results := make([]chan result, len(cases))
	tx0, w0 := b.st.WriteStats()
	var step func() (int64, error)
	queued(b.st, func() {
		for i, c := range cases {
			results[i] = make(chan result, 1)
			go func() {
				got, err := b.st.ClaimNode(ctx, c)
				results[i] <- result{got, err}
			}()
			waitQueued(b.st, i+1)
		}
		step = b.st.QueueStep(ctx, store.Step{SessionID: "s1", Messages: []llm.Message{llm.UserText("beside")}})
	})
	got := make([]result, len(cases))
	for i := range cases {
		got[i] = <-results[i]
	}
	if last, err := step(); err != nil || last != 1 {
		t.Fatalf("step: last seq %d, %v; want 1, nil", last, err)
	}
	if txs, writes := statsSince(b.st, tx0, w0); txs != 1 || writes != int64(len(cases))+1 {
		t.Fatalf("sent %d transactions of %d writes, want 1 of %d", txs, writes, len(cases)+1)
	}

	if r := got[0]; r.err != nil || !r.got.Taken || r.got.Lease.ID != "a" || r.got.Node.ID != 2 || r.got.Node.State != store.StateActive {
		t.Fatalf("claim of a free node: %+v, %v", r.got, r.err)
	}
	if l, err := b.st.GetLease(ctx, "node:r1/2"); err != nil || l.ID != "a" {
		t.Fatalf("lease of the claimed node: %+v, %v; want a's", l, err)
	}
	if r := got[1]; r.err != nil || r.got.Taken || r.got.Holder.ID != "holder" || r.got.Holder.Expires != held.Expires {
		t.Fatalf("claim of a held node: %+v, %v; want the holder", r.got, r.err)
	}
	if r := got[2]; r.err != nil || r.got.Taken || r.got.Node.State != store.StateComplete {
		t.Fatalf("claim of a complete node: %+v, %v; want it found, not taken", r.got, r.err)
	}
	if r := got[3]; r.err != nil || r.got.Taken || r.got.Node.Attempts != 1 {
		t.Fatalf("claim of a stale attempt: %+v, %v; want attempt 1 found, not taken", r.got, r.err)
	}
	if r := got[4]; !errors.Is(r.err, store.ErrNotFound) {
		t.Fatalf("claim of a missing node: %v, want ErrNotFound", r.err)
	}
	if r := got[5]; r.err != nil || !r.got.Taken || r.got.Lease.ID != "holder" || !r.got.Lease.AcquiredAt.Equal(held.AcquiredAt) {
		t.Fatalf("the holder's claim: %+v, %v; want its lease renewed", r.got, r.err)
	}
	for _, key := range []string{"node:r1/4", "node:r1/5", "node:r1/9"} {
		if _, err := b.st.GetLease(ctx, key); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("lease %s of a claim that took none: %v, want ErrNotFound", key, err)
		}
	}
}

func TestClaimNodeRefusesBadInput(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.st.ClaimNode(b.ctx, NodeClaim{RunID: "r1", ID: 1, Lease: store.LeaseRequest{Key: "node:r1/1"}})
	if !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("claim without an owner: %v, want ErrInvalid", err)
	}
}
