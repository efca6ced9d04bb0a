package tree

import (
	"context"
	"fmt"

	"github.com/arbor-run/arbor/internal/store"
)

// Cancel ends run runID for good: the run and every node not yet ended
// are cancelled. A run this engine drives is stopped as arbor stop stops
// it (its root); one nobody drives (interrupted, or waiting on a person)
// is written to the store under its lease, so that it no longer shows as
// resumable. While another live process owns the run it fails with a
// *store.LeaseHeldError: the stop must go to that owner. A run that has
// ended, and a headless session's run, are refused (ErrBadState).
func (e *Engine) Cancel(ctx context.Context, runID string) (store.Run, error) {
	if _, live := e.live.Load(runID); live {
		if _, err := e.Control(runID, 1, OpStop); err != nil {
			return store.Run{}, err
		}
		return e.o.Store.GetRun(ctx, runID)
	}
	unlock := e.runLock(runID) // not while this engine opens the run
	defer unlock()
	l, err := e.acquire(ctx, runID, "")
	if err != nil {
		return store.Run{}, fmt.Errorf("cancel %s: %w", runID, err)
	}
	defer l.release()
	r, err := e.o.Store.GetRun(ctx, runID)
	if err != nil {
		return store.Run{}, fmt.Errorf("cancel %s: %w", runID, err)
	}
	if r.Status.Terminal() {
		return store.Run{}, badState("run %s is already %s", runID, r.Status)
	}
	nodes, err := e.o.Store.Nodes(ctx, runID)
	if err != nil {
		return store.Run{}, fmt.Errorf("cancel %s: %w", runID, err)
	}
	if len(nodes) > 0 && nodes[0].Kind == KindHost {
		return store.Run{}, badState("run %s is a headless session's; end the session instead", runID)
	}
	now := e.o.Now().UTC()
	var ended []store.Node
	for _, n := range nodes {
		if store.NodeState(n.State).Terminal() {
			continue
		}
		n.State, n.Error, n.EndedAt, n.UpdatedAt = StateCancelled, "stopped", &now, now
		ended = append(ended, n)
	}
	r.Status, r.Error, r.UpdatedAt = store.RunCancelled, "stopped while no process drove it", now
	if err := e.o.Store.Commit(ctx, &r, ended...); err != nil {
		return store.Run{}, fmt.Errorf("cancel %s: %w", runID, err)
	}
	return r, nil
}
