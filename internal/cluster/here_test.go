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
	run := newRun(t, b.st, 2, store.StateActive)
	c := openCluster(t, b.st, Options{LeaseTTL: time.Minute})
	r := c.NewRemote(run, "default")
	slots := make(chan struct{}, 1)

	ctx, release, ok := r.RunHere(b.ctx, slots, 2, 1)
	if !ok {
		t.Fatal("RunHere refused a free slot and a free node")
	}
	l, err := b.st.GetLease(b.ctx, NodeLeaseKey(run, 2))
	must(t, err)
	if !strings.HasSuffix(l.ID, "/0") {
		t.Fatalf("the node lease of a turn run here: owner %s, want this process's with job 0", l.ID)
	}
	if _, _, ok := r.RunHere(b.ctx, slots, 3, 1); ok {
		t.Fatal("RunHere ran a second turn in a single slot")
	}
	release()
	if ctx.Err() == nil {
		t.Fatal("the turn's context lives on after release")
	}
	if _, err := b.st.GetLease(b.ctx, NodeLeaseKey(run, 2)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the node lease after release: %v, want none", err)
	}

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
	_, release, ok = r.RunHere(context.Background(), slots, 2, 1)
	if !ok {
		t.Fatal("RunHere refused the freed slot")
	}
	release()
}
