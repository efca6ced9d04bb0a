package cluster

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/arbor-run/arbor/internal/store"
)

// blockingUnit returns a unit that reports its claim on started, waits
// for its context to end and reports the cause on ended.
func blockingUnit() (Unit, <-chan Claim, <-chan error) {
	started := make(chan Claim, 1)
	ended := make(chan error, 1)
	return UnitFunc(func(ctx context.Context, cl Claim) error {
		started <- cl
		<-ctx.Done()
		ended <- context.Cause(ctx)
		return context.Cause(ctx)
	}), started, ended
}

func TestCancelNodeReachesTheWorkerInAnotherClient(t *testing.T) {
	t.Parallel()
	b := setup(t)
	run := newRun(t, b.st, 1, store.StateActive)
	unit, started, ended := blockingUnit()
	worker := openCluster(t, b.st, Options{Unit: unit})
	start(t, worker)
	// The canceller is another client on its own pool, as another
	// process would be.
	other := openCluster(t, openStore(t, b.dsn), Options{})
	enqueue(t, other, NodeStep{Run: run, Node: 2, Attempt: 1})
	waitFor(t, started, "the unit to start")

	must(t, pgx.BeginFunc(b.ctx, other.st.Pool(), func(tx pgx.Tx) error {
		n, err := other.st.LockNodeTx(b.ctx, tx, run, 2)
		if err != nil {
			return err
		}
		n.State = store.StateCancelled
		if err := other.st.CommitTx(b.ctx, tx, nil, n); err != nil {
			return err
		}
		cancelled, err := other.CancelNodeTx(b.ctx, tx, run, 2)
		if err == nil && cancelled != 1 {
			err = errors.New("CancelNodeTx found no job")
		}
		return err
	}))
	// River's own remote cancel and arbor_control race to the worker;
	// either ends the unit (TestControlNotificationAloneCancelsTheUnit
	// checks arbor_control by itself).
	cause := waitFor(t, ended, "the unit's context to end")
	if !errors.Is(cause, ErrNodeCancelled) && !errors.Is(cause, river.ErrJobCancelledRemotely) {
		t.Fatalf("unit ended by %v, want a cancellation", cause)
	}
	must(t, worker.Stop(b.ctx))
	if jobs := jobsOf(t, b.st, run, 2); len(jobs) != 1 || jobs[0].State != "cancelled" {
		t.Fatalf("jobs after cancel: %+v", jobs)
	}
	if _, err := b.st.GetLease(b.ctx, NodeLeaseKey(run, 2)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the cancelled unit kept its lease: %v", err)
	}
}

func TestControlNotificationAloneCancelsTheUnit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	run := newRun(t, b.st, 2, store.StateActive)
	unit, started, ended := blockingUnit()
	worker := openCluster(t, b.st, Options{Unit: unit, Concurrency: 1})
	start(t, worker)
	other := openCluster(t, openStore(t, b.dsn), Options{})
	enqueue(t, other, NodeStep{Run: run, Node: 2, Attempt: 1})
	waitFor(t, started, "the unit to start")

	// A notification for another node of the run reaches no unit; the
	// one for node 2 (no River cancel with it) ends the unit.
	for _, node := range []int64{3, 2} {
		must(t, pgx.BeginFunc(b.ctx, other.st.Pool(), func(tx pgx.Tx) error {
			_, err := tx.Exec(b.ctx, `SELECT pg_notify($1, current_schema() || '/' || $2::text)`,
				controlChannel, NodeLeaseKey(run, node))
			return err
		}))
	}
	if cause := waitFor(t, ended, "the unit's context to end"); !errors.Is(cause, ErrNodeCancelled) {
		t.Fatalf("unit ended by %v, want ErrNodeCancelled", cause)
	}
}

func TestLostLeaseCancelsTheUnit(t *testing.T) {
	t.Parallel()
	b := setup(t)
	run := newRun(t, b.st, 1, store.StateActive)
	unit, started, ended := blockingUnit()
	// A short TTL so the heartbeat renews soon; nothing waits on the
	// clock but the heartbeat itself.
	worker := openCluster(t, b.st, Options{Unit: unit, LeaseTTL: 300 * time.Millisecond})
	start(t, worker)
	enqueue(t, worker, NodeStep{Run: run, Node: 2, Attempt: 1})
	cl := waitFor(t, started, "the unit to start")

	// Someone takes the lease over (as the reaper does after a missed
	// heartbeat): the next renewal fails and the unit is cancelled.
	thief := store.NewOwner()
	_, err := b.st.AcquireLease(b.ctx, store.LeaseRequest{Key: cl.Lease.Key, Owner: thief,
		Now: time.Now(), TTL: time.Hour, Replace: cl.Lease.ID})
	must(t, err)
	if cause := waitFor(t, ended, "the unit's context to end"); !errors.Is(cause, ErrLeaseLost) {
		t.Fatalf("unit ended by %v, want ErrLeaseLost", cause)
	}
	l, err := b.st.GetLease(b.ctx, cl.Lease.Key)
	must(t, err)
	if l.ID != thief.ID {
		t.Fatalf("the unit's end released the new owner's lease: %+v", l)
	}
}
