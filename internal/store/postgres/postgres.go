// Package postgres is arbor's store dialect for PostgreSQL, through pgx v5
// and one connection pool per Store; it is chosen with a postgres:// URL
// and lets several processes on several machines share runs.
//
// Invariants:
//   - Every write is part of one READ COMMITTED transaction, most of them
//     one round trip: a pipelined batch that PostgreSQL runs as one
//     implicit transaction (inBatch), or a single statement. The writes
//     of inBatch queue for the store's committer, which sends those that
//     queued together in one batch (group commit, group.go); a write
//     whose statement fails is left out and the others are sent again,
//     so no write fails because another did, and a caller returns only
//     after the transaction holding its write committed. Compare-and-set
//     transitions (a lease's owner, a started intent, a complete run) are
//     single UPDATE or INSERT … ON CONFLICT statements whose WHERE clause
//     PostgreSQL re-checks on the newest row version after waiting for a
//     concurrent writer, so of two racers exactly one wins, as with
//     SQLite's BEGIN IMMEDIATE.
//   - A transaction that fails with a deadlock or a serialization failure
//     is retried from the start; nothing else is retried.
//   - Open applies the embedded migrations under an advisory lock per
//     schema, one transaction each, and refuses a schema newer than this
//     binary knows. The URL's search_path chooses the schema.
//   - Times are stored as UTC unix nanoseconds and read back as UTC
//     time.Time values equal to what was written; updated_at of a session,
//     a run and a node strictly increases on every write that touches it.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/arbor-run/arbor/internal/store"
)

// Store is a store.Store on one PostgreSQL database (one schema of it). It
// is safe for concurrent use; any number of Stores in any number of
// processes may share the schema.
type Store struct {
	pool  *pgxpool.Pool
	feed  feed       // RunChanges' listener
	group *committer // runs inBatch's writes, with group commit (group.go)

	closeOnce sync.Once
}

var _ store.Store = (*Store)(nil)

// Open connects to the database at dsn (a postgres:// URL or a libpq
// key=value string) and migrates it to the current schema. It fails with
// ErrSchemaTooNew when a newer arbor already migrated the schema.
func Open(ctx context.Context, dsn string) (*Store, error) {
	where := redact(dsn)
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("open postgres store %s: %w", where, err)
	}
	ms, err := loadMigrations(migrationFiles)
	if err != nil {
		return nil, fmt.Errorf("open postgres store %s: %w", where, err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open postgres store %s: %w", where, err)
	}
	s := &Store{pool: pool}
	if err := s.migrate(ctx, ms); err != nil {
		pool.Close()
		return nil, fmt.Errorf("open postgres store %s: %w", where, err)
	}
	s.group = newCommitter(s)
	return s, nil
}

// redact returns dsn without its passwords (the user's, and the password
// and sslpassword parameters), for error messages.
func redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.Scheme == "" {
		return "(connection string)"
	}
	q := u.Query()
	for _, k := range []string{"password", "sslpassword"} {
		if q.Has(k) {
			q.Set(k, "xxxxx")
		}
	}
	u.RawQuery = q.Encode()
	return u.Redacted()
}

// Close stops the change feed, runs the writes still queued, and closes
// the pool. It is safe to call more than once; a write after it fails.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.stopFeed()
		s.group.close()
		s.pool.Close()
	})
	return nil
}

// maxAttempts bounds how often a transaction that lost a deadlock or a
// serialization conflict is run again.
const maxAttempts = 5

// inTx runs fn in a transaction and commits it when fn succeeds. A
// deadlock or serialization failure runs fn again in a new transaction.
func (s *Store) inTx(ctx context.Context, fn func(pgx.Tx) error) error {
	for attempt := 1; ; attempt++ {
		err := pgx.BeginFunc(ctx, s.pool, fn)
		if err == nil || attempt == maxAttempts || !retryable(err) {
			return dbError(err)
		}
	}
}

// inBatch runs a transaction of one round trip: batch (built anew for
// each attempt by build) is sent as one pipeline ending in a single Sync,
// which PostgreSQL runs as one implicit transaction: it commits at the
// Sync when every statement succeeded and rolls back when any failed, the
// statements after the failed one skipped. read reads the results in
// order; the call returns after the commit (or rollback) is done, so a
// nil error means the writes are durable, as after COMMIT.
//
// The write queues for the store's committer (group.go), which may send
// it in one batch with the other writes queued at the same time: they
// then share the implicit transaction and its commit, and a write whose
// statement fails is sent again alone or left out, so that no write fails
// because another did. read must therefore read only this write's
// results, in order, and may be run more than once (only the last run's
// outcome counts); build must queue the same statements each time.
//
// The commit does not wait for read: every condition that must undo the
// writes has to fail a statement in SQL (a constraint, a unique key, see
// updateRunChecked), not only a check in read. This holds in every pgx
// exec mode a DSN may choose: the extended ones end the batch with one
// Sync, the simple protocol sends it as one multi-statement query, which
// PostgreSQL also runs as one implicit transaction. The pool's
// connections are idle, never inside BEGIN (pgxpool drops a connection
// returned in a transaction). A deadlock or serialization failure runs
// the batch again, as inTx does.
func (s *Store) inBatch(ctx context.Context, build func(*pgx.Batch), read func(pgx.BatchResults) error) error {
	return s.group.do(ctx, build, read)
}

// runBatch sends one write's batch as a transaction of its own, again on
// a deadlock or serialization failure; txs counts the attempts.
func (s *Store) runBatch(ctx context.Context, build func(*pgx.Batch), read func(pgx.BatchResults) error, txs *atomic.Int64) error {
	for attempt := 1; ; attempt++ {
		txs.Add(1)
		var batch pgx.Batch
		build(&batch)
		br := s.pool.SendBatch(ctx, &batch)
		err := read(br)
		err = errors.Join(err, closeUnlessFailed(br, err))
		if err == nil || attempt == maxAttempts || !retryable(err) {
			return dbError(err)
		}
	}
}

// retryable reports a transaction PostgreSQL aborted only because it
// collided with another one.
func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01")
}

// dbError maps the PostgreSQL errors of bad input to store.ErrInvalid: a
// NUL byte or a character the database encoding cannot hold in a text
// column.
func dbError(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (pe.Code == "22021" || pe.Code == "22P05") {
		return fmt.Errorf("%w: %s", store.ErrInvalid, pe.Message)
	}
	return err
}

// touch is the SET clause that advances updated_at to $n (the now
// argument), or by one nanosecond when now is not later than the stored
// value.
func touch(n int) string {
	return fmt.Sprintf("updated_at = CASE WHEN updated_at < $%d THEN $%d ELSE updated_at + 1 END", n, n)
}

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

// nullableNanos is nanos for an optional time: nil stays NULL. A non-nil
// zero time is outside the storable range and so ErrInvalid.
func nullableNanos(t *time.Time) (*int64, error) {
	if t == nil {
		return nil, nil
	}
	n, err := nanos(*t, time.Time{})
	if err != nil {
		return nil, err
	}
	return &n, nil
}

// nullableTime is the inverse of nullableNanos.
func nullableTime(n *int64) *time.Time {
	if n == nil {
		return nil
	}
	t := fromNanos(*n)
	return &t
}

// listNewest runs an ordered SELECT of args with an optional LIMIT
// (limit <= 0 means all) and scans every row.
func listNewest[T any](ctx context.Context, s *Store, query string, limit int, scan func(pgx.Row) (T, error), args ...any) ([]T, error) {
	if limit > 0 {
		args = append(args, limit)
		query += fmt.Sprintf(` LIMIT $%d`, len(args))
	}
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// execer is a transaction or the pool.
type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// insertNew runs an INSERT … ON CONFLICT DO NOTHING with q and fails with
// store.ErrConflict (saying what) when the row already existed.
func insertNew(ctx context.Context, q execer, what, query string, args ...any) error {
	tag, err := q.Exec(ctx, query, args...)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("%s: %w", what, store.ErrConflict)
	}
	return nil
}
