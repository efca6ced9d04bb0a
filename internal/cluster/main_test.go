package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/store/postgres"
	"github.com/arbor-run/arbor/internal/store/postgres/pgtest"
)

func TestMain(m *testing.M) {
	if dsn := os.Getenv(helperEnv); dsn != "" {
		os.Exit(runHelperWorker(dsn))
	}
	pgtest.Main(m)
}

// hangGuard bounds every wait of a test on another goroutine or
// process; it is never reached when the code works.
const hangGuard = 2 * time.Minute

type testBundle struct {
	ctx context.Context
	dsn string // the test's own schema
	st  *postgres.Store
}

// setup opens a store on a new schema, dropped after t.
func setup(t *testing.T) *testBundle {
	t.Helper()
	dsn := pgtest.DSN(t)
	return &testBundle{ctx: t.Context(), dsn: dsn, st: openStore(t, dsn)}
}

func openStore(t *testing.T, dsn string) *postgres.Store {
	t.Helper()
	st, err := postgres.Open(t.Context(), dsn)
	must(t, err)
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// openCluster opens a Cluster on st, not started.
func openCluster(t *testing.T, st *postgres.Store, o Options) *Cluster {
	t.Helper()
	c, err := Open(t.Context(), st, o)
	must(t, err)
	return c
}

// start starts c and stops it when t ends.
func start(t *testing.T, c *Cluster) {
	t.Helper()
	must(t, c.Start(t.Context()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
		defer cancel()
		if err := c.Stop(ctx); err != nil {
			t.Errorf("stop cluster: %v", err)
		}
	})
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
}

// newRun creates a run with n task nodes under a root, every task in
// state and attempt 1, and returns the run id.
func newRun(t *testing.T, st *postgres.Store, n int, state store.NodeState) string {
	t.Helper()
	id := fmt.Sprintf("run-%d", time.Now().UnixNano())
	must(t, st.CreateRun(t.Context(), store.Run{ID: id, Goal: "g", MaxParallel: 8}))
	nodes := []store.Node{{RunID: id, ID: 1, Kind: store.KindGoal, Goal: "g", State: store.StateWaiting}}
	for i := range n {
		nodes = append(nodes, store.Node{RunID: id, ID: int64(i + 2), ParentID: 1, Kind: store.KindTask,
			Spawn: "spawn", Goal: fmt.Sprintf("task %d", i), State: state, Attempts: 1})
	}
	must(t, st.Commit(t.Context(), nil, nodes...))
	return id
}

// enqueue inserts jobs for args in one transaction of their own.
func enqueue(t *testing.T, c *Cluster, args ...NodeStep) {
	t.Helper()
	must(t, pgx.BeginFunc(t.Context(), c.st.Pool(), func(tx pgx.Tx) error {
		for _, a := range args {
			if _, err := c.EnqueueTx(t.Context(), tx, a); err != nil {
				return err
			}
		}
		return nil
	}))
}

// jobsOf returns the states of the node's jobs, oldest first.
func jobsOf(t *testing.T, st *postgres.Store, run string, node int64) []NodeStepJob {
	t.Helper()
	rows, err := st.Pool().Query(t.Context(), `SELECT id, state, (args->>'attempt')::bigint FROM river_job
		WHERE kind = $1 AND args->>'run' = $2 AND (args->>'node')::bigint = $3 ORDER BY id`, JobKind, run, node)
	must(t, err)
	jobs, err := pgx.CollectRows(rows, pgx.RowToStructByPos[NodeStepJob])
	must(t, err)
	return jobs
}

// NodeStepJob is a river_job row of the tests' interest.
type NodeStepJob struct {
	ID      int64
	State   string
	Attempt int
}

// complete is the end of a test unit: the node completes with result.
func complete(ctx context.Context, c *Cluster, cl Claim, result string) error {
	return c.Transition(ctx, cl, func(_ pgx.Tx, n *store.Node) error {
		n.State, n.Result = store.StateComplete, result
		return nil
	})
}

func waitFor[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(hangGuard):
		t.Fatalf("hung waiting for %s", what)
	}
	var zero T
	return zero
}

var errBoom = errors.New("boom")
