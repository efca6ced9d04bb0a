package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/arbor-run/arbor/internal/store"
)

// The methods on a caller's transaction, for internal/cluster: it puts a
// node's transition, its lease and its River job in one transaction, so
// it needs the pool River runs on and the store's writes on that pool's
// transactions. They neither commit nor roll back the transaction, and
// they do not retry it: on an error the caller rolls back.

// Pool returns the store's connection pool. It is closed by Close.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// LockNodeTx reads node id of the run and locks its row until tx ends
// (SELECT … FOR UPDATE), so the caller's check of its state and attempts
// and the write that follows are one compare-and-set: a concurrent
// LockNodeTx or Commit of the node waits for tx. ErrNotFound if there is
// no such node.
func (s *Store) LockNodeTx(ctx context.Context, tx pgx.Tx, runID string, id int64) (store.Node, error) {
	n, err := scanNode(tx.QueryRow(ctx,
		`SELECT `+nodeColumns+` FROM nodes WHERE run_id = $1 AND id = $2 FOR UPDATE`, runID, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Node{}, fmt.Errorf("lock node %d of run %s: %w", id, runID, store.ErrNotFound)
	}
	if err != nil {
		return store.Node{}, fmt.Errorf("lock node %d of run %s: %w", id, runID, err)
	}
	return n, nil
}

// AcquireLeaseTx is AcquireLease on tx: the lease is taken when tx
// commits, and a *store.LeaseHeldError names the live holder otherwise.
func (s *Store) AcquireLeaseTx(ctx context.Context, tx pgx.Tx, req store.LeaseRequest) (store.Lease, error) {
	if err := req.Validate(); err != nil {
		return store.Lease{}, fmt.Errorf("acquire lease %s: %w", req.Key, err)
	}
	now, err := nanos(req.Now, req.Now)
	if err != nil {
		return store.Lease{}, fmt.Errorf("acquire lease %s: %w", req.Key, err)
	}
	l, err := scanLease(tx.QueryRow(ctx, acquireLease,
		req.Key, req.ID, req.PID, req.Host, req.Addr, now, now+req.TTL.Nanoseconds(), req.Replace))
	if err == nil {
		return l, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return store.Lease{}, fmt.Errorf("acquire lease %s: %w", req.Key, dbError(err))
	}
	// The upsert found a row it may not take; under READ COMMITTED that
	// row is visible to this statement too.
	held, err := scanLease(tx.QueryRow(ctx, `SELECT `+leaseColumns+` FROM leases WHERE key = $1`, req.Key))
	if err != nil {
		return store.Lease{}, fmt.Errorf("acquire lease %s: read its holder: %w", req.Key, err)
	}
	return store.Lease{}, fmt.Errorf("acquire lease %s: %w", req.Key, &store.LeaseHeldError{Lease: held})
}

// ExpireLeaseTx deletes the lease with key when it expired at now (its
// expires_at <= now), so its former owner's next renewal fails with
// store.ErrLeaseLost; it reports whether it deleted one. A live lease,
// or none, is left alone.
func (s *Store) ExpireLeaseTx(ctx context.Context, tx pgx.Tx, key string, now time.Time) (bool, error) {
	at, err := nanos(now, now)
	if err != nil {
		return false, fmt.Errorf("expire lease %s: %w", key, err)
	}
	tag, err := tx.Exec(ctx, `DELETE FROM leases WHERE key = $1 AND expires_at <= $2`, key, at)
	if err != nil {
		return false, fmt.Errorf("expire lease %s: %w", key, err)
	}
	return tag.RowsAffected() > 0, nil
}
