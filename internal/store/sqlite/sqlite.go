// Package sqlite is arbor's default store dialect: one SQLite file accessed
// through the database/sql driver that package driver picks (SQLite's C
// source through cgo, or modernc.org/sqlite in a build without cgo).
//
// Invariants:
//   - Every write runs in a BEGIN IMMEDIATE transaction on the one writer
//     connection. Writes of this process queue in the writer (writer.go),
//     which commits the writes that queued meanwhile together, a failed
//     one rolled back alone (group commit); writes of other processes
//     sharing the file wait for the write lock (busy_timeout) up front, so
//     no transaction ever fails with SQLITE_BUSY while upgrading a read
//     lock to a write lock.
//   - Reads go through a separate pool of query_only connections. In WAL
//     mode they see the last committed state and never block the writer.
//   - A goroutine of the store checkpoints the WAL in the background
//     (checkpoint.go), so commits rarely wait for a checkpoint's fsyncs.
//   - Open applies the embedded migrations, one transaction each, and
//     refuses a database whose schema is newer than this binary knows.
//   - Times are stored as UTC unix nanoseconds and read back as UTC
//     time.Time values equal to what was written.
//   - The updated_at of a session, a run and a node strictly increases on
//     every write that touches it, even when the wall clock stalls or steps
//     back.
//   - A tree Commit is one transaction: the run row and every node of an
//     engine transition are written together or not at all.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/store/sqlite/driver"
)

// busyTimeout is how long a connection waits for a lock another connection
// or process holds before giving up with SQLITE_BUSY.
const busyTimeout = 5 * time.Second

// readConns is the size of the read pool. Reads are short and mostly wait
// on the page cache or the disk, so a few more than the cores is fine.
const readConns = 4

// Store is a store.Store on one SQLite file. It is safe for concurrent use,
// and several Stores (in one or several processes) may share one file.
type Store struct {
	write *sql.DB       // exactly one connection, held by w once migrated
	w     *writer       // runs every write on write's connection
	read  *sql.DB       // query_only pool
	ckpt  *checkpointer // copies the WAL into the file off the writer's path

	closeOnce sync.Once
	closeErr  error
}

var _ store.Store = (*Store)(nil)

// Open opens (creating if needed) the database at path, creating its parent
// directory with mode 0700, and migrates it to the current schema. It fails
// with ErrSchemaTooNew when a newer arbor already migrated the file.
func Open(ctx context.Context, path string) (*Store, error) {
	return open(ctx, path, nil)
}

// open is Open; checkpointed, when not nil (tests), receives the outcome
// of every background checkpoint.
func open(ctx context.Context, path string, checkpointed chan<- error) (*Store, error) {
	if path == "" {
		return nil, errors.New("open sqlite store: empty path")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("open sqlite store %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
		return nil, fmt.Errorf("open sqlite store %s: create directory: %w", abs, err)
	}
	// The file holds transcripts: a new one is the user's alone (SQLite
	// would create it 0644, and its -wal and -shm files take its mode).
	if f, err := os.OpenFile(abs, os.O_RDONLY|os.O_CREATE, 0o600); err == nil {
		_ = f.Close()
	}
	ms, err := loadMigrations(migrationFiles)
	if err != nil {
		return nil, fmt.Errorf("open sqlite store %s: %w", abs, err)
	}

	busy := fmt.Sprint(busyTimeout.Milliseconds())
	params := url.Values{
		"_busy_timeout": {busy},
		"_foreign_keys": {"1"},
		"_journal_mode": {"WAL"},
		"_synchronous":  {"NORMAL"},
		"_txlock":       {"immediate"},
	}
	driver.WriterParams(params)
	write, err := openWriter(ctx, abs, params)
	if err != nil {
		return nil, fmt.Errorf("open sqlite store %s: writer: %w", abs, err)
	}
	if err := migrate(ctx, write, ms); err != nil {
		_ = write.Close()
		return nil, fmt.Errorf("open sqlite store %s: %w", abs, err)
	}
	w, err := newWriter(ctx, write)
	if err != nil {
		_ = write.Close()
		return nil, fmt.Errorf("open sqlite store %s: writer: %w", abs, err)
	}
	// The readers connect after the writer switched the file to WAL, which
	// is a persistent property of the file, and only at the first read: a
	// fresh headless session reads nothing, and each connection holds its
	// own copy of the schema and a page cache (about 0.2 MiB).
	read, err := poolOf(abs, url.Values{
		"_busy_timeout": {busy},
		"_query_only":   {"1"},
	}, readConns)
	if err != nil {
		w.close()
		_ = write.Close()
		return nil, fmt.Errorf("open sqlite store %s: readers: %w", abs, err)
	}
	// The checkpointer's connection is made at its first checkpoint, not
	// here: a session that writes little never needs it.
	ckptDB, err := poolOf(abs, url.Values{"_busy_timeout": {busy}}, 1)
	if err != nil {
		w.close()
		_ = errors.Join(read.Close(), write.Close())
		return nil, fmt.Errorf("open sqlite store %s: checkpointer: %w", abs, err)
	}
	w.withConn(func() { err = w.exec(fmt.Sprintf("PRAGMA wal_autocheckpoint = %d", backstopFrames)) })
	if err != nil {
		w.close()
		_ = errors.Join(ckptDB.Close(), read.Close(), write.Close())
		return nil, fmt.Errorf("open sqlite store %s: writer: %w", abs, err)
	}
	ckpt := startCheckpointer(ckptDB, checkpointed)
	w.ckpt = ckpt
	w.host = openHostLock(abs)
	return &Store{write: write, w: w, read: read, ckpt: ckpt}, nil
}

// openWriter opens the writer's one connection. Switching a new file to
// WAL needs the file to itself, and SQLite reports SQLITE_BUSY for that
// at once rather than waiting out busy_timeout, so concurrent first opens
// of one file (several processes starting together) try again until the
// busy timeout has passed.
func openWriter(ctx context.Context, abs string, params url.Values) (*sql.DB, error) {
	deadline := time.Now().Add(busyTimeout)
	for {
		db, err := openDB(ctx, abs, params, 1)
		if err == nil || !driver.Busy(err) || time.Now().After(deadline) {
			return db, err
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// openDB opens a pool of at most conns connections to the file at abs with
// the given driver parameters and checks that one connection works.
func openDB(ctx context.Context, abs string, params url.Values, conns int) (*sql.DB, error) {
	db, err := poolOf(abs, params, conns)
	if err != nil {
		return nil, err
	}
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, err
	}
	return db, nil
}

// poolOf is openDB without the check: its first connection is made when
// it is first used.
func poolOf(abs string, params url.Values, conns int) (*sql.DB, error) {
	// A file: URI with an escaped path, so '?', '#' and '%' in directory
	// names cannot be mistaken for parameters.
	dsn := (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs), RawQuery: params.Encode()}).String()
	db, err := sql.Open(driver.Name, dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(conns)
	db.SetMaxIdleConns(conns)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	return db, nil
}

// ReadConns reports how many read connections the store has open: none
// until its first read.
func (s *Store) ReadConns() int { return s.read.Stats().OpenConnections }

// Close closes both pools. It is safe to call more than once; later calls
// return the first call's result.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.w.close()
		s.closeErr = errors.Join(s.ckpt.close(), s.read.Close(), s.write.Close())
	})
	return s.closeErr
}

// inTx runs fn in a write transaction and returns once it committed, or
// fn's error (then nothing fn wrote is kept). The transaction may hold
// other callers' writes too; fn's writes commit or fail with it as a unit.
func (s *Store) inTx(ctx context.Context, fn func(*wtx) error) error {
	return s.w.do(ctx, fn)
}

func inTx(ctx context.Context, db *sql.DB, fn func(*sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// touch is the SET clause that advances a session's updated_at to now, or
// by one nanosecond when now is not later than the stored value. It takes
// the now argument twice.
const touch = "updated_at = CASE WHEN updated_at < ? THEN ? ELSE updated_at + 1 END"

var (
	minTime = time.Unix(0, math.MinInt64)
	maxTime = time.Unix(0, math.MaxInt64)
)

// nanos converts t to unix nanoseconds, substituting now for a zero t.
func nanos(t, now time.Time) (int64, error) {
	if t.IsZero() {
		t = now
	}
	if t.Before(minTime) || t.After(maxTime) {
		return 0, fmt.Errorf("%w: time %s is outside the storable range", store.ErrInvalid, t)
	}
	return t.UnixNano(), nil
}

// fromNanos is the inverse of nanos.
func fromNanos(n int64) time.Time { return time.Unix(0, n).UTC() }
