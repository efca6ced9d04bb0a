package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	sqlitedriver "github.com/arbor-run/arbor/internal/store/sqlite/driver"
)

// TestStatementCacheClosesWhatItDoesNotKeep runs more distinct statements
// on the writer than its cache keeps, on the real driver wrapped to count
// the statements prepared and not yet closed: past the bound, each
// statement is closed after its one use, so the open ones are the cached
// ones (before, each one past the bound stayed open for good).
func TestStatementCacheClosesWhatItDoesNotKeep(t *testing.T) {
	real, err := sql.Open(sqlitedriver.Name, ":memory:")
	must(t, err)
	counting := &countingDriver{real: real.Driver(), dsn: "file:" + filepath.ToSlash(filepath.Join(t.TempDir(), "a.db"))}
	_ = real.Close()
	db := sql.OpenDB(counting)
	defer db.Close()
	db.SetMaxOpenConns(1)
	w, err := newWriter(context.Background(), db)
	must(t, err)
	defer w.close()

	const extra = 40
	w.withConn(func() {
		for i := range maxStmts + extra {
			if _, err := w.execArgs(fmt.Sprintf("SELECT %d + ?", i), []any{int64(1)}); err != nil {
				t.Fatal(err)
			}
			row := w.queryRow(fmt.Sprintf("SELECT %d - ?", i), []any{int64(1)})
			var got int64
			if err := row.Scan(&got); err != nil || got != int64(i-1) {
				t.Fatalf("SELECT %d - 1 = %d, %v", i, got, err)
			}
		}
	})
	if len(w.stmts) != maxStmts {
		t.Fatalf("the cache holds %d statements, want its bound %d", len(w.stmts), maxStmts)
	}
	if open := counting.open.Load(); open != maxStmts {
		t.Fatalf("%d statements open after %d distinct ones ran, want the %d cached", open, 2*(maxStmts+extra), maxStmts)
	}
}

// countingDriver is the real driver with a count of the statements
// prepared and not closed.
type countingDriver struct {
	real driver.Driver
	dsn  string
	open atomic.Int64
}

func (d *countingDriver) Connect(context.Context) (driver.Conn, error) {
	c, err := d.real.Open(d.dsn)
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, d: d}, nil
}

func (d *countingDriver) Driver() driver.Driver { return d.real }

type countingConn struct {
	driver.Conn
	d *countingDriver
}

func (c *countingConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	st, err := c.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	c.d.open.Add(1)
	return &countingStmt{stmt: st.(stmt), d: c.d}, nil
}

type stmt interface {
	driver.Stmt
	driver.StmtExecContext
	driver.StmtQueryContext
}

type countingStmt struct {
	stmt
	d      *countingDriver
	closed bool
}

func (s *countingStmt) Close() error {
	if !s.closed {
		s.closed = true
		s.d.open.Add(-1)
	}
	return s.stmt.Close()
}
