package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
)

// Leases.
//
// A lease names the one owner of a resource, across processes and
// machines. A run is driven only by the holder of its lease (key
// RunLeaseKey(id)); cluster workers will take the lease of a node with
// the same records and the same four methods.
//
// The contract, which every dialect implements as a compare-and-set on the
// owner inside one transaction:
//
//   - AcquireLease takes the lease for req.Owner when there is none, when
//     it is already req.Owner's (acquiring again renews it), when it
//     expired (Expires <= req.Now), or when its owner is req.Replace (the
//     caller found that owner dead, see Lease.Dead). Otherwise it fails
//     with a *LeaseHeldError, which unwraps to ErrLeaseHeld and tells who
//     holds it.
//   - RenewLease moves Heartbeat to req.Now and Expires to req.Now+req.TTL
//     only while the lease is still req.Owner's, expired or not: expiry
//     permits a takeover, it does not revoke by itself. Once someone else
//     took it (or it was released) renewing fails with ErrLeaseLost, and
//     the former owner must stop working on the resource.
//   - ReleaseLease drops the lease only if it is owner's; releasing a lease
//     one does not hold is a no-op, so a late release cannot free another
//     owner's lease.
//   - GetLease reads it (ErrNotFound when there is none, e.g. released).
//
// Times come from the caller (req.Now), so tests inject a clock and every
// participant compares its own clock to the expiry: owners must renew well
// within TTL (the engine renews every TTL/3) so that modest clock skew
// between machines does not let a live lease look expired.
type LeaseStore interface {
	AcquireLease(ctx context.Context, req LeaseRequest) (Lease, error)
	RenewLease(ctx context.Context, req LeaseRequest) (Lease, error)
	ReleaseLease(ctx context.Context, key, owner string) error
	GetLease(ctx context.Context, key string) (Lease, error)
}

// Lease errors.
var (
	// ErrLeaseHeld refuses a lease that another live owner holds; the
	// error is a *LeaseHeldError.
	ErrLeaseHeld = errors.New("lease held by another owner")
	// ErrLeaseLost refuses to renew a lease that is no longer the
	// caller's.
	ErrLeaseLost = errors.New("lease lost to another owner")
)

// RunLeaseKey is the key of run id's owner lease.
func RunLeaseKey(runID string) string { return "run:" + runID }

// Owner identifies a lease holder: a random id, and the process and
// machine that hold it (for people, and for finding dead owners).
type Owner struct {
	ID   string `json:"owner"`
	PID  int    `json:"pid"`
	Host string `json:"host"`
}

// NewOwner returns an owner with a fresh random id for this process.
func NewOwner() Owner {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return Owner{ID: hex.EncodeToString(b[:]), PID: os.Getpid(), Host: Hostname()}
}

var hostname = sync.OnceValue(func() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "localhost"
	}
	return h
})

// Hostname is this machine's name as leases record it.
func Hostname() string { return hostname() }

// Lease is one held lease.
type Lease struct {
	Key string `json:"key"`
	Owner
	// Addr is where the owner takes requests for the resource (a run's
	// answer socket); "" when it takes none.
	Addr       string    `json:"addr,omitempty"`
	AcquiredAt time.Time `json:"acquired_at"`
	Heartbeat  time.Time `json:"heartbeat"`
	Expires    time.Time `json:"expires"`
}

// LeaseRequest asks to acquire or renew a lease.
type LeaseRequest struct {
	Key string
	Owner
	Addr string
	// Now is the caller's clock; the lease expires at Now+TTL.
	Now time.Time
	TTL time.Duration
	// Replace is the owner id the caller found dead (AcquireLease only):
	// its lease is taken over even before it expires.
	Replace string
}

// Validate reports whether req can be sent to a dialect.
func (req LeaseRequest) Validate() error {
	switch {
	case req.Key == "":
		return fmt.Errorf("%w: lease key is empty", ErrInvalid)
	case req.ID == "":
		return fmt.Errorf("%w: lease owner is empty", ErrInvalid)
	case req.Now.IsZero():
		return fmt.Errorf("%w: lease request has no time", ErrInvalid)
	case req.TTL <= 0:
		return fmt.Errorf("%w: lease ttl %v is not positive", ErrInvalid, req.TTL)
	}
	return nil
}

// Expired reports whether l may be taken over at now by its expiry alone.
func (l Lease) Expired(now time.Time) bool { return !now.Before(l.Expires) }

// Dead reports whether l's owner is gone at now: the lease expired, or its
// owner ran on this machine and its process no longer exists. A live pid
// may be a recycled one; the lease then waits for its expiry.
func (l Lease) Dead(now time.Time) bool {
	return l.Expired(now) || (l.Host == Hostname() && l.PID > 0 && processGone(l.PID))
}

// LeaseHeldError is the error of AcquireLease when another live owner
// holds the lease.
type LeaseHeldError struct{ Lease }

func (e *LeaseHeldError) Error() string {
	return fmt.Sprintf("%s is owned by pid %d on %s (since %s, last heartbeat %s)", e.Key, e.PID, e.Host,
		e.AcquiredAt.Local().Format(time.DateTime), e.Heartbeat.Local().Format(time.TimeOnly))
}

// Is makes errors.Is(err, ErrLeaseHeld) hold.
func (e *LeaseHeldError) Is(target error) bool { return target == ErrLeaseHeld }

// Acquire takes a lease through ls, taking over at once a lease whose
// owner is dead (Lease.Dead), and otherwise fails with the
// *LeaseHeldError of the live owner.
func Acquire(ctx context.Context, ls LeaseStore, req LeaseRequest) (Lease, error) {
	l, err := ls.AcquireLease(ctx, req)
	var held *LeaseHeldError
	if !errors.As(err, &held) || !held.Dead(req.Now) {
		return l, err
	}
	req.Replace = held.ID
	return ls.AcquireLease(ctx, req)
}
