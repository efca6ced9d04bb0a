package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/store/sqlite/driver"
	"github.com/arbor-run/arbor/internal/store/storetest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, func(t *testing.T) store.Store {
		return setup(t).st
	})
}

type testBundle struct {
	ctx  context.Context
	path string
	st   *Store
}

// setup opens a store on a new file in t.TempDir and closes it after t.
func setup(t *testing.T) *testBundle {
	t.Helper()
	path := filepath.Join(t.TempDir(), "arbor.db")
	return &testBundle{ctx: t.Context(), path: path, st: openAt(t, path)}
}

// writeExec runs query on the write connection, through the writer as
// every write of the store runs.
func (b *testBundle) writeExec(query string, args ...any) error {
	return b.st.inTx(b.ctx, func(tx *wtx) error {
		_, err := tx.ExecContext(b.ctx, query, args...)
		return err
	})
}

func openAt(t *testing.T, path string) *Store {
	t.Helper()
	st, err := Open(t.Context(), path)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
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
	rows, err := st.read.QueryContext(t.Context(), `SELECT version, name, applied_at FROM schema_migrations ORDER BY version`)
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

func TestOpenCreatesPrivateDirectory(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "state", "with ?#% chars")
	openAt(t, filepath.Join(dir, "arbor.db"))
	fi, err := os.Stat(dir)
	must(t, err)
	if perm := fi.Mode().Perm(); perm != 0o700 {
		t.Fatalf("directory mode = %o, want 700", perm)
	}
	if _, err := os.Stat(filepath.Join(dir, "arbor.db")); err != nil {
		t.Fatalf("database file not created where asked: %v", err)
	}
}

// TestNewFilesAreTheUsers: a new database and its WAL and shared-memory
// files are readable by the user alone (they hold transcripts), however
// permissive the umask and wherever --store puts them; SQLite alone would
// make them 0644 under the usual umask.
func TestNewFilesAreTheUsers(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "shared", "x.db")
	must(t, os.MkdirAll(filepath.Dir(path), 0o755))
	st := openAt(t, path)
	must(t, st.CreateRun(context.Background(), store.Run{ID: "r", Goal: "g", Status: store.RunRunning, Model: "m"})) // the WAL has frames
	for _, name := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(name)
		must(t, err)
		if perm := fi.Mode().Perm(); perm&0o077 != 0 {
			t.Errorf("%s: mode %o; want no access for group or others", filepath.Base(name), perm)
		}
	}
}

func TestPragmas(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, tc := range []struct {
		pool  string
		query string
		want  string
	}{
		{"write", "PRAGMA journal_mode", "wal"},
		{"read", "PRAGMA journal_mode", "wal"},
		{"write", "PRAGMA synchronous", "1"}, // NORMAL
		{"write", "PRAGMA foreign_keys", "1"},
		{"write", "PRAGMA busy_timeout", "5000"},
		{"read", "PRAGMA busy_timeout", "5000"},
		{"read", "PRAGMA query_only", "1"},
		{"write", "PRAGMA query_only", "0"},
	} {
		var got string
		if tc.pool == "read" {
			must(t, b.st.read.QueryRowContext(b.ctx, tc.query).Scan(&got))
		} else {
			must(t, b.st.inTx(b.ctx, func(tx *wtx) error {
				return tx.QueryRowContext(b.ctx, tc.query).Scan(&got)
			}))
		}
		if got != tc.want {
			t.Fatalf("%s on %s pool = %q, want %q", tc.query, tc.pool, got, tc.want)
		}
	}
	if _, err := b.st.read.ExecContext(b.ctx, `DELETE FROM sessions`); err == nil {
		t.Fatal("read pool accepted a write")
	}
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

	st := openAt(t, b.path)
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

func TestSchemaTooNew(t *testing.T) {
	t.Parallel()
	b := setup(t)
	future := len(migrationRows(t, b.st)) + 1
	must(t, b.writeExec(
		`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, 'from_the_future.sql', 0)`, future))
	must(t, b.st.Close())

	st, err := Open(b.ctx, b.path)
	if err == nil {
		_ = st.Close()
		t.Fatal("Open succeeded on a database from a newer arbor")
	}
	if !errors.Is(err, ErrSchemaTooNew) {
		t.Fatalf("Open error = %v, want ErrSchemaTooNew", err)
	}
}

func TestLoadMigrations(t *testing.T) {
	t.Parallel()
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	for _, tc := range []struct {
		name    string
		fsys    fstest.MapFS
		want    []int
		wantErr bool
	}{
		{"empty", fstest.MapFS{}, []int{}, false},
		{"ordered", fstest.MapFS{
			"migrations/0002_more.sql": file("B"), "migrations/0001_init.sql": file("A"),
			"migrations/README.md": file("not a migration"),
		}, []int{1, 2}, false},
		{"gap", fstest.MapFS{"migrations/0001_a.sql": file("A"), "migrations/0003_c.sql": file("C")}, nil, true},
		{"starts at two", fstest.MapFS{"migrations/0002_b.sql": file("B")}, nil, true},
		{"duplicate", fstest.MapFS{"migrations/0001_a.sql": file("A"), "migrations/0001_b.sql": file("B")}, nil, true},
		{"no name", fstest.MapFS{"migrations/0001.sql": file("A")}, nil, true},
		{"no number", fstest.MapFS{"migrations/init_x.sql": file("A")}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ms, err := loadMigrations(tc.fsys)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("loadMigrations succeeded with %d migrations, want an error", len(ms))
				}
				return
			}
			must(t, err)
			got := []int{}
			for _, m := range ms {
				got = append(got, m.version)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("versions = %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("embedded", func(t *testing.T) {
		t.Parallel()
		ms, err := loadMigrations(migrationFiles)
		must(t, err)
		if len(ms) == 0 {
			t.Fatal("no embedded migrations")
		}
	})
}

func TestFailedMigrationRollsBack(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ms, err := loadMigrations(migrationFiles)
	must(t, err)
	bad := append(ms, migration{
		version: len(ms) + 1, name: "bad.sql", path: "bad.sql",
		fsys: fstest.MapFS{"bad.sql": {Data: []byte("CREATE TABLE half_done (x INTEGER); CREATE TABLE broken (;")}},
	})
	// The store's writer holds its write connection: migrate through a
	// connection of its own, as Open does before the writer starts.
	db, err := openDB(b.ctx, b.path, url.Values{"_txlock": {"immediate"}}, 1)
	must(t, err)
	t.Cleanup(func() { _ = db.Close() })
	if err := migrate(b.ctx, db, bad); err == nil {
		t.Fatal("migrate succeeded with broken SQL")
	}
	v, err := schemaVersion(b.ctx, b.st.read)
	must(t, err)
	if v != len(ms) {
		t.Fatalf("schema version = %d, want %d", v, len(ms))
	}
	var n int
	must(t, b.st.read.QueryRowContext(b.ctx,
		`SELECT COUNT(*) FROM sqlite_master WHERE name = 'half_done'`).Scan(&n))
	if n != 0 {
		t.Fatal("first statement of the failed migration was kept")
	}
}

func TestConcurrentOpenOfNewFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "arbor.db")
	const openers = 4
	stores := make([]*Store, openers)
	errs := make([]error, openers)
	var wg sync.WaitGroup
	for i := range openers {
		wg.Go(func() { stores[i], errs[i] = Open(t.Context(), path) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("opener %d: %v", i, err)
		}
		t.Cleanup(func() { _ = stores[i].Close() })
	}
	ms, err := loadMigrations(migrationFiles)
	must(t, err)
	if got := migrationRows(t, stores[0]); len(got) != len(ms) {
		t.Fatalf("schema_migrations has %d rows, want %d", len(got), len(ms))
	}
}

// TestTwoStoresShareFile is two processes on one file: every write of both
// succeeds (no SQLITE_BUSY) and appends stay densely numbered.
func TestTwoStoresShareFile(t *testing.T) {
	t.Parallel()
	b := setup(t)
	other := openAt(t, b.path)
	must(t, b.st.CreateSession(b.ctx, store.Session{ID: "shared"}))

	const writersPerStore, rounds = 4, 15
	errs := make(chan error, 2*writersPerStore*rounds)
	var wg sync.WaitGroup
	for si, st := range []*Store{b.st, other} {
		for w := range writersPerStore {
			wg.Go(func() {
				for r := range rounds {
					id := fmt.Sprintf("s%d-w%d-r%d", si, w, r)
					if err := st.CreateSession(b.ctx, store.Session{ID: id}); err != nil {
						errs <- err
						continue
					}
					if _, err := st.AppendMessages(b.ctx, "shared", llm.UserText(id)); err != nil {
						errs <- err
					}
					// Reads before it writes: the case BEGIN IMMEDIATE is for.
					if err := st.SaveCompaction(b.ctx, store.Compaction{SessionID: "shared", UpToSeq: 1, Summary: id}); err != nil {
						errs <- err
					}
					if err := st.AddUsage(b.ctx, store.UsageRecord{SessionID: "shared", Usage: llm.Usage{InputTokens: 1}, CostKnown: true}); err != nil {
						errs <- err
					}
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("write while sharing the file: %v", err)
	}

	const total = 2 * writersPerStore * rounds
	for _, st := range []*Store{b.st, other} {
		recs, err := st.Messages(b.ctx, "shared", 0)
		must(t, err)
		if len(recs) != total {
			t.Fatalf("messages = %d, want %d", len(recs), total)
		}
		for i, r := range recs {
			if r.Seq != int64(i+1) {
				t.Fatalf("message %d has seq %d", i, r.Seq)
			}
		}
		sess, err := st.GetSession(b.ctx, "shared")
		must(t, err)
		if sess.Usage.InputTokens != total {
			t.Fatalf("input tokens = %d, want %d", sess.Usage.InputTokens, total)
		}
		list, err := st.ListSessions(b.ctx, 0)
		must(t, err)
		if len(list) != total+1 {
			t.Fatalf("sessions = %d, want %d", len(list), total+1)
		}
	}
}

func TestMessagesAreAppendOnly(t *testing.T) {
	t.Parallel()
	b := setup(t)
	must(t, b.st.CreateSession(b.ctx, store.Session{ID: "s1"}))
	_, err := b.st.AppendMessages(b.ctx, "s1", llm.UserText("original"))
	must(t, err)
	if err := b.writeExec(`UPDATE messages SET body = '{}'`); err == nil {
		t.Fatal("the database allowed rewriting a message")
	}
	recs, err := b.st.Messages(b.ctx, "s1", 0)
	must(t, err)
	if recs[0].Message.Text() != "original" {
		t.Fatalf("message after refused update = %+v", recs[0].Message)
	}
}

func TestUseAfterClose(t *testing.T) {
	t.Parallel()
	b := setup(t)
	must(t, b.st.Close())
	if err := b.st.CreateSession(b.ctx, store.Session{ID: "s1"}); err == nil {
		t.Fatal("write after Close succeeded")
	}
	if _, err := b.st.GetSession(b.ctx, "s1"); err == nil {
		t.Fatal("read after Close succeeded")
	}
}

// TestEncodeJSON: encodeJSON is json.Marshal without HTML escaping, also
// after an encoding failed and from several goroutines (its encoders are
// pooled), and a large value does not leave its buffer in the pool.
func TestEncodeJSON(t *testing.T) {
	t.Parallel()
	if _, err := encodeJSON(func() {}); err == nil {
		t.Fatal("encoding a func: no error")
	}
	big := strings.Repeat("x", 2*maxPooledEncoder)
	if got, err := encodeJSON(big); err != nil || got != `"`+big+`"` {
		t.Fatalf("a large string: %d bytes, %v", len(got), err)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 50 {
				m := llm.UserText(fmt.Sprintf("<b>%d & %d</b>", i, j))
				got, err := encodeJSON(m)
				if err != nil {
					t.Error(err)
					return
				}
				want, _ := json.Marshal(m)
				want = bytes.ReplaceAll(want, []byte(`\u003c`), []byte("<"))
				want = bytes.ReplaceAll(want, []byte(`\u003e`), []byte(">"))
				want = bytes.ReplaceAll(want, []byte(`\u0026`), []byte("&"))
				if got != string(want) {
					t.Errorf("encodeJSON = %s, want %s", got, want)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestReopenTakesNoWriteLock: opening a file that is already at this
// schema only reads it, so it succeeds while another connection holds
// the write lock (it would otherwise wait out the busy timeout and fail).
func TestReopenTakesNoWriteLock(t *testing.T) {
	t.Parallel()
	b := setup(t)
	must(t, b.st.Close())
	dsn := (&url.URL{Scheme: "file", Path: filepath.ToSlash(b.path), RawQuery: "_busy_timeout=0&_txlock=immediate"}).String()
	holder, err := sql.Open(driver.Name, dsn)
	must(t, err)
	defer holder.Close()
	tx, err := holder.BeginTx(b.ctx, nil) // BEGIN IMMEDIATE: the write lock
	must(t, err)
	defer func() { _ = tx.Rollback() }()
	st, err := Open(b.ctx, b.path)
	if err != nil {
		t.Fatalf("open while another connection holds the write lock: %v", err)
	}
	must(t, st.Close())
}
