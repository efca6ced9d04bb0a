package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/arbor-run/arbor/internal/store"
)

const leaseColumns = `key, owner, pid, host, addr, acquired_at, heartbeat_at, expires_at`

// acquireLease is the compare-and-set of AcquireLease in one statement: it
// inserts the lease, or takes over the row when it is the caller's, has
// expired or belongs to the owner the caller found dead ($8). Racing
// inserts of a new key wait on each other's uniqueness check, and a racer
// for an existing row waits on its lock and then re-checks the WHERE
// clause on the winner's row, so exactly one acquirer wins. Acquiring
// again keeps the first acquired_at.
const acquireLease = `INSERT INTO leases (` + leaseColumns + `) VALUES ($1, $2, $3, $4, $5, $6, $6, $7)
	` + takeLease

// takeLease is acquireLease's conflict clause, shared with claimLease.
const takeLease = `ON CONFLICT (key) DO UPDATE SET owner = excluded.owner, pid = excluded.pid, host = excluded.host,
		addr = excluded.addr,
		acquired_at = CASE WHEN leases.owner = excluded.owner THEN leases.acquired_at ELSE excluded.acquired_at END,
		heartbeat_at = excluded.heartbeat_at, expires_at = excluded.expires_at
	WHERE leases.owner = excluded.owner OR leases.expires_at <= excluded.heartbeat_at
		OR ($8::text <> '' AND leases.owner = $8::text)
	RETURNING ` + leaseColumns

// AcquireLease implements store.LeaseStore as one atomic upsert; when it
// takes nothing, the holder it lost to is read back for the
// *store.LeaseHeldError.
func (s *Store) AcquireLease(ctx context.Context, req store.LeaseRequest) (store.Lease, error) {
	if err := req.Validate(); err != nil {
		return store.Lease{}, fmt.Errorf("acquire lease %s: %w", req.Key, err)
	}
	now, err := nanos(req.Now, req.Now)
	if err != nil {
		return store.Lease{}, fmt.Errorf("acquire lease %s: %w", req.Key, err)
	}
	expires := now + req.TTL.Nanoseconds()
	for {
		l, err := scanLease(s.pool.QueryRow(ctx, acquireLease,
			req.Key, req.ID, req.PID, req.Host, req.Addr, now, expires, req.Replace))
		if err == nil {
			return l, nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return store.Lease{}, fmt.Errorf("acquire lease %s: %w", req.Key, dbError(err))
		}
		held, err := s.GetLease(ctx, req.Key)
		if errors.Is(err, store.ErrNotFound) {
			continue // released since: try again
		}
		if err != nil {
			return store.Lease{}, fmt.Errorf("acquire lease %s: %w", req.Key, err)
		}
		return store.Lease{}, fmt.Errorf("acquire lease %s: %w", req.Key, &store.LeaseHeldError{Lease: held})
	}
}

// RenewLease implements store.LeaseStore: the update matches only while
// the lease is still req.Owner's.
func (s *Store) RenewLease(ctx context.Context, req store.LeaseRequest) (store.Lease, error) {
	if err := req.Validate(); err != nil {
		return store.Lease{}, fmt.Errorf("renew lease %s: %w", req.Key, err)
	}
	now, err := nanos(req.Now, req.Now)
	if err != nil {
		return store.Lease{}, fmt.Errorf("renew lease %s: %w", req.Key, err)
	}
	l, err := scanLease(s.pool.QueryRow(ctx, `UPDATE leases SET heartbeat_at = $1, expires_at = $2
		WHERE key = $3 AND owner = $4 RETURNING `+leaseColumns,
		now, now+req.TTL.Nanoseconds(), req.Key, req.ID))
	if errors.Is(err, pgx.ErrNoRows) {
		err = store.ErrLeaseLost
	}
	if err != nil {
		return store.Lease{}, fmt.Errorf("renew lease %s: %w", req.Key, err)
	}
	return l, nil
}

// ReleaseLease implements store.LeaseStore. The delete goes through the
// committer (inBatch), so a turn's release shares the commit of the
// writes queued beside it; in a shared batch it comes after the other
// writes (writeReq.last): a claim locks its node row and then its lease,
// and a batch that held a lease row while it waited for a node row could
// deadlock with it. The other lease calls are sent on their own: a
// renewal must not wait behind other writes.
func (s *Store) ReleaseLease(ctx context.Context, key, owner string) error {
	r := &writeReq{ctx: ctx, last: true, done: make(chan struct{}),
		build: func(b *pgx.Batch) { b.Queue(`DELETE FROM leases WHERE key = $1 AND owner = $2`, key, owner) },
		read:  func(br pgx.BatchResults) error { _, err := br.Exec(); return err }}
	if err := s.group.send(ctx, r); err != nil {
		return fmt.Errorf("release lease %s: %w", key, err)
	}
	return nil
}

// GetLease implements store.LeaseStore.
func (s *Store) GetLease(ctx context.Context, key string) (store.Lease, error) {
	l, err := scanLease(s.pool.QueryRow(ctx, `SELECT `+leaseColumns+` FROM leases WHERE key = $1`, key))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Lease{}, fmt.Errorf("get lease %s: %w", key, store.ErrNotFound)
	}
	if err != nil {
		return store.Lease{}, fmt.Errorf("get lease %s: %w", key, err)
	}
	return l, nil
}

func scanLease(row pgx.Row) (store.Lease, error) {
	var (
		l                     store.Lease
		acquired, beat, until int64
	)
	if err := row.Scan(&l.Key, &l.ID, &l.PID, &l.Host, &l.Addr, &acquired, &beat, &until); err != nil {
		return store.Lease{}, err
	}
	l.AcquiredAt, l.Heartbeat, l.Expires = fromNanos(acquired), fromNanos(beat), fromNanos(until)
	return l, nil
}
