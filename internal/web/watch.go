package web

import (
	"context"
	"slices"
	"time"

	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/tree"
)

// Runs another process drives.
//
// Their events are on that process's bus, not this one's. So while a
// stream watches such a run, one watcher per run (shared by its streams)
// reads the run's nodes and sends a node frame for each node whose state
// or update time changed, and a run frame when the run ends. It reads them
// when the store's change feed says the run changed (the postgres dialect:
// LISTEN/NOTIFY, so no polling), or every watchInterval on a store without
// one (SQLite). It sends nothing while this process drives the run (the
// bus does), and stops with its last stream.

const watchInterval = time.Second

// changeFeed is a store that tells when a run changed in any process.
type changeFeed interface {
	// RunChanges wakes its channel after each commit that wrote the run
	// and closes it when ctx ends; wake-ups coalesce.
	RunChanges(ctx context.Context, runID string) (<-chan struct{}, error)
}

type watcher struct {
	clients int
	stop    chan struct{}
	// ready is closed once the watcher subscribed to the store's change
	// feed and read the run the first time: every later change is sent.
	ready chan struct{}
}

// watch follows run in the store while the returned unwatch is not
// called. It returns once the watcher knows the run as stored, so a
// client that reads the run after its stream opened misses no change.
func (h *hub) watch(run string) (unwatch func()) {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return func() {}
	}
	w := h.watchers[run]
	if w == nil {
		w = &watcher{stop: make(chan struct{}), ready: make(chan struct{})}
		h.watchers[run] = w
		h.watching.Go(func() { h.follow(run, w.stop, w.ready) })
	}
	w.clients++
	h.mu.Unlock()
	select {
	case <-w.ready:
	case <-w.stop:
	case <-h.done:
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

func (h *hub) follow(run string, stop <-chan struct{}, ready chan<- struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
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
	var prev map[int64]seen // nil: not read yet, or driven here meanwhile
	var status store.RunStatus
	for {
		local := h.steer != nil && h.steer.Drives(run)
		if local {
			prev = nil
		} else if r, err := h.st.GetRun(ctx, run); err == nil {
			if nodes, err := h.st.Nodes(ctx, run); err == nil {
				prev = h.diff(run, prev, nodes)
			}
			if status != "" && r.Status != status && r.Status.Terminal() {
				h.emit(h.bus.Seq(), "run", run, RunFrame{RunID: run, Outcome: r.Status, Result: r.Result, Error: r.Error})
			}
			status = r.Status
		}
		if ready != nil {
			close(ready)
			ready = nil
		}
		select {
		case <-stop:
			return
		case <-h.done:
			return
		case <-tick:
		case <-changed:
		}
	}
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
