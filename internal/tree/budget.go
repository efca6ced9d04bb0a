package tree

import (
	"context"
	"errors"
	"fmt"

	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/store"
)

// Budgets.
//
// The run's budget (dollars, tokens) bounds every model call of every
// node; a node's own budget bounds its subtree: the node and everything
// under it. Spending is summed per node over its subtree as usage events
// arrive (and from the stored sessions when a run is opened). When a
// node's budget is spent, the next model call in its subtree fails with
// ErrNodeBudget and the node whose call it was fails — which cancels its
// own children and lets its parent decide. A spent run budget instead
// stops the whole run, resumable with a larger budget.

// ErrNodeBudget fails a node whose own or an ancestor's budget is spent.
var ErrNodeBudget = errors.New("node budget exhausted")

// spend is what a subtree used.
type spend struct {
	tokens int64
	cost   float64
}

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

// chargeLocked adds one model call of node's agent to node and each of its
// ancestors. r.usageMu must be held.
func (r *run) chargeLocked(node, tokens int64, cost float64) {
	for id := node; id != 0; id = r.parents[id] {
		s := r.spent[id]
		s.tokens += tokens
		s.cost += cost
		r.spent[id] = s
	}
}

// chargeFor is the Charge of node id's agent: the call counts against the
// run, the node and its ancestors before the node's next gate.
func (r *run) chargeFor(id int64) func(llm.Usage, float64) {
	return func(u llm.Usage, cost float64) {
		r.usageMu.Lock()
		defer r.usageMu.Unlock()
		r.tokens += u.Total()
		r.cost += cost
		r.chargeLocked(id, u.Total(), cost)
	}
}

// gateFor is the gate of node id's agent, checked before every model
// call: the run's budget, then the budgets of the node and its ancestors.
func (r *run) gateFor(id int64) func(context.Context) error {
	return func(ctx context.Context) error {
		if err := r.gate(ctx); err != nil {
			return err
		}
		r.usageMu.Lock()
		defer r.usageMu.Unlock()
		for a := id; a != 0; a = r.parents[a] {
			lim, ok := r.limits[a]
			if !ok {
				continue
			}
			s := r.spent[a]
			switch {
			case lim.cost > 0 && s.cost >= lim.cost:
				return fmt.Errorf("%w: #%d and its subtree spent $%.4f of $%.2f", ErrNodeBudget, a, s.cost, lim.cost)
			case lim.tokens > 0 && s.tokens >= lim.tokens:
				return fmt.Errorf("%w: #%d and its subtree used %d of %d tokens", ErrNodeBudget, a, s.tokens, lim.tokens)
			}
		}
		return nil
	}
}

// spentBy returns what node id's subtree used and its own limits.
func (r *run) spentBy(id int64) (used, limit spend) {
	r.usageMu.Lock()
	defer r.usageMu.Unlock()
	return r.spent[id], r.limits[id]
}
