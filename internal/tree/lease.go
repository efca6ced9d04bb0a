package tree

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/arbor-run/arbor/internal/store"
)

// Leases.
//
// A run is driven by the one holder of its lease (store.RunLeaseKey):
// Drive and Host take it before they read the run and keep it with a
// heartbeat goroutine until they end; Answer and Raise take it for the
// moment they write a run nobody drives. A lease whose owner is dead is
// taken over at once (store.Acquire). An engine that loses its lease
// (someone took it over because its heartbeats stopped) cancels the drive
// and writes nothing more, so no node runs twice.
//
// A hosted run (a headless session) is idle most of its life: its host
// waits for a person's next message and no child agent runs. While it is
// idle the heartbeat renews the lease for IdleLeaseTTL (default 30
// minutes) and sleeps a third of that instead of waking every Heartbeat,
// so a thousand waiting sessions wake nothing; the first child agent to
// start wakes it back to the short beat. The lease stays as exclusive as
// before: a second process still finds it held, and an owner that died
// on this machine is still taken over at once (Lease.Dead checks its
// pid). Only the takeover of a session whose process died on another
// machine (a shared PostgreSQL store) waits longer: up to IdleLeaseTTL.

// Lease timing defaults.
const (
	defaultHeartbeat = 2 * time.Second
	// defaultIdleLeaseTTL is how long an idle hosted run's lease lasts.
	defaultIdleLeaseTTL = 30 * time.Minute
	// ttlBeats is the lease's lifetime in heartbeats: two may be missed.
	ttlBeats = 3
)

// ErrLeaseLost ends a drive whose lease another process took over.
var ErrLeaseLost = store.ErrLeaseLost

// lease is a run's owner lease held by this engine.
type lease struct {
	e   *Engine
	req store.LeaseRequest

	mu      sync.Mutex // guards expires
	expires time.Time

	stop     context.CancelFunc // stops the heartbeat
	beating  sync.WaitGroup
	released sync.Once

	// idle, when set, reports whether the run has nothing running that
	// the lease must be watched for (see keep); wake (capacity 1) tells
	// the heartbeat that this changed.
	idle func() bool
	wake chan struct{}
}

// acquire takes run id's lease for a new owner, taking over a dead
// owner's; addr is where this process takes answers for the run ("" for
// none). It fails with a *store.LeaseHeldError while a live owner holds it.
func (e *Engine) acquire(ctx context.Context, id, addr string) (*lease, error) {
	req := store.LeaseRequest{Key: store.RunLeaseKey(id), Owner: store.NewOwner(), Addr: addr,
		Now: e.o.Now(), TTL: e.o.LeaseTTL}
	held, err := store.Acquire(ctx, e.o.Store, req)
	if err != nil {
		return nil, err
	}
	return &lease{e: e, req: req, expires: held.Expires, stop: func() {}, wake: make(chan struct{}, 1)}, nil
}

// keep renews the lease every heartbeat until release. When the lease is
// lost, or cannot be renewed before it expires, it calls lost once with
// an error wrapping ErrLeaseLost and stops. While l.idle reports true the
// lease is renewed for IdleLeaseTTL and the next renewal is a third of
// that away; busy cuts such a wait short.
func (l *lease) keep(lost func(error)) {
	ctx, cancel := context.WithCancel(context.Background())
	l.stop = cancel
	l.beating.Go(func() {
		timer := time.NewTimer(l.e.o.Heartbeat)
		defer timer.Stop()
		idle := false // the last renewal was an idle one
		for {
			select {
			case <-ctx.Done():
				return
			case <-timer.C:
			case <-l.wake:
				if !idle {
					continue // the short beat runs already
				}
			}
			idle = l.idle != nil && l.idle()
			ttl, next := l.e.o.LeaseTTL, l.e.o.Heartbeat
			if idle {
				ttl, next = l.e.o.IdleLeaseTTL, l.e.o.IdleLeaseTTL/ttlBeats
			}
			if err := l.renew(ctx, ttl); err != nil {
				if ctx.Err() == nil {
					lost(err)
				}
				return
			}
			timer.Reset(next)
		}
	})
}

// busy tells the heartbeat that the run has work again. It never blocks,
// so it may be called under the run's lock.
func (l *lease) busy() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// renew renews the lease once for ttl. A failure that is not a loss is
// retried on the next heartbeat while the lease has not expired.
func (l *lease) renew(ctx context.Context, ttl time.Duration) error {
	req := l.req
	req.Now, req.TTL = l.e.o.Now(), ttl
	held, err := l.e.o.Store.RenewLease(ctx, req)
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case err == nil:
		l.expires = held.Expires
		return nil
	case errors.Is(err, store.ErrLeaseLost):
		return err
	case !req.Now.Before(l.expires):
		return fmt.Errorf("%w: not renewed before it expired: %w", store.ErrLeaseLost, err)
	}
	return nil
}

// release stops the heartbeat and gives the lease up. It is safe to call
// more than once.
func (l *lease) release() {
	l.released.Do(func() {
		l.stop()
		l.beating.Wait()
		_ = l.e.o.Store.ReleaseLease(context.Background(), l.req.Key, l.req.ID)
	})
}

// leaseLost reports whether r's drive ended because its lease was lost.
func (r *run) leaseLost() bool { return errors.Is(context.Cause(r.ctx), store.ErrLeaseLost) }
