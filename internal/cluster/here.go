package cluster

import (
	"context"
	"errors"
	"sync"

	"github.com/arbor-run/arbor/internal/store"
)

// Turns a driver runs itself. Handing a turn out costs a River job (its
// insert, fetch and completion), a claim in another transaction and
// about six requests to the driver's endpoint; a driver with a free turn
// slot runs the turn in its own process instead (tree.Options.RunHere)
// and hands out only the turns beyond its slots. A turn run here holds
// the node lease like a handed-out one — claimed the same way (the
// node runnable at the turn's attempt, a dead holder's lease taken over
// and its job finished), renewed every Heartbeat, released at its end —
// so a turn of the node that a worker still runs for a dead driver, or
// one the next driver takes over, never runs beside it.

// A turn run here has no job; in its lease owner (owner/job, see
// claim) it has a number of its own instead, negative, which no job id
// is (Cluster.here): two turns of one node in this process are two
// claimants, as two jobs are, so the second waits for the first's
// lease (it is handed out, and its job's claim waits), and the first's
// late release cannot delete the second's lease. With one owner for
// all of them, the second's claim would take the first's lease as its
// own (acquiring again) and the first's release would then drop it.

// RunHere runs a turn of node at attempt in this process when slots has
// room and the node lease is free or its holder dead (tree.Options.RunHere):
// ok says so, ctx is the turn's context (cancelled with ErrLeaseLost
// when a renewal finds the lease taken over), and release ends the turn's
// hold. Otherwise the turn is handed out, and the claim of its job waits
// for the live holder.
func (r *Remote) RunHere(ctx context.Context, slots chan struct{}, node int64, attempt int) (context.Context, func(), bool) {
	select {
	case slots <- struct{}{}:
	default:
		return ctx, nil, false
	}
	cl, err := r.c.claim(ctx, NodeStep{Run: r.run, Node: node, Attempt: attempt}, -r.c.here.Add(1))
	if err != nil {
		<-slots
		if !errors.Is(err, store.ErrLeaseHeld) && ctx.Err() == nil {
			r.c.o.Logger.Warn("cluster: claim a turn run here", "run", r.run, "node", node, "err", err)
		}
		return ctx, nil, false
	}
	tctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { r.c.heartbeat(tctx, cl, cancel, done) })
	release := func() {
		// The slot first: the turn's work is over, and the engine
		// starts the turns its end made ready as soon as that end is
		// durable, which is before release; a slot held through the
		// lease's release (a commit) made a fifth to a quarter of them find
		// every slot taken and be handed out.
		<-slots
		close(done)
		wg.Wait()
		cancel(nil)
		// Released even when ctx ended: the turn is over. A lease lost
		// meanwhile is not ours to release.
		if err := r.c.st.ReleaseLease(context.WithoutCancel(ctx), cl.Args.LeaseKey(), cl.Lease.ID); err != nil {
			r.c.o.Logger.Warn("cluster: release a turn run here", "run", r.run, "node", node, "err", err)
		}
	}
	return tctx, release, true
}
