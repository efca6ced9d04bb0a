package tree

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/store"
)

// run is one run being driven. Every field below mu is guarded by it.
// Events are collected under mu while a change is committed and published
// when it is released (publishing never waits for a subscriber, so a
// subscriber that calls back into the run cannot deadlock it).
type run struct {
	e    *Engine
	id   string
	ctx  context.Context // the Drive context
	disp *Local
	// hosted is a hosted run's lease, whose heartbeat sleeps while no
	// agent runs (launchLocked wakes it); nil for a driven run.
	hosted *lease

	// Commits queued without waiting (see unlock) keep the events and the
	// launches of the hold that queued them in the outbox until they are
	// durable; entries leave it in the order they entered, which is the
	// order of the holds of mu.
	outMu  sync.Mutex  // guards outbox and leftCond; held to add to entered and left
	outbox []*outEntry // oldest first
	// entered and left count the entries that entered and left the
	// outbox (read without outMu: the outbox is empty when they are
	// equal); leftCond broadcasts when left grows (waitOutbox).
	entered, left atomic.Uint64
	leftCond      *sync.Cond

	usageMu     sync.Mutex // guards the fields below up to mu (read by the budget gates)
	tokens      int64
	cost        float64
	reservedRun spend           // estimates of the run's calls in flight
	parents     map[int64]int64 // node → parent, for charging subtrees
	limits      map[int64]spend // nodes with a budget of their own
	spent       map[int64]spend // what each node's subtree used
	reserved    map[int64]spend // estimates of each subtree's calls in flight
	resv        map[int64]spend // each node's own reservation (one call at a time)
	settled     chan struct{}   // closed and replaced when a reservation settles

	mu    sync.Mutex
	meta  store.Run
	saved store.Run // meta as last committed, to skip rewriting it
	order []int64   // node ids, ascending (ids only grow)
	// live holds the nodes that have not ended (a terminal node never
	// changes again), so the scheduler's scans skip the ended ones; asks
	// are the ids of ask nodes, which start without a free slot.
	live liveSet
	asks []int64
	// calls maps a parent and the tool call id of a spawn, fork or ask to
	// the child it created (the first, if a model reused the id): a call
	// run again after a crash finds its node without a scan of the
	// parent's children, which made a step of n spawns cost n².
	calls map[callKey]int64
	// ended is set when a commit moved a node to failed or cancelled or
	// stored a pending node with dependencies (which may have ended
	// already): the only changes that give propagateLocked work.
	ended  bool
	agents map[int64]*agent.Agent // node agents built in this process
	remote map[int64]bool         // nodes whose turns went to Options.Remote
	// fresh holds the nodes whose session id their activation in this
	// process assigned: their session cannot exist yet (AgentSpec.Fresh).
	fresh    map[int64]bool
	nodes    map[int64]*store.Node
	children map[int64][]int64
	running  map[int64]context.CancelCauseFunc
	// notes are the notify messages a node's children sent it since its
	// last synthesis (kept in memory: a crash loses them, not the results).
	notes map[int64][]string
	maxID int64
	// budgetErr is set once the run's budget is spent: the run drains
	// (see finishBudgetLocked).
	budgetErr error
	pending   []agent.Event // events to publish after unlock
	// flight holds the waits of the commits this hold of mu queued
	// (endBatchLocked); gate is closed when what this hold's launches
	// wait for is durable and its events are published (unlock).
	flight []func() error
	gate   chan struct{}
	// unsaved are nodes created by a deferring agent's tools (toolsFor)
	// and not committed yet, in creation order: every write of the run
	// takes them along (commitLocked, flushLocked, closeLocked), and
	// their events are published then.
	unsaved []change
	// batching, set while endTurn applies a turn's end and schedules what
	// follows, makes commitLocked apply changes to memory and add them to
	// unsaved: the node's transition and the activations it leads to are
	// then one commit (endBatchLocked), before the launched agents can
	// take mu and start.
	batching bool
	// steered: a person may resume paused nodes (DriveOptions.Steered);
	// set before the run is published in Engine.live.
	steered bool
	// handoff: a cancelled drive leaves the run running for another
	// process (DriveOptions.Handoff); set like steered.
	handoff bool
	// treeTools are the tree tools of its nodes: not deferring, deferring.
	treeTools [2]treeTools
	done      chan struct{}
	finished  bool
}

var errInterrupted error = stopCause("run interrupted")

// open reads run id and its nodes from the store and builds the run.
func (e *Engine) open(ctx context.Context, id string) (*run, error) {
	meta, err := e.o.Store.GetRun(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("open run %s: %w", id, err)
	}
	nodes, err := e.o.Store.Nodes(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("open run %s: %w", id, err)
	}
	return e.build(ctx, meta, nodes, true)
}

// build makes the run of meta and its nodes as the store holds them;
// charge reads each node's session to charge what it spent (a run just
// created has spent nothing and skips the reads).
func (e *Engine) build(ctx context.Context, meta store.Run, nodes []store.Node, charge bool) (*run, error) {
	id := meta.ID
	r := &run{
		e: e, id: id, meta: meta, nodes: map[int64]*store.Node{}, children: map[int64][]int64{},
		running: map[int64]context.CancelCauseFunc{}, done: make(chan struct{}),
		disp: &Local{}, saved: meta, agents: map[int64]*agent.Agent{}, remote: map[int64]bool{}, fresh: map[int64]bool{},
		parents: map[int64]int64{}, limits: map[int64]spend{}, spent: map[int64]spend{},
		reserved: map[int64]spend{}, resv: map[int64]spend{}, settled: make(chan struct{}),
		notes: map[int64][]string{}, calls: map[callKey]int64{},
		ended: true, // dependencies may have ended before a crash
	}
	for _, n := range nodes {
		r.trackLocked(n)
	}
	for i := range nodes {
		n := nodes[i]
		r.nodes[n.ID] = &n
		r.addLocked(&n)
		if n.ParentID != 0 {
			r.children[n.ParentID] = append(r.children[n.ParentID], n.ID)
		}
		r.maxID = max(r.maxID, n.ID)
		if charge && n.SessionID != "" {
			if s, err := e.o.Store.GetSession(ctx, n.SessionID); err == nil {
				r.chargeLocked(n.ID, spend{tokens: s.Usage.Total(), cost: s.CostUSD})
			}
		}
	}
	if _, ok := r.nodes[1]; !ok {
		return nil, fmt.Errorf("open run %s: root node missing: %w", id, store.ErrNotFound)
	}
	return r, nil
}

// drive runs r until its root ends or ctx (which is r.ctx) is cancelled.
func (r *run) drive(ctx context.Context) (store.Run, error) {
	r.mu.Lock()
	if root := r.nodes[1]; root.State.Terminal() {
		// Write the outcome the root implies, repairing a run that a
		// killed process left marked otherwise.
		r.finishLocked(root)
		meta := r.meta
		r.unlock()
		r.waitOutbox()
		return meta, nil
	}
	r.meta.Status = store.RunRunning
	r.meta.Error = ""
	r.commitLocked(nil)
	r.scheduleLocked()
	r.unlock()

	select {
	case <-r.done:
	case <-ctx.Done():
		r.mu.Lock()
		for _, cancel := range r.running {
			cancel(errInterrupted)
		}
		r.unlock()
	}
	r.disp.Wait()

	r.mu.Lock()
	switch root := r.nodes[1]; {
	case r.finished:
	case r.leaseLost():
		// The run is another process's now: leave its row alone.
	case root.State.Terminal():
		r.finishLocked(root)
	case r.handoff:
		// Another worker takes the run on; its row stays running.
		r.commitLocked(nil)
	default:
		r.meta.Status = store.RunInterrupted
		r.meta.Error = "interrupted; resume with: arbor resume " + r.id
		if r.isHostedLocked() {
			// A conversation's tree: the conversation goes on, not the run.
			r.meta.Error = "its conversation ended; continue it with: arbor headless -r " + r.id + " (or arbor mcp --run " + r.id + ")"
		}
		r.commitLocked(nil)
	}
	meta := r.meta
	r.unlock()
	r.waitOutbox()
	return meta, nil
}

// addLocked adds a node new to this run's order (ids arrive ascending).
func (r *run) addLocked(n *store.Node) {
	r.order = append(r.order, n.ID)
	if n.Kind == KindAsk {
		r.asks = append(r.asks, n.ID)
	}
	if !n.State.Terminal() {
		r.live.add(n.ID, n.ParentID)
	}
	if n.CallID != "" {
		k := callKey{parent: n.ParentID, call: n.CallID}
		if _, ok := r.calls[k]; !ok {
			r.calls[k] = n.ID
		}
	}
}

// callKey names the tool call that created a node: its parent and the
// call's id.
type callKey struct {
	parent int64
	call   string
}

// endedLocked takes a node that a change moved from was to is out of the
// live set when the change ended it, and drops its agent: a node that
// ended never runs again, and a run of 10,000 nodes held 10,000 agents
// with their transcripts until it ended.
func (r *run) endedLocked(was, is *store.Node) {
	if was != nil && !was.State.Terminal() && is.State.Terminal() {
		r.live.end(is.ID, is.ParentID)
		delete(r.agents, is.ID)
		delete(r.remote, is.ID)
	}
}

// abandonLocked ends a run whose lease was lost like a failed commit
// does, but writes nothing and announces nothing: the run goes on in the
// process that took it over.
func (r *run) abandonLocked() {
	if r.finished {
		return
	}
	r.finished = true
	for _, cancel := range r.running {
		cancel(context.Cause(r.ctx))
	}
	close(r.done)
}

func (r *run) failRunLocked(err error) {
	if r.finished {
		return
	}
	r.finished = true
	r.meta.Status = store.RunFailed
	r.meta.Error = err.Error()
	for _, cancel := range r.running {
		cancel(err)
	}
	meta := r.meta
	if !r.leaseLost() {
		_ = r.e.o.Store.Commit(context.WithoutCancel(r.ctx), &meta, r.unsavedNodesLocked()...)
	}
	r.pending = append(r.pending, &RunFinished{RunID: r.id, Outcome: r.meta.Status, Error: r.meta.Error})
	close(r.done)
}

func view(n store.Node) NodeView {
	return NodeView{
		ID: n.ID, ParentID: n.ParentID, Kind: n.Kind, Spawn: n.Spawn, Goal: n.Goal, State: n.State,
		BlockedBy: slices.Clone(n.BlockedBy), Result: n.Result, Error: n.Error, Question: n.Question,
		Options: slices.Clone(n.Options), SessionID: n.SessionID, Model: n.Model, Runner: n.Runner,
	}
}
