package tree

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/arbor-run/arbor/internal/store"
)

// Cancel ends run runID for good: the run and every node not yet ended
// are cancelled (Stop of its root).
func (e *Engine) Cancel(ctx context.Context, runID string) (store.Run, error) {
	return e.Stop(ctx, runID, 1)
}

// Stop stops node id of run runID and every node under it not yet ended,
// as arbor stop does; stopping the root (#1) ends the run for good. A
// run this engine drives is stopped by its live run. One nobody drives
// (interrupted, or waiting on a person) is written to the store under its
// lease: the nodes are cancelled and, but for the root, the run stays
// interrupted, so that arbor resume goes on without them and their parent
// hears of the stop as it would have live. While another live process
// owns the run it fails with a *store.LeaseHeldError: the stop must go to
// that owner. A run that has ended, an ended node, and a headless
// session's run are refused (ErrBadState); an unknown node is
// ErrNotFound.
func (e *Engine) Stop(ctx context.Context, runID string, id int64) (store.Run, error) {
	if _, live := e.live.Load(runID); live {
		if _, err := e.Control(runID, id, OpStop); err != nil {
			return store.Run{}, err
		}
		return e.o.Store.GetRun(ctx, runID)
	}
	unlock := e.runLock(runID) // not while this engine opens the run
	defer unlock()
	l, err := e.acquire(ctx, runID, "")
	if err != nil {
		return store.Run{}, fmt.Errorf("stop %s: %w", runID, err)
	}
	defer l.release()
	r, err := e.o.Store.GetRun(ctx, runID)
	if err != nil {
		return store.Run{}, fmt.Errorf("stop %s: %w", runID, err)
	}
	if r.Status.Terminal() {
		return store.Run{}, badState("run %s is already %s", runID, r.Status)
	}
	nodes, err := e.o.Store.Nodes(ctx, runID)
	if err != nil {
		return store.Run{}, fmt.Errorf("stop %s: %w", runID, err)
	}
	if len(nodes) > 0 && nodes[0].Kind == KindHost {
		return store.Run{}, badState("run %s is a headless session's; end the session instead", runID)
	}
	ended, err := stopStored(nodes, id, e.o.Now().UTC())
	if err != nil {
		return store.Run{}, fmt.Errorf("stop #%d of %s: %w", id, runID, err)
	}
	if id == 1 {
		r.Status, r.Error = store.RunCancelled, "stopped while no process drove it"
	}
	r.UpdatedAt = e.o.Now().UTC()
	if err := e.o.Store.Commit(ctx, &r, ended...); err != nil {
		return store.Run{}, fmt.Errorf("stop %s: %w", runID, err)
	}
	return r, nil
}

// stopStored returns node id of nodes (a run's, by id ascending) and its
// descendants not yet ended, cancelled at now as a live stop leaves them.
func stopStored(nodes []store.Node, id int64, now time.Time) ([]store.Node, error) {
	i, found := slices.BinarySearchFunc(nodes, id, func(n store.Node, id int64) int { return cmp.Compare(n.ID, id) })
	if !found {
		return nil, store.ErrNotFound
	}
	if s := store.NodeState(nodes[i].State); s.Terminal() {
		return nil, badState("already %s", s)
	}
	under := map[int64]bool{id: true} // a child's id is above its parent's
	var ended []store.Node
	for _, n := range nodes[i:] {
		if !under[n.ID] && !under[n.ParentID] {
			continue
		}
		under[n.ID] = true
		if store.NodeState(n.State).Terminal() {
			continue
		}
		n.State, n.Error, n.EndedAt, n.UpdatedAt = StateCancelled, fmt.Sprintf("stopped (with #%d)", id), &now, now
		ended = append(ended, n)
	}
	return ended, nil
}
