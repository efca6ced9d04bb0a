package web

import (
	"context"
	"slices"
	"time"

	"github.com/arbor-run/arbor/internal/owner"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/tree"
)

// Runs another process drives.
//
// Their events are on that process's bus, not this one's. While a stream
// watches such a run, one watcher per run (shared by its streams)
// subscribes to the run's events on its owner's socket (the lease names
// it; package owner) and turns them into frames as the bus's are. Each
// time a subscription starts, the run's streams get a resync frame, so
// their clients reread the run once: that is the catch-up for whatever
// changed before, or between two owners. The owner never waits for the
// watcher (it drops a watcher that stops reading, which then subscribes
// again).
//
// Where there is no socket to subscribe to (a headless session's hosted
// run, an owner on another machine, a run nobody drives) the watcher
// falls back to reading the run's nodes and sending a node frame for each
// node whose state or update time changed, and a run frame when the run
// ends. It reads them when the store's change feed says the run changed
// (the postgres dialect: LISTEN/NOTIFY, so no polling), or every
// watchInterval on a store without one (SQLite). It sends nothing while
// this process drives the run (the bus does), and stops with its last
// stream.

const watchInterval = time.Second

// changeFeed is a store that tells when a run changed in any process.
type changeFeed interface {
	// RunChanges wakes its channel after each commit that wrote the run
	// and closes it when ctx ends; wake-ups coalesce.
	RunChanges(ctx context.Context, runID string) (<-chan struct{}, error)
}

type watcher struct {
	clients    int
	stop       chan struct{}
	subscribed bool // guarded by hub.mu: a subscription is streaming
	// ready is closed once the watcher follows the run (a subscription
	// started, or it read the run the first time): every later change is
	// sent.
	ready chan struct{}
}

// watch follows c's run while the returned unwatch is not called. A
// client that joins a subscription already streaming gets a resync, as
// those there when it started did: its events since the client read the
// run were not in the frames it got (their sequence numbers are this
// process's, so hello cannot tell). It returns once the watcher follows
// the run, so a client that reads the run after its stream opened misses
// no change.
func (h *hub) watch(ctx context.Context, c *client) (unwatch func()) {
	run := c.run
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return func() {}
	}
	w := h.watchers[run]
	if w == nil {
		w = &watcher{stop: make(chan struct{}), ready: make(chan struct{})}
		h.watchers[run] = w
		h.watching.Go(func() { h.follow(run, w) })
	}
	if w.subscribed {
		c.markLagged()
	}
	w.clients++
	h.mu.Unlock()
	select {
	case <-w.ready:
	case <-w.stop:
	case <-h.done:
	case <-ctx.Done(): // the client went away while the run's owner kept it waiting
	}
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if w.clients--; w.clients == 0 {
			close(w.stop)
			delete(h.watchers, run)
		}
	}
}

type seen struct {
	state   store.NodeState
	updated time.Time
}

func (h *hub) follow(run string, w *watcher) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		defer cancel()
		select {
		case <-w.stop:
		case <-h.done:
		case <-ctx.Done():
		}
	}()
	// Exactly one of changed and tick is non-nil.
	var changed <-chan struct{}
	if f, ok := h.st.(changeFeed); ok {
		changed, _ = f.RunChanges(ctx, run) // on an error, poll
	}
	var tick <-chan time.Time
	if changed == nil {
		t := time.NewTicker(watchInterval)
		defer t.Stop()
		tick = t.C
	}
	ready := w.ready
	markReady := func() {
		if ready != nil {
			close(ready)
			ready = nil
		}
	}
	defer markReady()
	var prev map[int64]seen // nil: not read yet, or followed otherwise meanwhile
	var status store.RunStatus
	for {
		switch socket, ok := h.ownerSocket(ctx, run); {
		case h.steer != nil && h.steer.Drives(run):
			prev = nil
		case ok && h.subscribe(ctx, w, run, socket, markReady):
			prev, status = nil, ""
		default:
			prev, status = h.poll(ctx, run, prev, status)
		}
		markReady()
		select {
		case <-ctx.Done():
			return
		case <-tick:
		case <-changed:
		}
	}
}

// ownerSocket is the socket of the live process driving run, if its
// lease names one.
func (h *hub) ownerSocket(ctx context.Context, run string) (string, bool) {
	l, err := h.st.GetLease(ctx, store.RunLeaseKey(run))
	if err != nil || l.Dead(time.Now()) || l.Addr == "" {
		return "", false
	}
	return l.Addr, true
}

// subscribe follows run through its owner's socket until the owner ends
// the stream or ctx ends; false when no subscription could start. started
// is called (on this goroutine) once the subscription streams.
func (h *hub) subscribe(ctx context.Context, w *watcher, run, socket string, onStart func()) bool {
	started := false
	defer func() {
		h.mu.Lock()
		w.subscribed = false
		h.mu.Unlock()
	}()
	_ = owner.Client{Socket: socket}.Subscribe(ctx,
		func(uint64) {
			started = true
			h.mu.Lock()
			w.subscribed = true
			h.mu.Unlock()
			h.resync(run)
			onStart()
		},
		func(e owner.Event) {
			h.translate(h.bus.Seq(), e.Value(), route{run: run, node: e.Node})
		})
	return started
}

// resync makes every stream of run send a resync frame (its client then
// rereads the run) before the frames queued after this call.
func (h *hub) resync(run string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for c := range h.clients {
		if c.run == run {
			c.markLagged()
		}
	}
}

// markLagged makes c's stream send a resync before its next frame.
func (c *client) markLagged() {
	c.mu.Lock()
	c.lagged = true
	c.mu.Unlock()
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// poll reads run's nodes once and sends a frame for each node changed
// since prev, and a run frame when the run ended since status.
func (h *hub) poll(ctx context.Context, run string, prev map[int64]seen, status store.RunStatus) (map[int64]seen, store.RunStatus) {
	r, err := h.st.GetRun(ctx, run)
	if err != nil {
		return prev, status
	}
	if nodes, err := h.st.Nodes(ctx, run); err == nil {
		prev = h.diff(run, prev, nodes)
	}
	if status != "" && r.Status != status && r.Status.Terminal() {
		h.emit(h.bus.Seq(), "run", run, RunFrame{RunID: run, Outcome: r.Status, Result: r.Result, Error: r.Error})
	}
	return prev, r.Status
}

// diff sends a frame for each node changed since prev (nothing on the
// first read) and returns what it saw.
func (h *hub) diff(run string, prev map[int64]seen, nodes []store.Node) map[int64]seen {
	now := make(map[int64]seen, len(nodes))
	for _, n := range nodes {
		cur := seen{n.State, n.UpdatedAt}
		now[n.ID] = cur
		if prev == nil {
			continue
		}
		if old, ok := prev[n.ID]; !ok || old != cur {
			h.emit(h.bus.Seq(), "node", run, NodeFrame{RunID: run, From: old.state, Node: nodeView(n)})
		}
	}
	return now
}

// nodeView is n as the engine's NodeChanged events show it.
func nodeView(n store.Node) tree.NodeView {
	return tree.NodeView{ID: n.ID, ParentID: n.ParentID, Kind: n.Kind, Spawn: n.Spawn, Goal: n.Goal, State: n.State,
		BlockedBy: slices.Clone(n.BlockedBy), Result: n.Result, Error: n.Error, Question: n.Question,
		Options: slices.Clone(n.Options), SessionID: n.SessionID, Model: n.Model}
}
