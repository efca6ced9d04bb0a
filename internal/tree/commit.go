// Committing a run's changes: node transitions and the run row written
// in one transaction (or queued, or staged while a turn's end is batched).

package tree

import (
	"context"
	"fmt"
	"time"

	"github.com/arbor-run/arbor/internal/store"
)

// change is one node transition to commit.
type change struct {
	node   store.Node
	from   store.NodeState
	reason string
}

// commitLocked writes the run row and the changed nodes in one
// transaction, then queues their events. A failed commit is fatal to the
// run: the in-memory state would no longer match the store.
func (r *run) commitLocked(changes []change) { r.writeLocked(changes, false) }

// writeLocked is commitLocked; with queue, and a store that can queue a
// commit (AsyncCommitter), the commit is queued and waited for by unlock
// after mu is released, so the transitions of several nodes' turn ends
// can share one store transaction instead of queueing for mu. Memory is
// updated at once; the events wait for the commit (unlock).
func (r *run) writeLocked(changes []change, queue bool) {
	if r.leaseLost() {
		r.abandonLocked()
		return
	}
	if r.batching {
		r.stageLocked(changes)
		return
	}
	now := r.e.o.Now().UTC()
	created := r.unsaved
	changes = append(created[:len(created):len(created)], changes...)
	nodes := make([]store.Node, len(changes))
	for i, c := range changes {
		c.node.UpdatedAt = now
		nodes[i] = c.node
	}
	var meta *store.Run
	cur, prev := r.meta, r.saved
	cur.UpdatedAt, prev.UpdatedAt = time.Time{}, time.Time{}
	if cur != prev {
		r.meta.UpdatedAt = now
		m := r.meta
		meta = &m
	}
	if ac, ok := r.e.o.Store.(AsyncCommitter); ok && queue {
		r.flight = append(r.flight, ac.CommitAsync(context.WithoutCancel(r.ctx), meta, nodes...))
	} else if err := r.e.o.Store.Commit(context.WithoutCancel(r.ctx), meta, nodes...); err != nil {
		r.failRunLocked(fmt.Errorf("store: %w", err))
		return
	}
	if meta != nil {
		r.saved = *meta
	}
	for i, c := range changes {
		// Nodes are never changed in place (a change is a copy), so
		// memory may point into nodes, which the commit only reads.
		n := &nodes[i]
		if n.State == StateFailed || n.State == StateCancelled || n.State == StatePending && len(n.BlockedBy) > 0 {
			r.ended = true
		}
		if i >= len(created) { // a created node may have changed since
			r.endedLocked(r.nodes[n.ID], n)
			r.nodes[n.ID] = n
		}
		r.pending = append(r.pending, &NodeChanged{RunID: r.id, From: c.from, Node: view(*n), Reason: c.reason})
	}
	// Written: the array of unsaved takes the next ones (a step of
	// thousands of spawns grew a new one after every commit).
	clear(created)
	r.unsaved = created[:0]
}

// stageLocked applies changes to memory and leaves them for the run's
// next commit (unsaved).
func (r *run) stageLocked(changes []change) {
	for _, c := range changes {
		n := c.node
		if n.State == StateFailed || n.State == StateCancelled || n.State == StatePending && len(n.BlockedBy) > 0 {
			r.ended = true
		}
		r.endedLocked(r.nodes[n.ID], &n)
		r.nodes[n.ID] = &n
		r.unsaved = append(r.unsaved, c)
	}
}

// endBatchLocked ends a batch (see batching) with one commit of what it
// changed, if anything.
func (r *run) endBatchLocked() {
	r.batching = false
	cur, prev := r.meta, r.saved
	cur.UpdatedAt, prev.UpdatedAt = time.Time{}, time.Time{}
	if !r.finished && (len(r.unsaved) > 0 || cur != prev) {
		r.writeLocked(nil, true)
	}
}

// flushFor is node id's agent's flush (agent.Config.Flush): the nodes its
// tools created are committed before its tool results are stored.
func (r *run) flushFor(id int64) func(ctx context.Context) error {
	return func(context.Context) error {
		r.mu.Lock()
		defer r.unlock()
		if len(r.unsaved) == 0 || r.finished {
			return nil
		}
		r.commitLocked(nil)
		if r.finished && !r.leaseLost() {
			return fmt.Errorf("#%d: the nodes it created could not be stored: %s", id, r.meta.Error)
		}
		return nil
	}
}

// unsavedNodesLocked returns the nodes of unsaved, to be written by a
// commit of the run row alone, and queues their events.
func (r *run) unsavedNodesLocked() []store.Node {
	nodes := make([]store.Node, len(r.unsaved))
	for i, c := range r.unsaved {
		nodes[i] = c.node
		r.pending = append(r.pending, &NodeChanged{RunID: r.id, From: c.from, Node: view(c.node), Reason: c.reason})
	}
	r.unsaved = nil
	return nodes
}

// set applies fn to a copy of node id and commits it as one transition.
func (r *run) setLocked(id int64, reason string, fn func(n *store.Node)) {
	n := *r.nodes[id]
	from := n.State
	fn(&n)
	if n.State.Terminal() && n.EndedAt == nil {
		t := r.e.o.Now().UTC()
		n.EndedAt = &t
	}
	r.commitLocked([]change{{node: n, from: from, reason: reason}})
}
