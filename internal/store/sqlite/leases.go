package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/arbor-run/arbor/internal/store"
)

const leaseColumns = `key, owner, pid, host, addr, acquired_at, heartbeat_at, expires_at`

// AcquireLease implements store.LeaseStore: a compare-and-set on the
// owner in one BEGIN IMMEDIATE transaction, so two processes racing for
// one lease serialize on the write lock and exactly one wins.
func (s *Store) AcquireLease(ctx context.Context, req store.LeaseRequest) (store.Lease, error) {
	if err := req.Validate(); err != nil {
		return store.Lease{}, fmt.Errorf("acquire lease %s: %w", req.Key, err)
	}
	now, err := nanos(req.Now, req.Now)
	if err != nil {
		return store.Lease{}, fmt.Errorf("acquire lease %s: %w", req.Key, err)
	}
	expires := now + req.TTL.Nanoseconds()
	var out store.Lease
	err = s.inTx(ctx, func(tx *wtx) error {
		held, err := scanLease(tx.QueryRowContext(ctx, `SELECT `+leaseColumns+` FROM leases WHERE key = ?`, req.Key))
		switch {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			return err
		case held.ID == req.ID:
			now = held.AcquiredAt.UnixNano() // acquiring again keeps the first time
		case held.Expired(req.Now) || (req.Replace != "" && held.ID == req.Replace):
		default:
			return &store.LeaseHeldError{Lease: held}
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO leases (`+leaseColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (key) DO UPDATE SET owner = excluded.owner, pid = excluded.pid, host = excluded.host,
			addr = excluded.addr, acquired_at = excluded.acquired_at, heartbeat_at = excluded.heartbeat_at,
			expires_at = excluded.expires_at`,
			req.Key, req.ID, req.PID, req.Host, req.Addr, now, req.Now.UnixNano(), expires)
		if err != nil {
			return err
		}
		out = store.Lease{Key: req.Key, Owner: req.Owner, Addr: req.Addr,
			AcquiredAt: fromNanos(now), Heartbeat: fromNanos(req.Now.UnixNano()), Expires: fromNanos(expires)}
		return nil
	})
	if err != nil {
		return store.Lease{}, fmt.Errorf("acquire lease %s: %w", req.Key, err)
	}
	return out, nil
}

// RenewLease implements store.LeaseStore.
func (s *Store) RenewLease(ctx context.Context, req store.LeaseRequest) (store.Lease, error) {
	if err := req.Validate(); err != nil {
		return store.Lease{}, fmt.Errorf("renew lease %s: %w", req.Key, err)
	}
	now, err := nanos(req.Now, req.Now)
	if err != nil {
		return store.Lease{}, fmt.Errorf("renew lease %s: %w", req.Key, err)
	}
	var out store.Lease
	err = s.inTx(ctx, func(tx *wtx) error {
		res, err := tx.ExecContext(ctx, `UPDATE leases SET heartbeat_at = ?, expires_at = ? WHERE key = ? AND owner = ?`,
			now, now+req.TTL.Nanoseconds(), req.Key, req.ID)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return store.ErrLeaseLost
		}
		out, err = scanLease(tx.QueryRowContext(ctx, `SELECT `+leaseColumns+` FROM leases WHERE key = ?`, req.Key))
		return err
	})
	if err != nil {
		return store.Lease{}, fmt.Errorf("renew lease %s: %w", req.Key, err)
	}
	return out, nil
}

// ReleaseLease implements store.LeaseStore.
func (s *Store) ReleaseLease(ctx context.Context, key, owner string) error {
	err := s.inTx(ctx, func(tx *wtx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM leases WHERE key = ? AND owner = ?`, key, owner)
		return err
	})
	if err != nil {
		return fmt.Errorf("release lease %s: %w", key, err)
	}
	return nil
}

// GetLease implements store.LeaseStore.
func (s *Store) GetLease(ctx context.Context, key string) (store.Lease, error) {
	l, err := scanLease(s.read.QueryRowContext(ctx, `SELECT `+leaseColumns+` FROM leases WHERE key = ?`, key))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Lease{}, fmt.Errorf("get lease %s: %w", key, store.ErrNotFound)
	}
	if err != nil {
		return store.Lease{}, fmt.Errorf("get lease %s: %w", key, err)
	}
	return l, nil
}

func scanLease(sc scanner) (store.Lease, error) {
	var (
		l                     store.Lease
		acquired, beat, until int64
	)
	if err := sc.Scan(&l.Key, &l.ID, &l.PID, &l.Host, &l.Addr, &acquired, &beat, &until); err != nil {
		return store.Lease{}, err
	}
	l.AcquiredAt, l.Heartbeat, l.Expires = fromNanos(acquired), fromNanos(beat), fromNanos(until)
	return l, nil
}
