package tree

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/arbor-run/arbor/internal/store"
)

var errTimeout = errors.New("node timed out")

// scheduleLocked moves the run forward after any change: it fails the
// dependents of failed nodes, finishes the run when its root ended, starts
// synthesis for waiting nodes whose children all ended, and launches ready
// nodes up to the parallelism limit. It is the only place work starts.
func (r *run) scheduleLocked() {
	for !r.finished {
		if r.propagateLocked() {
			continue
		}
		if root := r.nodes[1]; root.State.Terminal() {
			r.finishLocked(root)
			return
		}
		break
	}
	if r.finished {
		return
	}
	if r.budgetErr != nil { // draining: nothing new starts
		r.finishBudgetLocked(r.budgetErr)
		return
	}
	free := r.meta.MaxParallel - r.agentsRunningLocked()
	for id := range r.live.all() {
		if free <= 0 {
			// Only asks start without a slot: look at those left.
			r.startAsksLocked(id)
			break
		}
		n := r.nodes[id]
		if _, busy := r.running[id]; busy {
			continue
		}
		before := len(r.running)
		switch {
		case n.Kind == KindHost:
			// Its front end runs it.
		case n.Kind == KindAsk:
			r.startAskLocked(id)
		case n.State == StateActive || n.State == StateSynthesizing:
			// Left running by a crash or an interrupt: continue it.
			r.launchLocked(id, r.runAgent)
		case n.State == StatePending && r.readyLocked(n):
			r.setLocked(id, "", func(m *store.Node) {
				m.State, m.StartedAt = StateActive, r.nowPtr()
				if m.SessionID == "" {
					m.SessionID = sessionID(r.id, id)
					r.fresh[id] = true
				}
			})
			r.launchLocked(id, r.runAgent)
		case n.State == StateWaiting && r.childrenDoneLocked(id):
			r.startSynthesisLocked(id)
			r.launchLocked(id, r.runAgent)
		}
		if len(r.running) > before && n.Kind != KindAsk {
			free--
		}
	}
	if len(r.running) == 0 && !r.finished {
		r.unstickLocked()
	}
}

// startAsksLocked starts the ask nodes from id on that are ready.
func (r *run) startAsksLocked(from int64) {
	for _, id := range r.asks {
		if _, busy := r.running[id]; id >= from && !busy {
			r.startAskLocked(id)
		}
	}
}

// startAskLocked starts ask node id if it is active or ready (an ask runs
// no agent, so it needs no slot).
func (r *run) startAskLocked(id int64) {
	n := r.nodes[id]
	if n.State != StateActive && !(n.State == StatePending && r.readyLocked(n)) {
		return
	}
	if n.State == StatePending {
		r.setLocked(id, "", func(n *store.Node) { n.State = StateActive; n.StartedAt = r.nowPtr() })
	}
	r.launchLocked(id, r.askNode)
}

// propagateLocked fails pending nodes whose dependencies failed or were
// cancelled. It reports whether it changed anything. Only a commit that
// ended a node that way gives it something to do.
func (r *run) propagateLocked() bool {
	if !r.ended {
		return false
	}
	r.ended = false
	var changes []change
	for id := range r.live.all() {
		n := r.nodes[id]
		if n.State != StatePending {
			continue
		}
		for _, dep := range n.BlockedBy {
			d := r.nodes[dep]
			if d.State == StateFailed || d.State == StateCancelled {
				c := *n
				c.State = StateFailed
				c.Error = fmt.Sprintf("dependency #%d %s: %s", dep, d.State, firstLine(d.Error))
				c.EndedAt = r.nowPtr()
				changes = append(changes, change{node: c, from: StatePending, reason: "dependency ended without a result"})
				break
			}
		}
	}
	if len(changes) == 0 {
		return false
	}
	r.commitLocked(changes)
	return true
}

// unstickLocked runs when nothing is running and the root has not ended:
// the only way there is a paused node that nothing can resume any more.
// Those nodes are cancelled, so their dependents and parents move on.
func (r *run) unstickLocked() {
	if r.isHostedLocked() || r.steered {
		return // the host (a person) may resume paused nodes at any time
	}
	var changes []change
	for _, id := range r.idsLocked() {
		if n := r.nodes[id]; n.State == StatePaused {
			c := *n
			c.State = StateCancelled
			c.Error = "paused, and no running node was left to resume it"
			c.EndedAt = r.nowPtr()
			changes = append(changes, change{node: c, from: StatePaused, reason: c.Error})
		}
	}
	if len(changes) == 0 {
		r.failRunLocked(errors.New("the run is stuck: no node can run (this is a bug in arbor)"))
		return
	}
	r.commitLocked(changes)
	r.scheduleLocked()
}

func (r *run) finishLocked(root *store.Node) {
	r.finished = true
	switch root.State {
	case StateComplete:
		r.meta.Status, r.meta.Result = store.RunComplete, root.Result
	case StateFailed:
		r.meta.Status, r.meta.Error = store.RunFailed, root.Error
	default:
		r.meta.Status, r.meta.Error = store.RunCancelled, root.Error
	}
	r.closeLocked()
}

// finishBudgetLocked ends the run because its budget is spent. Nodes keep
// their states, so the run can be resumed with a larger budget. Agents
// still running are not cancelled: a call in flight has cost money, so it
// finishes and is recorded, and the agent stops at its next gate, which
// refuses. The run ends when the last one did (asks are cancelled then).
func (r *run) finishBudgetLocked(err error) {
	if r.finished {
		return
	}
	if r.budgetErr == nil {
		r.budgetErr = err
	}
	if r.agentsRunningLocked() > 0 {
		return
	}
	r.finished = true
	r.meta.Status, r.meta.Error = store.RunBudget, r.budgetErr.Error()
	r.closeLocked()
}

func (r *run) closeLocked() {
	for _, cancel := range r.running {
		cancel(errInterrupted)
	}
	meta := r.meta
	if r.leaseLost() {
		// Nothing is written: the run is another process's.
	} else if err := r.e.o.Store.Commit(context.WithoutCancel(r.ctx), &meta, r.unsavedNodesLocked()...); err != nil {
		r.meta.Error += "; store: " + err.Error()
	}
	r.pending = append(r.pending, &RunFinished{RunID: r.id, Outcome: r.meta.Status, Result: r.meta.Result, Error: r.meta.Error})
	close(r.done)
}

// idsLocked returns the node ids in ascending order. The slice is shared:
// callers only read it.
func (r *run) idsLocked() []int64 { return r.order }

func (r *run) readyLocked(n *store.Node) bool {
	for _, dep := range n.BlockedBy {
		if r.nodes[dep].State != StateComplete {
			return false
		}
	}
	return true
}

func (r *run) childrenDoneLocked(id int64) bool { return r.live.openChildren(id) == 0 }

// agentsRunningLocked counts the running agents (asks do not count).
func (r *run) agentsRunningLocked() int {
	agents := 0
	for id := range r.running {
		if r.nodes[id].Kind != KindAsk {
			agents++
		}
	}
	return agents
}

// launchLocked dispatches work for node id with its own cancellable
// context (and deadline, when the run sets a node timeout).
func (r *run) launchLocked(id int64, work func(ctx context.Context, id int64)) {
	ctx, cancel := context.WithCancelCause(r.ctx)
	stop := func() {}
	if d := time.Duration(r.meta.NodeTimeout) * time.Millisecond; d > 0 && r.nodes[id].Kind != KindAsk {
		ctx, stop = context.WithTimeoutCause(ctx, d, errTimeout)
	}
	r.running[id] = cancel
	if r.hosted != nil && r.nodes[id].Kind != KindAsk {
		r.hosted.busy()
	}
	// The gate opens once what started the work is durable (unlock), and
	// in hold order: so a node's next turn also starts only after the
	// wait for its agent's last queued write (Result.Stored), which an
	// earlier hold's settle makes, has ended; the agent's own state is
	// not for two goroutines at once.
	gate := r.gateLocked()
	r.disp.Dispatch(func() {
		<-gate
		defer cancel(nil)
		defer stop()
		work(ctx, id)
	})
}

func (r *run) nowPtr() *time.Time {
	t := r.e.o.Now().UTC()
	return &t
}
