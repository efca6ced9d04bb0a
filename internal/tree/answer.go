package tree

import (
	"context"
	"fmt"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/tool"
)

// Answer gives ask node id of run runID its answer. When this engine is
// driving the run, the answer goes through the interaction broker (or,
// for an ask not yet asked, straight to the node). Otherwise it is written
// to the store under the run's lease and the run picks it up when resumed;
// while another live process owns the run it fails with a
// *store.LeaseHeldError: the answer must go to that owner.
func (e *Engine) Answer(ctx context.Context, runID string, id int64, text string) error {
	if v, ok := e.live.Load(runID); ok {
		return v.(*run).answer(id, text)
	}
	unlock := e.runLock(runID) // not while this engine opens the run
	defer unlock()
	if v, ok := e.live.Load(runID); ok {
		return v.(*run).answer(id, text)
	}
	l, err := e.acquire(ctx, runID, "")
	if err != nil {
		return fmt.Errorf("answer #%d: %w", id, err)
	}
	defer l.release()
	n, err := e.o.Store.GetNode(ctx, runID, id)
	if err != nil {
		return fmt.Errorf("answer #%d: %w", id, err)
	}
	if err := answerable(n); err != nil {
		return err
	}
	now := e.o.Now().UTC()
	n.State, n.Result, n.EndedAt = StateComplete, text, &now
	if err := e.o.Store.Commit(ctx, nil, n); err != nil {
		return fmt.Errorf("answer #%d: %w", id, err)
	}
	return nil
}

func answerable(n store.Node) error {
	if n.Kind != KindAsk {
		return badState("#%d is a %s node, not an ask", n.ID, n.Kind)
	}
	if n.State != StatePending && n.State != StateActive {
		return badState("#%d is already %s", n.ID, n.State)
	}
	return nil
}

func (r *run) answer(id int64, text string) error {
	r.mu.Lock()
	n, ok := r.nodes[id]
	if !ok {
		r.mu.Unlock()
		return fmt.Errorf("#%d: %w", id, ErrUnknownNode)
	}
	if err := answerable(*n); err != nil {
		r.mu.Unlock()
		return err
	}
	for _, in := range r.e.o.Broker.Pending() {
		if in.SessionID == r.id && in.Question != nil && in.Question.CallID == askCallID(id) {
			r.mu.Unlock()
			return r.e.o.Broker.Resolve(in.ID, agent.Response{Answer: &tool.Answer{Text: text}})
		}
	}
	// Not asked yet (blocked, or between scheduling and asking): answer
	// ahead; dependents start when their other needs are met.
	if cancel, busy := r.running[id]; busy {
		cancel(errStopped)
	}
	r.answerLocked(id, tool.Answer{Text: text})
	r.scheduleLocked()
	r.unlock()
	return nil
}

// Raise sets a larger money or token budget on a run that is not being
// driven (for resuming a run whose budget was spent). Zero leaves a limit
// unchanged.
func (e *Engine) Raise(ctx context.Context, runID string, budgetUSD float64, maxTokens int64) error {
	if _, live := e.live.Load(runID); live {
		return fmt.Errorf("raise budget of %s: %w", runID, ErrRunActive)
	}
	l, err := e.acquire(ctx, runID, "")
	if err != nil {
		return fmt.Errorf("raise budget of %s: %w", runID, err)
	}
	defer l.release()
	r, err := e.o.Store.GetRun(ctx, runID)
	if err != nil {
		return fmt.Errorf("raise budget of %s: %w", runID, err)
	}
	if budgetUSD > 0 {
		r.BudgetUSD = budgetUSD
	}
	if maxTokens > 0 {
		r.MaxTokens = maxTokens
	}
	return e.o.Store.Commit(ctx, &r)
}
