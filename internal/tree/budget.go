package tree

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/store"
)

// Budgets.
//
// The run's budget (dollars, tokens) bounds every model call of every
// node; a node's own budget bounds its subtree: the node and everything
// under it. Every model call of a node — its steps, its compaction
// summaries, its context_query distillation — passes the node's gate
// before it starts and is charged when its usage is recorded.
//
// Reservation: the gate reserves the call's estimate (input from the
// context, output at the response cap; see agent.Config.Gate) against the
// run, the node and its ancestors, and the charge replaces the
// reservation with what the call really used. A call starts only while
// spent + reserved is below every budget it is charged to; while it is not
// but spent alone is, the gate waits for calls in flight to settle; once
// spent reaches a budget the gate refuses. So parallel agents overshoot a
// budget by at most one call's estimate (more only when a call uses more
// than its estimate). A node has at most one reservation: its calls are
// sequential. A call that fails or is cancelled before its usage arrives
// releases its reservation when its node's turn ends (or at the node's
// next gate).
//
// When a node's budget is spent, the next model call in its subtree fails
// with ErrNodeBudget and the node whose call it was fails — which cancels
// its own children and lets its parent decide. A spent run budget instead
// stops the whole run, resumable with a larger budget: calls in flight
// finish and are recorded (they cost money), then every gate refuses.

// ErrNodeBudget fails a node whose own or an ancestor's budget is spent.
var ErrNodeBudget = errors.New("node budget exhausted")

// spend is what a subtree used (or has reserved).
type spend struct {
	tokens int64
	cost   float64
}

func (s spend) plus(o spend) spend  { return spend{s.tokens + o.tokens, s.cost + o.cost} }
func (s spend) minus(o spend) spend { return spend{s.tokens - o.tokens, s.cost - o.cost} }

// trackLocked records node n's parent and budget for the gate. r.usageMu
// must be held.
func (r *run) trackLocked(n store.Node) {
	r.parents[n.ID] = n.ParentID
	if n.BudgetUSD > 0 || n.MaxTokens > 0 {
		r.limits[n.ID] = spend{tokens: n.MaxTokens, cost: n.BudgetUSD}
	}
}

// track is trackLocked for a node created while the run is driven.
func (r *run) track(n store.Node) {
	r.usageMu.Lock()
	defer r.usageMu.Unlock()
	r.trackLocked(n)
}

// chargeLocked adds one model call of node's agent to the run, node and
// each of its ancestors. r.usageMu must be held.
func (r *run) chargeLocked(node int64, s spend) {
	r.tokens += s.tokens
	r.cost += s.cost
	for id := node; id != 0; id = r.parents[id] {
		r.spent[id] = r.spent[id].plus(s)
	}
}

// reserveLocked adds (or, negated, removes) a reservation of node's to
// the run, the node and its ancestors. r.usageMu must be held.
func (r *run) reserveLocked(node int64, s spend) {
	r.reservedRun = r.reservedRun.plus(s)
	for id := node; id != 0; id = r.parents[id] {
		r.reserved[id] = r.reserved[id].plus(s)
	}
}

// releaseLocked drops node's reservation, if any, and wakes the gates
// that wait for room. r.usageMu must be held.
func (r *run) releaseLocked(node int64) {
	res, ok := r.resv[node]
	if !ok {
		return
	}
	delete(r.resv, node)
	r.reserveLocked(node, spend{}.minus(res))
	close(r.settled)
	r.settled = make(chan struct{})
}

// release drops node's reservation (its turn ended).
func (r *run) release(node int64) {
	r.usageMu.Lock()
	defer r.usageMu.Unlock()
	r.releaseLocked(node)
}

// chargeFor is the Charge of node id's agent: it settles the call's
// reservation with its real usage, against the run, the node and its
// ancestors, before the node's next gate.
func (r *run) chargeFor(id int64) func(llm.Usage, float64) {
	return func(u llm.Usage, cost float64) {
		r.usageMu.Lock()
		defer r.usageMu.Unlock()
		r.chargeLocked(id, spend{tokens: u.Total(), cost: cost})
		r.releaseLocked(id)
	}
}

// gateFor is the gate of node id's agent, passed before every model call
// with the call's estimate: it reserves the estimate once the run's and
// every budget of the node and its ancestors has room (see Budgets).
func (r *run) gateFor(id int64) func(context.Context, llm.Usage, float64) error {
	return func(ctx context.Context, est llm.Usage, estCost float64) error {
		want := spend{tokens: est.Total(), cost: estCost}
		r.usageMu.Lock()
		r.releaseLocked(id) // a call that never settled (it failed)
		for {
			full, err := r.roomLocked(id)
			if err != nil {
				r.usageMu.Unlock()
				return err
			}
			if !full {
				r.resv[id] = want
				r.reserveLocked(id, want)
				r.usageMu.Unlock()
				return nil
			}
			wait := r.settled
			r.usageMu.Unlock()
			select {
			case <-wait:
			case <-ctx.Done():
				return context.Cause(ctx)
			}
			r.usageMu.Lock()
		}
	}
}

// RaiseFlag is the flag of arbor resume that raises the limit a run
// ended by its budget (store.RunBudget) reached, from the run's error as
// roomLocked words it: --max-tokens for its tokens, else --budget.
func RaiseFlag(runErr string) string {
	if strings.HasSuffix(runErr, " tokens") {
		return "--max-tokens"
	}
	return "--budget"
}

// roomLocked checks the run's budget, then the budgets of node id and its
// ancestors: an error when one is spent, full when one is spent only
// counting the reservations of calls in flight. r.usageMu must be held.
func (r *run) roomLocked(id int64) (full bool, err error) {
	b := r.meta.BudgetUSD // set at creation, never changed
	switch {
	case b > 0 && r.cost >= b:
		return false, fmt.Errorf("%w: spent $%.4f of $%.2f", ErrBudgetExhausted, r.cost, b)
	case r.meta.MaxTokens > 0 && r.tokens >= r.meta.MaxTokens:
		return false, fmt.Errorf("%w: used %d of %d tokens", ErrBudgetExhausted, r.tokens, r.meta.MaxTokens)
	}
	full = b > 0 && r.cost+r.reservedRun.cost >= b ||
		r.meta.MaxTokens > 0 && r.tokens+r.reservedRun.tokens >= r.meta.MaxTokens
	for a := id; a != 0; a = r.parents[a] {
		lim, ok := r.limits[a]
		if !ok {
			continue
		}
		s, res := r.spent[a], r.reserved[a]
		switch {
		case lim.cost > 0 && s.cost >= lim.cost:
			return false, fmt.Errorf("%w: #%d and its subtree spent $%.4f of $%.2f", ErrNodeBudget, a, s.cost, lim.cost)
		case lim.tokens > 0 && s.tokens >= lim.tokens:
			return false, fmt.Errorf("%w: #%d and its subtree used %d of %d tokens", ErrNodeBudget, a, s.tokens, lim.tokens)
		}
		full = full || lim.cost > 0 && s.cost+res.cost >= lim.cost || lim.tokens > 0 && s.tokens+res.tokens >= lim.tokens
	}
	return full, nil
}

// spentBy returns what node id's subtree used and its own limits.
func (r *run) spentBy(id int64) (used, limit spend) {
	r.usageMu.Lock()
	defer r.usageMu.Unlock()
	return r.spent[id], r.limits[id]
}
