package storetest

import (
	"errors"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/store"
)

const ttl = 9 * time.Second

// leaseReq is a request of owner id (pid 4242 on another machine, so
// that only expiry or Replace ends its lease) at t.
func leaseReq(id string, t time.Time) store.LeaseRequest {
	return store.LeaseRequest{Key: "run:r1", Owner: store.Owner{ID: id, PID: 4242, Host: "elsewhere"}, Addr: "/tmp/" + id + ".sock", Now: t, TTL: ttl}
}

func testLeases(t *testing.T, open Opener) {
	t.Run("AcquireAndGet", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		got, err := b.st.AcquireLease(b.ctx, leaseReq("a", when))
		noErr(t, err)
		want := store.Lease{Key: "run:r1", Owner: store.Owner{ID: "a", PID: 4242, Host: "elsewhere"}, Addr: "/tmp/a.sock",
			AcquiredAt: when.UTC(), Heartbeat: when.UTC(), Expires: when.Add(ttl).UTC()}
		equal(t, "acquired", got, want)
		read, err := b.st.GetLease(b.ctx, "run:r1")
		noErr(t, err)
		equal(t, "read back", read, want)
		_, err = b.st.GetLease(b.ctx, "run:other")
		errIs(t, err, store.ErrNotFound)
	})

	t.Run("HeldByLiveOwner", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		first, err := b.st.AcquireLease(b.ctx, leaseReq("a", when))
		noErr(t, err)
		_, err = b.st.AcquireLease(b.ctx, leaseReq("b", when.Add(ttl-time.Nanosecond)))
		errIs(t, err, store.ErrLeaseHeld)
		var held *store.LeaseHeldError
		if !errors.As(err, &held) {
			t.Fatalf("error %v is not a *LeaseHeldError", err)
		}
		equal(t, "holder", held.Lease, first)
		read, err := b.st.GetLease(b.ctx, "run:r1")
		noErr(t, err)
		equal(t, "lease after refusal", read, first)
		// A wrong Replace changes nothing either.
		req := leaseReq("b", when)
		req.Replace = "c"
		_, err = b.st.AcquireLease(b.ctx, req)
		errIs(t, err, store.ErrLeaseHeld)
	})

	t.Run("AcquireAgainRenews", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		_, err := b.st.AcquireLease(b.ctx, leaseReq("a", when))
		noErr(t, err)
		got, err := b.st.AcquireLease(b.ctx, leaseReq("a", when.Add(time.Second)))
		noErr(t, err)
		equal(t, "acquired at", got.AcquiredAt, when.UTC())
		equal(t, "expires", got.Expires, when.Add(time.Second+ttl).UTC())
	})

	t.Run("Renew", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		_, err := b.st.AcquireLease(b.ctx, leaseReq("a", when))
		noErr(t, err)
		got, err := b.st.RenewLease(b.ctx, leaseReq("a", when.Add(3*time.Second)))
		noErr(t, err)
		equal(t, "heartbeat", got.Heartbeat, when.Add(3*time.Second).UTC())
		equal(t, "expires", got.Expires, when.Add(3*time.Second+ttl).UTC())
		equal(t, "acquired at", got.AcquiredAt, when.UTC())
		// Late but not taken over: still the owner's.
		got, err = b.st.RenewLease(b.ctx, leaseReq("a", when.Add(time.Hour)))
		noErr(t, err)
		equal(t, "late heartbeat", got.Heartbeat, when.Add(time.Hour).UTC())
		_, err = b.st.RenewLease(b.ctx, leaseReq("b", when.Add(time.Hour)))
		errIs(t, err, store.ErrLeaseLost)
		req := leaseReq("a", when)
		req.Key = "run:none"
		_, err = b.st.RenewLease(b.ctx, req)
		errIs(t, err, store.ErrLeaseLost)
	})

	t.Run("TakeoverAfterExpiry", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		_, err := b.st.AcquireLease(b.ctx, leaseReq("a", when))
		noErr(t, err)
		at := when.Add(ttl) // expiry is exclusive: the lease is dead from here
		got, err := b.st.AcquireLease(b.ctx, leaseReq("b", at))
		noErr(t, err)
		equal(t, "owner", got.ID, "b")
		equal(t, "acquired at", got.AcquiredAt, at.UTC())
		_, err = b.st.RenewLease(b.ctx, leaseReq("a", at))
		errIs(t, err, store.ErrLeaseLost)
		// The former owner's late release cannot free the new owner's lease.
		noErr(t, b.st.ReleaseLease(b.ctx, "run:r1", "a"))
		read, err := b.st.GetLease(b.ctx, "run:r1")
		noErr(t, err)
		equal(t, "lease after stale release", read, got)
	})

	t.Run("ReplaceDeadOwner", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		_, err := b.st.AcquireLease(b.ctx, leaseReq("a", when))
		noErr(t, err)
		req := leaseReq("b", when.Add(time.Second))
		req.Replace = "a"
		got, err := b.st.AcquireLease(b.ctx, req)
		noErr(t, err)
		equal(t, "owner", got.ID, "b")
		// A second replacer of the same dead owner loses to the first.
		req.ID = "c"
		_, err = b.st.AcquireLease(b.ctx, req)
		errIs(t, err, store.ErrLeaseHeld)
	})

	t.Run("Release", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		_, err := b.st.AcquireLease(b.ctx, leaseReq("a", when))
		noErr(t, err)
		noErr(t, b.st.ReleaseLease(b.ctx, "run:r1", "a"))
		noErr(t, b.st.ReleaseLease(b.ctx, "run:r1", "a"))
		_, err = b.st.GetLease(b.ctx, "run:r1")
		errIs(t, err, store.ErrNotFound)
		_, err = b.st.RenewLease(b.ctx, leaseReq("a", when))
		errIs(t, err, store.ErrLeaseLost)
		got, err := b.st.AcquireLease(b.ctx, leaseReq("b", when))
		noErr(t, err)
		equal(t, "owner", got.ID, "b")
	})

	t.Run("OneWinnerAmongRacers", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		const racers = 8
		var (
			wg   sync.WaitGroup
			mu   sync.Mutex
			won  []string
			errs []error
		)
		for i := range racers {
			wg.Go(func() {
				id := string(rune('a' + i))
				_, err := b.st.AcquireLease(b.ctx, leaseReq(id, when))
				mu.Lock()
				defer mu.Unlock()
				if err == nil {
					won = append(won, id)
				} else if !errors.Is(err, store.ErrLeaseHeld) {
					errs = append(errs, err)
				}
			})
		}
		wg.Wait()
		equal(t, "unexpected errors", errs, []error(nil))
		equal(t, "winners", len(won), 1)
		read, err := b.st.GetLease(b.ctx, "run:r1")
		noErr(t, err)
		equal(t, "owner", read.ID, won[0])
	})

	t.Run("AcquireTakesOverGoneProcess", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		gone := exec.Command("true")
		noErr(t, gone.Run())
		dead := leaseReq("a", when)
		dead.PID, dead.Host = gone.Process.Pid, store.Hostname()
		_, err := b.st.AcquireLease(b.ctx, dead)
		noErr(t, err)
		got, err := store.Acquire(b.ctx, b.st, leaseReq("b", when.Add(time.Second)))
		noErr(t, err)
		equal(t, "owner after takeover", got.ID, "b")
		// The same pid on another machine says nothing: wait for expiry.
		elsewhere := leaseReq("c", when.Add(time.Second))
		_, err = store.Acquire(b.ctx, b.st, elsewhere)
		errIs(t, err, store.ErrLeaseHeld)
		// A live process on this machine keeps its lease.
		live := leaseReq("d", when.Add(ttl+time.Second))
		live.Key, live.PID, live.Host = "run:r2", 1, store.Hostname()
		_, err = b.st.AcquireLease(b.ctx, live)
		noErr(t, err)
		_, err = store.Acquire(b.ctx, b.st, store.LeaseRequest{Key: "run:r2", Owner: store.NewOwner(), Now: when.Add(ttl + 2*time.Second), TTL: ttl})
		errIs(t, err, store.ErrLeaseHeld)
	})

	t.Run("Invalid", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		for _, req := range []store.LeaseRequest{
			{Owner: store.Owner{ID: "a"}, Now: when, TTL: ttl},
			{Key: "k", Now: when, TTL: ttl},
			{Key: "k", Owner: store.Owner{ID: "a"}, TTL: ttl},
			{Key: "k", Owner: store.Owner{ID: "a"}, Now: when},
		} {
			_, err := b.st.AcquireLease(b.ctx, req)
			errIs(t, err, store.ErrInvalid)
			_, err = b.st.RenewLease(b.ctx, req)
			errIs(t, err, store.ErrInvalid)
		}
	})
}
