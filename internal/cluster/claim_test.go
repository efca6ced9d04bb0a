package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/arbor-run/arbor/internal/store"
)

func TestClaimIsACompareAndSet(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := openCluster(t, b.st, Options{})
	run := newRun(t, b.st, 1, store.StateActive)
	args := NodeStep{Run: run, Node: 2, Attempt: 1}

	t.Run("stale attempt", func(t *testing.T) {
		_, err := c.claim(b.ctx, NodeStep{Run: run, Node: 2, Attempt: 0}, 1)
		var stale *StaleError
		if !errors.As(err, &stale) || !errors.Is(err, ErrStale) || stale.Attempts != 1 {
			t.Fatalf("claim of attempt 0: %v", err)
		}
		if _, err := b.st.GetLease(b.ctx, args.LeaseKey()); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a stale claim left a lease: %v", err)
		}
	})
	t.Run("unknown node", func(t *testing.T) {
		_, err := c.claim(b.ctx, NodeStep{Run: run, Node: 99, Attempt: 1}, 1)
		if !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("claim of a missing node: %v", err)
		}
	})

	first, err := c.claim(b.ctx, args, 1)
	must(t, err)
	t.Run("second job of the attempt", func(t *testing.T) {
		_, err := c.claim(b.ctx, args, 2)
		var held *store.LeaseHeldError
		if !errors.As(err, &held) || held.ID != first.Lease.ID {
			t.Fatalf("claim while held: %v, want held by %s", err, first.Lease.ID)
		}
	})
	t.Run("transition of the claim, then it is stale", func(t *testing.T) {
		must(t, complete(b.ctx, c, first, "r"))
		if err := complete(b.ctx, c, first, "again"); !errors.Is(err, ErrStale) {
			t.Fatalf("second transition: %v, want ErrStale", err)
		}
		must(t, b.st.ReleaseLease(b.ctx, first.Lease.Key, first.Lease.ID))
		if _, err := c.claim(b.ctx, args, 3); !errors.Is(err, ErrStale) {
			t.Fatalf("claim of a complete node: %v, want ErrStale", err)
		}
	})
	t.Run("an update error rolls the transition back", func(t *testing.T) {
		run := newRun(t, b.st, 1, store.StateActive)
		cl, err := c.claim(b.ctx, NodeStep{Run: run, Node: 2, Attempt: 1}, 4)
		must(t, err)
		err = c.Transition(b.ctx, cl, func(tx pgx.Tx, n *store.Node) error {
			n.State = store.StateComplete
			if _, err := c.EnqueueTx(b.ctx, tx, NodeStep{Run: run, Node: 1, Attempt: 0}); err != nil {
				return err
			}
			return errBoom
		})
		if !errors.Is(err, errBoom) {
			t.Fatalf("transition: %v, want errBoom", err)
		}
		n, err := b.st.GetNode(b.ctx, run, 2)
		must(t, err)
		if n.State != store.StateActive || len(jobsOf(t, b.st, run, 1)) != 0 {
			t.Fatalf("rolled-back transition left node %s, jobs %v", n.State, jobsOf(t, b.st, run, 1))
		}
	})
}

// TestRacingWorkersStartEveryNodeOnce enqueues several jobs for each of
// many nodes and works them with several clusters (each on its own
// store and pool, as separate processes would) of several goroutines;
// every node's unit must run exactly once.
func TestRacingWorkersStartEveryNodeOnce(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const (
		nodes    = 40
		dupes    = 3 // jobs per node
		clusters = 3
	)
	run := newRun(t, b.st, nodes, store.StateActive)

	var (
		mu   sync.Mutex
		runs = map[int64][]int64{} // node → job ids whose unit ran
	)
	done := make(chan struct{})
	cs := make([]*Cluster, clusters)
	for i := range cs {
		st := b.st
		if i > 0 {
			st = openStore(t, b.dsn)
		}
		var c *Cluster
		c = openCluster(t, st, Options{Concurrency: 8, Unit: UnitFunc(func(ctx context.Context, cl Claim) error {
			mu.Lock()
			runs[cl.Node.ID] = append(runs[cl.Node.ID], cl.JobID)
			if len(runs) == nodes {
				select {
				case <-done:
				default:
					close(done)
				}
			}
			mu.Unlock()
			return complete(ctx, c, cl, fmt.Sprintf("job %d", cl.JobID))
		})})
		cs[i] = c
	}
	var args []NodeStep
	for range dupes {
		for id := int64(2); id < nodes+2; id++ {
			args = append(args, NodeStep{Run: run, Node: id, Attempt: 1})
		}
	}
	enqueue(t, cs[0], args...)
	for _, c := range cs {
		start(t, c)
	}
	waitFor(t, done, "every node's unit")
	for _, c := range cs {
		must(t, c.Stop(b.ctx)) // soft stop: running units finish and are counted
	}

	mu.Lock()
	defer mu.Unlock()
	for id := int64(2); id < nodes+2; id++ {
		if len(runs[id]) != 1 {
			t.Errorf("node %d: units run by jobs %v, want exactly one", id, runs[id])
		}
		n, err := b.st.GetNode(b.ctx, run, id)
		must(t, err)
		if want := fmt.Sprintf("job %d", runs[id][0]); n.State != store.StateComplete || n.Result != want {
			t.Errorf("node %d: %s %q, want complete %q", id, n.State, n.Result, want)
		}
	}
}

// TestClaimRaceAcrossPools races claims of one attempt from goroutines
// on separate pools, directly: exactly one claim per node succeeds.
func TestClaimRaceAcrossPools(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const nodes, racers = 20, 8
	run := newRun(t, b.st, nodes, store.StateActive)
	cs := make([]*Cluster, 2)
	for i := range cs {
		cs[i] = openCluster(t, openStore(t, b.dsn), Options{})
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		wins = map[int64]int{}
		errs []error
	)
	for r := range racers {
		c := cs[r%len(cs)]
		wg.Go(func() {
			for id := int64(2); id < nodes+2; id++ {
				_, err := c.claim(b.ctx, NodeStep{Run: run, Node: id, Attempt: 1}, int64(r+1))
				mu.Lock()
				switch {
				case err == nil:
					wins[id]++
				case !errors.Is(err, store.ErrLeaseHeld):
					errs = append(errs, err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("claims failed other than by a held lease: %v", errs)
	}
	for id := int64(2); id < nodes+2; id++ {
		if wins[id] != 1 {
			t.Errorf("node %d claimed %d times", id, wins[id])
		}
	}
}
