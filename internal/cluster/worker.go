package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/riverqueue/river"

	"github.com/arbor-run/arbor/internal/store"
)

// Unit is the work of one claimed job: one bounded unit of a node's work.
// Its context ends when the job is cancelled (CancelNodeTx), when the
// node lease is lost, or when River hard-stops; it then returns promptly.
// It ends the unit with Cluster.Transition.
type Unit interface {
	RunUnit(ctx context.Context, cl Claim) error
}

// UnitFunc adapts a function to Unit.
type UnitFunc func(ctx context.Context, cl Claim) error

// RunUnit implements Unit.
func (f UnitFunc) RunUnit(ctx context.Context, cl Claim) error { return f(ctx, cl) }

// Causes of a unit's cancelled context (context.Cause).
var (
	// ErrNodeCancelled: CancelNodeTx reached the process running the unit.
	ErrNodeCancelled = errors.New("node cancelled")
	// ErrLeaseLost (store.ErrLeaseLost): a renewal found the node lease
	// taken over, typically by the reaper after a missed heartbeat.
	ErrLeaseLost = store.ErrLeaseLost
)

// nodeWorker is River's worker of arbor.node_step.
type nodeWorker struct {
	river.WorkerDefaults[NodeStep]
	c *Cluster
}

// Work claims the node and runs the unit. A stale job completes without
// effect; a job whose node lease another live job holds is snoozed for
// one TTL (by then the holder ended or the reaper freed the node, and
// the claim says which).
func (w *nodeWorker) Work(ctx context.Context, job *river.Job[NodeStep]) error {
	if w.c.o.Unit == nil {
		return errors.New("this process runs no node turns")
	}
	cl, err := w.c.claim(ctx, job.Args, job.ID)
	switch {
	case errors.Is(err, ErrStale), errors.Is(err, store.ErrNotFound):
		return nil
	case errors.Is(err, store.ErrLeaseHeld) && w.c.o.Remote:
		// The node's previous turn is releasing it.
		return river.JobSnooze(remoteSnooze)
	case errors.Is(err, store.ErrLeaseHeld):
		return river.JobSnooze(w.c.o.LeaseTTL)
	case err != nil:
		return err
	}
	err = w.c.runUnit(ctx, cl)
	switch {
	case errors.Is(err, ErrNoWorkspace) && w.c.o.Remote:
		// A turn waits for a worker that has its workspace: offered
		// again soon, since the run goes on only when one takes it.
		return river.JobSnooze(turnWorkspaceSnooze)
	case errors.Is(err, ErrNoWorkspace):
		return river.JobSnooze(workspaceSnooze)
	}
	return err
}

// remoteSnooze is how soon a turn whose node lease is held is offered
// again, turnWorkspaceSnooze one that a worker without its workspace
// fetched.
const (
	remoteSnooze        = 100 * time.Millisecond
	turnWorkspaceSnooze = 250 * time.Millisecond
)

// runUnit runs the unit of a claim with its heartbeat, makes it
// cancellable by the control channel, and releases the lease after it.
func (c *Cluster) runUnit(ctx context.Context, cl Claim) error {
	uctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	key := cl.Args.LeaseKey()
	c.units.add(key, cl.JobID, cancel)
	defer c.units.remove(key, cl.JobID)

	beat := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { c.heartbeat(uctx, cl, cancel, beat) })
	err := c.o.Unit.RunUnit(uctx, cl)
	close(beat)
	wg.Wait()

	// Released even when ctx ended: a unit that returned is done with the
	// node. A lease lost meanwhile is not released (not ours).
	if rerr := c.st.ReleaseLease(context.WithoutCancel(ctx), key, cl.Lease.ID); rerr != nil {
		err = errors.Join(err, rerr)
	}
	if err != nil {
		return fmt.Errorf("unit of node %d of run %s (attempt %d): %w", cl.Args.Node, cl.Args.Run, cl.Args.Attempt, err)
	}
	return nil
}

// heartbeat renews the claim's lease every Heartbeat until done is closed or
// ctx ends; a lost lease cancels the unit with ErrLeaseLost. A failed
// renewal for another reason (a dropped connection) is tried again on the
// next tick: the lease stays valid for TTL.
func (c *Cluster) heartbeat(ctx context.Context, cl Claim, cancel context.CancelCauseFunc, done <-chan struct{}) {
	t := time.NewTicker(c.o.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-ctx.Done():
			return
		case <-t.C:
		}
		_, err := c.st.RenewLease(ctx, store.LeaseRequest{
			Key: cl.Lease.Key, Owner: cl.Lease.Owner, Now: c.o.Now(), TTL: c.o.LeaseTTL,
		})
		if errors.Is(err, store.ErrLeaseLost) {
			cancel(ErrLeaseLost)
			return
		}
	}
}

// units are the units running in this process, by lease key; mu guards
// m. A key has more than one entry only while a unit is ending and the
// next one of the node starts.
type units struct {
	mu sync.Mutex
	m  map[string]map[int64]context.CancelCauseFunc
}

func (u *units) add(key string, job int64, cancel context.CancelCauseFunc) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.m == nil {
		u.m = map[string]map[int64]context.CancelCauseFunc{}
	}
	if u.m[key] == nil {
		u.m[key] = map[int64]context.CancelCauseFunc{}
	}
	u.m[key][job] = cancel
}

func (u *units) remove(key string, job int64) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.m[key], job)
	if len(u.m[key]) == 0 {
		delete(u.m, key)
	}
}

// cancel cancels every unit of key with cause; cancel functions do not
// block, so calling them under mu is fine.
func (u *units) cancel(key string, cause error) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, c := range u.m[key] {
		c(cause)
	}
	return len(u.m[key])
}
