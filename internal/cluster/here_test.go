package cluster

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/store"
)

// TestRunHereHoldsTheNodeLease: a turn run in the driver takes a free
// slot and the node lease, as a handed-out turn's claim does, and gives
// both back when released; with no free slot, with the lease held by a
// live holder, or for an attempt the node is not at, the turn is handed
// out instead.
func TestRunHereHoldsTheNodeLease(t *testing.T) {
	t.Parallel()
	b := setup(t)
	run, c, r := hereRemote(t, b, 2)
	slots := make(chan struct{}, 1)

	ctx, release := mustRunHere(t, b.ctx, r, slots, 2, "a free slot and a free node")
	l, err := b.st.GetLease(b.ctx, NodeLeaseKey(run, 2))
	must(t, err)
	if own, turn, _ := strings.Cut(l.ID, "/"); own != c.o.Owner.ID || !strings.HasPrefix(turn, "-") {
		t.Fatalf("the node lease of a turn run here: owner %s, want this process's with a negative turn number", l.ID)
	}
	if _, _, ok := r.RunHere(b.ctx, slots, 3, 1); ok {
		t.Fatal("RunHere ran a second turn in a single slot")
	}
	release()
	if ctx.Err() == nil {
		t.Fatal("the turn's context lives on after release")
	}
	wantNoLease(t, b, NodeLeaseKey(run, 2))

	// A live holder of node 3's lease (this process, another job).
	holder := store.NewOwner()
	holder.ID += "/42"
	_, err = b.st.AcquireLease(b.ctx, store.LeaseRequest{Key: NodeLeaseKey(run, 3), Owner: holder, Now: time.Now(), TTL: time.Minute})
	must(t, err)
	if _, _, ok := r.RunHere(b.ctx, slots, 3, 1); ok {
		t.Fatal("RunHere ran a turn beside the node lease's live holder")
	}
	if _, _, ok := r.RunHere(b.ctx, slots, 2, 2); ok {
		t.Fatal("RunHere ran a turn of an attempt the node is not at")
	}
	if len(slots) != 0 {
		t.Fatalf("refused turns kept %d slots", len(slots))
	}
	_, release = mustRunHere(t, context.Background(), r, slots, 2, "the freed slot")
	release()
}

// TestRunHereGivesItsSlotBackBeforeTheLeasesRelease: a released turn's
// slot is free while its lease's release still waits (here for a row
// lock the test holds), so the turns its end made ready, which the
// engine starts before the release, find the slot and run here.
func TestRunHereGivesItsSlotBackBeforeTheLeasesRelease(t *testing.T) {
	t.Parallel()
	b := setup(t)
	run, _, r := hereRemote(t, b, 2)
	slots := make(chan struct{}, 1)
	_, release := mustRunHere(t, b.ctx, r, slots, 2, "a free slot and a free node")

	// Hold the lease row, so that the release's delete waits for this
	// transaction.
	tx, err := b.st.Pool().Begin(b.ctx)
	must(t, err)
	defer func() { _ = tx.Rollback(context.Background()) }()
	var xid int64
	must(t, tx.QueryRow(b.ctx, `SELECT 1 FROM leases WHERE key = $1 FOR UPDATE`, NodeLeaseKey(run, 2)).Scan(new(int)))
	must(t, tx.QueryRow(b.ctx, `SELECT pg_current_xact_id()::text::bigint`).Scan(&xid))
	released := make(chan struct{})
	go func() { defer close(released); release() }()
	for waiting := false; !waiting; {
		must(t, b.st.Pool().QueryRow(b.ctx, `SELECT EXISTS (SELECT 1 FROM pg_locks
			WHERE locktype = 'transactionid' AND transactionid::text::bigint = $1 AND NOT granted)`, xid).Scan(&waiting))
	}
	if n := len(slots); n != 0 {
		t.Fatalf("%d slot(s) taken while the lease's release waits, want the turn's given back", n)
	}
	must(t, tx.Rollback(b.ctx))
	<-released
	wantNoLease(t, b, NodeLeaseKey(run, 2))
}

// TestRunHereTurnsOfOneNodeAreTwoClaimants: two turns of one node run
// here are two owners of its lease, as two jobs are: the second is
// refused while the first holds it, and the first's late release does
// not drop the lease of the second.
func TestRunHereTurnsOfOneNodeAreTwoClaimants(t *testing.T) {
	t.Parallel()
	b := setup(t)
	run, _, r := hereRemote(t, b, 1)
	slots := make(chan struct{}, 2)
	key := NodeLeaseKey(run, 2)

	_, releaseFirst := mustRunHere(t, b.ctx, r, slots, 2, "a free slot and a free node")
	first, err := b.st.GetLease(b.ctx, key)
	must(t, err)
	if _, _, ok := r.RunHere(b.ctx, slots, 2, 1); ok {
		t.Fatal("RunHere ran a second turn of a node beside its first")
	}
	releaseFirst()
	_, releaseSecond := mustRunHere(t, b.ctx, r, slots, 2, "the node's next turn after the first's release")
	defer releaseSecond()
	must(t, b.st.ReleaseLease(b.ctx, key, first.ID)) // the first's release, late
	second, err := b.st.GetLease(b.ctx, key)
	if err != nil || second.ID == first.ID {
		t.Fatalf("the second turn's lease after the first's late release: %+v, %v; want its own", second, err)
	}
}

// hereRemote makes a run of leaves active leaves and a cluster whose node
// leases last a minute, and returns the run, the cluster and the run's
// Remote: what the RunHere tests start from.
func hereRemote(t *testing.T, b *testBundle, leaves int) (string, *Cluster, *Remote) {
	t.Helper()
	run := newRun(t, b.st, leaves, store.StateActive)
	c := openCluster(t, b.st, Options{LeaseTTL: time.Minute})
	return run, c, c.NewRemote(run, "default")
}

// mustRunHere runs attempt 1 of node's turn here, failing the test when
// RunHere refuses it (what names the case).
func mustRunHere(t *testing.T, ctx context.Context, r *Remote, slots chan struct{}, node int64, what string) (context.Context, func()) {
	t.Helper()
	turn, release, ok := r.RunHere(ctx, slots, node, 1)
	if !ok {
		t.Fatalf("RunHere refused %s", what)
	}
	return turn, release
}

// wantNoLease fails the test unless the lease of key is gone.
func wantNoLease(t *testing.T, b *testBundle, key string) {
	t.Helper()
	if _, err := b.st.GetLease(b.ctx, key); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the node lease after release: %v, want none", err)
	}
}
