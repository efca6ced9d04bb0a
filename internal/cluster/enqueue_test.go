package cluster

import (
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/arbor-run/arbor/internal/store"
)

// makeReady is the transition a scheduler commits when a node becomes
// ready: pending → active with its job, on one transaction.
func makeReady(t *testing.T, c *Cluster, tx pgx.Tx, run string, id int64) {
	t.Helper()
	n, err := c.st.LockNodeTx(t.Context(), tx, run, id)
	must(t, err)
	n.State = store.StateActive
	must(t, c.st.CommitTx(t.Context(), tx, nil, n))
	_, err = c.EnqueueTx(t.Context(), tx, NodeStep{Run: run, Node: id, Attempt: n.Attempts})
	must(t, err)
}

func TestEnqueueTxCommitsOrRollsBackWithTheTransition(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := openCluster(t, b.st, Options{})
	run := newRun(t, b.st, 2, store.StatePending)

	t.Run("rolled back: neither the node change nor the job", func(t *testing.T) {
		tx, err := b.st.Pool().Begin(b.ctx)
		must(t, err)
		makeReady(t, c, tx, run, 2)
		must(t, tx.Rollback(b.ctx))
		n, err := b.st.GetNode(b.ctx, run, 2)
		must(t, err)
		if n.State != store.StatePending {
			t.Fatalf("node after rollback: %s", n.State)
		}
		if jobs := jobsOf(t, b.st, run, 2); len(jobs) != 0 {
			t.Fatalf("jobs after rollback: %+v", jobs)
		}
	})

	t.Run("committed: both", func(t *testing.T) {
		changes, err := b.st.RunChanges(t.Context(), run)
		must(t, err)
		tx, err := b.st.Pool().Begin(b.ctx)
		must(t, err)
		makeReady(t, c, tx, run, 3)
		must(t, tx.Commit(b.ctx))
		n, err := b.st.GetNode(b.ctx, run, 3)
		must(t, err)
		if n.State != store.StateActive {
			t.Fatalf("node after commit: %s", n.State)
		}
		jobs := jobsOf(t, b.st, run, 3)
		if len(jobs) != 1 || jobs[0].State != "available" || jobs[0].Attempt != 1 {
			t.Fatalf("jobs after commit: %+v", jobs)
		}
		// CommitTx notifies the change feed like Commit, at commit.
		waitFor(t, changes, "the change notification of CommitTx")
	})

	t.Run("CommitTx validates like Commit", func(t *testing.T) {
		tx, err := b.st.Pool().Begin(b.ctx)
		must(t, err)
		defer func() { _ = tx.Rollback(b.ctx) }()
		err = b.st.CommitTx(b.ctx, tx, nil, store.Node{RunID: run, ID: 0, State: store.StateActive, Kind: store.KindTask})
		if !errors.Is(err, store.ErrInvalid) {
			t.Fatalf("CommitTx of an invalid node: %v, want ErrInvalid", err)
		}
		err = b.st.CommitTx(b.ctx, tx, nil, store.Node{RunID: "no-such-run", ID: 2, State: store.StateActive, Kind: store.KindTask, Spawn: "spawn"})
		if !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("CommitTx into a missing run: %v, want ErrNotFound", err)
		}
	})
}
