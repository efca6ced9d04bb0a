package postgres

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/store/postgres/pgtest"
	"github.com/arbor-run/arbor/internal/store/storetest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) store.Store {
		return setup(t).st
	})
}

type testBundle struct {
	ctx context.Context
	dsn string // its own schema
	st  *Store
}

// setup opens a store on a new schema, dropped after t.
func setup(t *testing.T) *testBundle {
	t.Helper()
	dsn := pgtest.DSN(t)
	return &testBundle{ctx: t.Context(), dsn: dsn, st: openAt(t, dsn)}
}

func openAt(t *testing.T, dsn string) *Store {
	t.Helper()
	st, err := Open(t.Context(), dsn)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
}

type migrationRow struct {
	Version   int
	Name      string
	AppliedAt int64
}

func migrationRows(t *testing.T, st *Store) []migrationRow {
	t.Helper()
	rows, err := st.pool.Query(t.Context(), `SELECT version, name, applied_at FROM schema_migrations ORDER BY version`)
	must(t, err)
	defer rows.Close()
	var out []migrationRow
	for rows.Next() {
		var r migrationRow
		must(t, rows.Scan(&r.Version, &r.Name, &r.AppliedAt))
		out = append(out, r)
	}
	must(t, rows.Err())
	return out
}

func TestReopenKeepsDataAndSkipsMigrations(t *testing.T) {
	t.Parallel()
	b := setup(t)
	must(t, b.st.CreateSession(b.ctx, store.Session{ID: "s1", Title: "kept"}))
	_, err := b.st.AppendMessages(b.ctx, "s1", llm.UserText("hello"), llm.UserText("again"))
	must(t, err)
	applied := migrationRows(t, b.st)
	ms, err := loadMigrations(migrationFiles)
	must(t, err)
	if len(applied) != len(ms) {
		t.Fatalf("applied %d migrations, want %d", len(applied), len(ms))
	}
	must(t, b.st.Close())
	must(t, b.st.Close())

	st := openAt(t, b.dsn)
	if got := migrationRows(t, st); !reflect.DeepEqual(got, applied) {
		t.Fatalf("schema_migrations after reopen = %+v, want unchanged %+v", got, applied)
	}
	sess, err := st.GetSession(b.ctx, "s1")
	must(t, err)
	if sess.Title != "kept" {
		t.Fatalf("title after reopen = %q", sess.Title)
	}
	last, err := st.AppendMessages(b.ctx, "s1", llm.UserText("third"))
	must(t, err)
	if last != 3 {
		t.Fatalf("seq after reopen = %d, want 3", last)
	}
}

// TestConcurrentFirstOpens opens one new schema from several stores at
// once: the advisory lock lets each migration run exactly once.
func TestConcurrentFirstOpens(t *testing.T) {
	t.Parallel()
	dsn := pgtest.DSN(t)
	const openers = 6
	var wg sync.WaitGroup
	errs := make([]error, openers)
	stores := make([]*Store, openers)
	for i := range openers {
		wg.Go(func() { stores[i], errs[i] = Open(t.Context(), dsn) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
		t.Cleanup(func() { _ = stores[i].Close() })
	}
	ms, err := loadMigrations(migrationFiles)
	must(t, err)
	if got := migrationRows(t, stores[0]); len(got) != len(ms) {
		t.Fatalf("schema_migrations = %+v, want each of %d migrations once", got, len(ms))
	}
}

func TestSchemaTooNew(t *testing.T) {
	t.Parallel()
	b := setup(t)
	future := len(migrationRows(t, b.st)) + 1
	_, err := b.st.pool.Exec(b.ctx,
		`INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, 'from_the_future.sql', 0)`, future)
	must(t, err)
	must(t, b.st.Close())

	st, err := Open(b.ctx, b.dsn)
	if err == nil {
		_ = st.Close()
		t.Fatal("Open succeeded on a schema from a newer arbor")
	}
	if !errors.Is(err, ErrSchemaTooNew) {
		t.Fatalf("Open error = %v, want ErrSchemaTooNew", err)
	}
}

func TestMessagesAreAppendOnly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	must(t, b.st.CreateSession(b.ctx, store.Session{ID: "s1"}))
	_, err := b.st.AppendMessages(b.ctx, "s1", llm.UserText("hello"))
	must(t, err)
	_, err = b.st.pool.Exec(b.ctx, `UPDATE messages SET body = '{}' WHERE session_id = 's1'`)
	if err == nil || !strings.Contains(err.Error(), "append-only") {
		t.Fatalf("rewriting a message: error %v, want the append-only trigger's", err)
	}
}

// TestNULBytes: tool output with NUL bytes round-trips through an intent
// (its result is BYTEA); in a text column PostgreSQL cannot hold, a NUL is
// store.ErrInvalid rather than an opaque driver error.
func TestNULBytes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	must(t, b.st.CreateSession(b.ctx, store.Session{ID: "s1"}))
	must(t, b.st.StartIntent(b.ctx, store.Intent{SessionID: "s1", CallID: "c1", Tool: "shell"}))
	out := "binary\x00output\xff"
	must(t, b.st.FinishIntent(b.ctx, "s1", "c1", out, false))
	ins, err := b.st.Intents(b.ctx, "s1")
	must(t, err)
	if len(ins) != 1 || ins[0].Result != out {
		t.Fatalf("intents = %+v, want one with result %q", ins, out)
	}
	must(t, b.st.CreateRun(b.ctx, store.Run{ID: "r1"}))
	err = b.st.Commit(b.ctx, nil, store.Node{RunID: "r1", ID: 1, Kind: store.KindGoal, Result: "a\x00b"})
	if !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("commit of a result with a NUL: %v, want ErrInvalid", err)
	}
}

func TestOpenRefusesSchemaThatDoesNotExist(t *testing.T) {
	t.Parallel()
	dsn, err := pgtest.WithSearchPath(pgtest.ServerDSN(t), "arbor_no_such_schema")
	must(t, err)
	st, err := Open(t.Context(), dsn)
	if err == nil {
		_ = st.Close()
		t.Fatal("Open succeeded with a search_path naming no schema")
	}
	if !strings.Contains(err.Error(), "no schema") {
		t.Fatalf("Open error = %v, want one saying there is no schema", err)
	}
}

// TestRunChangesAcrossStores: a commit through one store (another
// process) wakes the subscriber of that run on another store, and only
// that run's; the channel closes with the subscriber's context.
func TestRunChangesAcrossStores(t *testing.T) {
	t.Parallel()
	b := setup(t)
	other := openAt(t, b.dsn)
	must(t, b.st.CreateRun(b.ctx, store.Run{ID: "r1"}))
	must(t, b.st.CreateRun(b.ctx, store.Run{ID: "r2"}))
	ctx, cancel := context.WithCancel(b.ctx)
	r1, err := b.st.RunChanges(ctx, "r1")
	must(t, err)
	r2, err := b.st.RunChanges(ctx, "r2")
	must(t, err)

	must(t, other.Commit(b.ctx, nil, store.Node{RunID: "r1", ID: 1, Kind: store.KindGoal, State: store.StateActive}))
	<-r1
	// A failed commit notifies nobody; a commit of r2 wakes r2 only.
	run2, err := other.GetRun(b.ctx, "r2")
	must(t, err)
	if err := other.Commit(b.ctx, &store.Run{ID: "r1", Status: "sleeping"}); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("invalid commit: %v", err)
	}
	must(t, other.Commit(b.ctx, &run2))
	<-r2
	select {
	case <-r1:
		t.Fatal("r1 woken by commits that did not write it")
	default:
	}
	cancel()
	for range r1 {
	}
	for range r2 {
	}
}

// TestCompleteRunIsFinalAcrossStores races commits that complete a run
// against commits that mark it failed, from two stores (two processes):
// the completion lands, every late commit is ErrConflict, and none fails
// otherwise (no deadlock or serialization error leaks out).
func TestCompleteRunIsFinalAcrossStores(t *testing.T) {
	t.Parallel()
	b := setup(t)
	other := openAt(t, b.dsn)
	must(t, b.st.CreateRun(b.ctx, store.Run{ID: "r1", MaxParallel: 1}))
	base, err := b.st.GetRun(b.ctx, "r1")
	must(t, err)
	const racers, rounds = 6, 10
	var wg sync.WaitGroup
	errs := make(chan error, racers*rounds)
	for i := range racers {
		wg.Go(func() {
			st := []*Store{b.st, other}[i%2]
			for round := range rounds {
				r := base
				r.Status = store.RunFailed
				if i == 0 && round == rounds/2 {
					r.Status, r.Result = store.RunComplete, "done"
				}
				node := store.Node{RunID: "r1", ID: int64(i + 1), Kind: store.KindTask, Attempts: round}
				if err := st.Commit(b.ctx, &r, node); err != nil && !(errors.Is(err, store.ErrConflict) && r.Status != store.RunComplete) {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("commit: %v", err)
	}
	got, err := b.st.GetRun(b.ctx, "r1")
	must(t, err)
	if got.Status != store.RunComplete || got.Result != "done" {
		t.Fatalf("run after the race: %s %q, want complete", got.Status, got.Result)
	}
}

// TestOneFinisherAcrossStores: of many finishers of one intent on two
// stores, exactly one stores its result; the others get ErrConflict.
func TestOneFinisherAcrossStores(t *testing.T) {
	t.Parallel()
	b := setup(t)
	other := openAt(t, b.dsn)
	must(t, b.st.CreateSession(b.ctx, store.Session{ID: "s1"}))
	must(t, b.st.StartIntent(b.ctx, store.Intent{SessionID: "s1", CallID: "c1", Tool: "shell"}))
	const finishers = 8
	results := make([]error, finishers)
	var wg sync.WaitGroup
	for i := range finishers {
		wg.Go(func() {
			st := []*Store{b.st, other}[i%2]
			results[i] = st.FinishIntent(b.ctx, "s1", "c1", string(rune('a'+i)), false)
		})
	}
	wg.Wait()
	won := -1
	for i, err := range results {
		switch {
		case err == nil && won >= 0:
			t.Fatalf("finishers %d and %d both won", won, i)
		case err == nil:
			won = i
		case !errors.Is(err, store.ErrConflict):
			t.Fatalf("finisher %d: %v", i, err)
		}
	}
	ins, err := b.st.Intents(b.ctx, "s1")
	must(t, err)
	if won < 0 || len(ins) != 1 || ins[0].Result != string(rune('a'+won)) {
		t.Fatalf("winner %d, intents %+v", won, ins)
	}
}
