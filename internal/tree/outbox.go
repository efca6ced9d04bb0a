// The run's outbox: the events collected under mu are published, and the
// gate of the work launched opened, when mu is released or, when that hold
// queued a commit, once the commit is durable, in the order of the holds.

package tree

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/arbor-run/arbor/internal/agent"
)

// unlock publishes the events collected under mu and releases it.
// Publishing under mu keeps the events in commit order; it only queues
// them for the subscribers.
//
// When this hold queued a commit (flight), or an earlier hold's commit is
// still on its way (the outbox is not empty), the hold's events and
// launches go to the outbox instead: unlock releases mu, waits for the hold's commits to be
// durable, and then publishes the events and opens the gate of the
// launched work, in hold order. A failed commit fails the run, as a
// failed synchronous commit does.
func (r *run) unlock() {
	if len(r.flight) == 0 && r.entered.Load() == r.left.Load() {
		for _, ev := range r.pending {
			r.e.o.Bus.Publish(ev)
		}
		r.pending = nil
		if r.gate != nil {
			close(r.gate)
			r.gate = nil
		}
		r.mu.Unlock()
		return
	}
	e, waits := r.holdLocked()
	r.mu.Unlock()
	r.settle(e, waits)
}

// unlockDetached is unlock for a caller that need not wait for this
// hold's commits (a spawn that launched what it created: the spawning
// agent goes on with its step, and the launched work waits at its gate):
// the wait, and the events and the gate after it, are left to a job of
// the run's dispatcher, which the run waits for.
func (r *run) unlockDetached() {
	if len(r.flight) == 0 && r.entered.Load() == r.left.Load() {
		r.unlock()
		return
	}
	e, waits := r.holdLocked()
	r.mu.Unlock()
	r.disp.Dispatch(func() { r.settle(e, waits) })
}

// holdLocked moves this hold's events, gate and commits to a new outbox
// entry.
func (r *run) holdLocked() (*outEntry, []func() error) {
	e := &outEntry{events: r.pending, gate: r.gate}
	waits := r.flight
	r.pending, r.gate, r.flight = nil, nil, nil
	r.outMu.Lock()
	r.outbox = append(r.outbox, e)
	r.entered.Add(1)
	r.outMu.Unlock()
	return e, waits
}

// settle waits for a hold's commits, then marks its outbox entry ready
// and drains the outbox; a failed commit fails the run first.
func (r *run) settle(e *outEntry, waits []func() error) {
	var err error
	for _, wait := range waits {
		if werr := wait(); werr != nil && err == nil {
			err = werr
		}
	}
	if err != nil {
		// Before the gate opens: the work this hold launched starts
		// cancelled.
		r.mu.Lock()
		r.failRunLocked(fmt.Errorf("store: %w", err))
		r.unlock()
	}
	e.ready.Store(true)
	r.drainOutbox()
}

// outEntry is one hold's events and launch gate, waiting in the outbox
// for the commits of that hold.
type outEntry struct {
	events []agent.Event
	gate   chan struct{}
	ready  atomic.Bool // the hold's commits are done
}

// drainOutbox publishes the outbox's ready entries from the oldest on and
// opens their gates. An entry that is not ready stops it: its own hold
// drains it, and what queued behind it, once its commits are done.
func (r *run) drainOutbox() {
	r.outMu.Lock()
	defer r.outMu.Unlock()
	for len(r.outbox) > 0 && r.outbox[0].ready.Load() {
		e := r.outbox[0]
		r.outbox[0] = nil
		r.outbox = r.outbox[1:]
		for _, ev := range e.events {
			r.e.o.Bus.Publish(ev)
		}
		if e.gate != nil {
			close(e.gate)
		}
		r.left.Add(1)
	}
	if r.leftCond != nil {
		r.leftCond.Broadcast()
	}
}

// waitOutbox returns once the events of every hold made before the call
// are published. Holds made meanwhile are not waited for, so a run that
// keeps changing cannot keep it waiting.
func (r *run) waitOutbox() {
	r.outMu.Lock()
	defer r.outMu.Unlock()
	target := r.entered.Load()
	if r.left.Load() >= target {
		return
	}
	if r.leftCond == nil {
		r.leftCond = sync.NewCond(&r.outMu)
	}
	for r.left.Load() < target {
		r.leftCond.Wait()
	}
}

// gateLocked returns the gate of this hold's launches (see unlock).
func (r *run) gateLocked() <-chan struct{} {
	if r.gate == nil {
		r.gate = make(chan struct{})
	}
	return r.gate
}
