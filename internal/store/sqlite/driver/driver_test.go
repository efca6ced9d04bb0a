package driver_test

import (
	"context"
	"database/sql"
	"errors"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/store/sqlite/driver"
	"github.com/arbor-run/arbor/internal/testutil"
)

// TestDriver opens a real file through the driver this build links, as
// the store does, and checks what the store relies on: the data source
// name's parameters take effect, a second writer's SQLITE_BUSY is
// recognised as such (the store's first open retries on it) and nothing
// else is, and the linked SQLite names its version. .ci/run runs it with
// and without the sqlite_cgo tag, so both drivers pass it.
func TestDriver(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "a b?#%.db") // characters a URI must escape
	open := func(params string) *sql.DB {
		t.Helper()
		dsn := (&url.URL{Scheme: "file", Path: filepath.ToSlash(path), RawQuery: params}).String()
		db, err := sql.Open(driver.Name, dsn)
		if err != nil {
			t.Fatalf("open %s: %v", dsn, err)
		}
		t.Cleanup(func() { _ = db.Close() })
		db.SetMaxOpenConns(1)
		return db
	}
	a := open("_busy_timeout=0&_txlock=immediate&_journal_mode=WAL&_foreign_keys=1&_synchronous=NORMAL")
	for q, want := range map[string]string{"PRAGMA journal_mode": "wal", "PRAGMA foreign_keys": "1", "PRAGMA synchronous": "1"} {
		var got string
		if err := a.QueryRowContext(ctx, q).Scan(&got); err != nil || got != want {
			t.Fatalf("%s = %q, %v; want %q", q, got, err, want)
		}
	}
	if _, err := a.ExecContext(ctx, "CREATE TABLE t (x INTEGER)"); err != nil {
		t.Fatal(err)
	}

	tx, err := a.BeginTx(ctx, nil) // BEGIN IMMEDIATE: the write lock
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	b := open("_busy_timeout=0&_txlock=immediate")
	_, err = b.BeginTx(ctx, nil)
	if err == nil {
		t.Fatal("a second BEGIN IMMEDIATE got the write lock another connection holds")
	}
	if !driver.Busy(err) {
		t.Fatalf("Busy(%v) = false for a held write lock", err)
	}

	ro := open("_query_only=1")
	if _, err := ro.ExecContext(ctx, "INSERT INTO t VALUES (1)"); err == nil {
		t.Fatal("a _query_only connection wrote")
	} else if driver.Busy(err) {
		t.Fatalf("Busy(%v) = true for a write refused as read-only", err)
	}
	for _, e := range []error{nil, errors.New("database is locked"), sql.ErrNoRows} {
		if driver.Busy(e) {
			t.Fatalf("Busy(%v) = true", e)
		}
	}

	if v := driver.Version(); !regexp.MustCompile(`^3\.\d+\.\d+$`).MatchString(v) {
		t.Fatalf("Version() = %q, want 3.x.y", v)
	}
	if driver.Kind == "" {
		t.Fatal("Kind is empty")
	}
}

// TestOneSQLite: arbor's binary links the SQLite this build picks and not
// the other one (each is megabytes of code and initialisers).
func TestOneSQLite(t *testing.T) {
	tags, want, not := "", "modernc.org/sqlite", "github.com/mattn/go-sqlite3"
	if strings.HasPrefix(driver.Kind, "cgo") {
		tags, want, not = "sqlite_cgo", not, want
	}
	deps := testutil.Deps(t, "../../../../cmd/arbor", tags)
	if !slices.Contains(deps, want) {
		t.Errorf("cmd/arbor does not link %s (Kind %q)", want, driver.Kind)
	}
	if slices.Contains(deps, not) {
		t.Errorf("cmd/arbor links %s beside %s", not, want)
	}
}
