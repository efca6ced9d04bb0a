package cluster

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/store/postgres"
)

// riverVersions returns the versions River recorded as applied in st's
// schema, and how many River knows.
func riverVersions(t *testing.T, st *postgres.Store) (applied []int, known int) {
	t.Helper()
	rows, err := st.Pool().Query(t.Context(), `SELECT version FROM river_migration ORDER BY version`)
	must(t, err)
	applied, err = pgx.CollectRows(rows, pgx.RowTo[int])
	must(t, err)
	m, err := rivermigrate.New(riverpgxv5.New(st.Pool()), nil)
	must(t, err)
	return applied, len(m.AllVersions())
}

func TestOpenMigratesRiverIntoTheStoreSchema(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := openCluster(t, b.st, Options{})
	applied, known := riverVersions(t, b.st)
	if len(applied) != known || known == 0 {
		t.Fatalf("applied River migrations %v, River knows %d", applied, known)
	}
	var inSchema bool
	must(t, b.st.Pool().QueryRow(b.ctx, `SELECT EXISTS (SELECT 1 FROM information_schema.tables
		WHERE table_schema = $1 AND table_name = 'river_job')`, c.schema).Scan(&inSchema))
	if !inSchema {
		t.Fatalf("river_job is not in the test schema %s", c.schema)
	}

	t.Run("again is a no-op", func(t *testing.T) {
		openCluster(t, b.st, Options{})
		again, _ := riverVersions(t, b.st)
		if len(again) != len(applied) {
			t.Fatalf("versions after a second Open %v, before %v", again, applied)
		}
	})
}

func TestConcurrentFirstOpensMigrateOnce(t *testing.T) {
	t.Parallel()
	dsn := setup(t).dsn // an empty schema: nobody migrated River yet
	const n = 6
	stores := make([]*postgres.Store, n)
	for i := range stores {
		stores[i] = openStore(t, dsn)
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i, st := range stores {
		wg.Go(func() {
			_, errs[i] = Open(t.Context(), st, Options{})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Open #%d: %v", i, err)
		}
	}
	applied, known := riverVersions(t, stores[0])
	if len(applied) != known {
		t.Fatalf("applied %v, River knows %d versions", applied, known)
	}
}

func TestWorkingClusterWorksAJob(t *testing.T) {
	t.Parallel()
	b := setup(t)
	run := newRun(t, b.st, 1, store.StateActive)
	ran := make(chan Claim, 1)
	var c *Cluster
	c = openCluster(t, b.st, Options{Unit: UnitFunc(func(ctx context.Context, cl Claim) error {
		err := complete(ctx, c, cl, "done")
		ran <- cl
		return err
	})})
	start(t, c)
	enqueue(t, c, NodeStep{Run: run, Node: 2, Attempt: 1})
	cl := waitFor(t, ran, "the unit")
	if cl.Node.ID != 2 || cl.Lease.Key != NodeLeaseKey(run, 2) {
		t.Fatalf("claim %+v", cl)
	}
	n, err := b.st.GetNode(b.ctx, run, 2)
	must(t, err)
	if n.State != store.StateComplete || n.Result != "done" {
		t.Fatalf("node after its unit: %s %q", n.State, n.Result)
	}
}

func TestStartAndStopAreSafeTwice(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := openCluster(t, b.st, Options{Unit: UnitFunc(func(context.Context, Claim) error { return nil })})
	must(t, c.Start(b.ctx))
	must(t, c.Start(b.ctx))
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Go(func() { errs[i] = c.Stop(b.ctx) })
	}
	wg.Wait()
	must(t, errs[0])
	must(t, errs[1])
	must(t, c.Stop(b.ctx))
	if err := c.Start(b.ctx); !errors.Is(err, ErrStopped) {
		t.Fatalf("Start after Stop: %v, want ErrStopped", err)
	}
	// An insert-only cluster starts and stops as a no-op.
	ins := openCluster(t, b.st, Options{})
	must(t, ins.Start(b.ctx))
	must(t, ins.Stop(b.ctx))
	must(t, ins.Stop(b.ctx))
}
