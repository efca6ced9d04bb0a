// Usage and budgets: the agent's token and cost totals, the estimate
// each model call is gated on, and the accounting of what it used.

package agent

import (
	"context"
	"fmt"
	"time"

	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/store"
)

// Usage returns the tokens and cost of this agent's model calls so far.
func (a *Agent) Usage() (llm.Usage, float64, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.usage, a.cost, a.costKnown
}

// DefaultOutputEstimate bounds the output a call is assumed to produce,
// for the Gate's estimate: the response cap, but no more than this (the
// Anthropic provider's default cap). Estimating every call at a 64k cap
// would let only one call run near the end of any budget; a call that
// writes more than this can overshoot by the difference.
const DefaultOutputEstimate = 8192

// OutputEstimate is the output assumed of a call whose response cap is
// limit (0 = the provider's default).
func OutputEstimate(limit int64) int64 {
	if limit <= 0 {
		return DefaultOutputEstimate
	}
	return min(limit, DefaultOutputEstimate)
}

// gate asks the Gate, if any, for a call to m whose input is about input
// tokens.
func (a *Agent) gate(ctx context.Context, input int64, m modelState) error {
	if a.cfg.Gate == nil {
		return nil
	}
	est := llm.Usage{InputTokens: input, OutputTokens: OutputEstimate(a.cfg.MaxTokens)}
	cost := 0.0
	if m.price != nil {
		cost = m.price.Cost(est)
	}
	return a.cfg.Gate(ctx, est, cost)
}

// account records the usage of a model call that stored no message (a
// compaction summary) on model m: totals, charge, store, event.
func (a *Agent) account(ctx context.Context, u llm.Usage, m modelState) error {
	rec, updated := a.tally(u, m)
	if err := a.cfg.Store.AddUsage(context.WithoutCancel(ctx), rec); err != nil {
		return fmt.Errorf("record usage: %w", err)
	}
	a.publish(updated)
	return nil
}

// tally adds one model call's usage on model m to the session's totals
// and charges it; it returns the record to store and the event to publish
// once stored.
func (a *Agent) tally(u llm.Usage, m modelState) (store.UsageRecord, *UsageUpdated) {
	cost, known := 0.0, m.price != nil
	if known {
		cost = m.price.Cost(u)
	}
	a.mu.Lock()
	a.usage = a.usage.Add(u)
	a.cost += cost
	a.costKnown = a.costKnown && known
	total, totalCost, totalKnown := a.usage, a.cost, a.costKnown
	a.mu.Unlock()
	// Charge before anything can fail: the call was made, so the
	// reservation its gate made is settled whatever happens next.
	if a.cfg.Charge != nil {
		a.cfg.Charge(u, cost)
	}
	rec := store.UsageRecord{
		SessionID: a.cfg.SessionID, Model: m.ref, Usage: u,
		CostUSD: cost, CostKnown: known, At: time.Now().UTC(),
	}
	return rec, &UsageUpdated{Model: m.ref, Call: u, CallCost: cost, Total: total, TotalCost: totalCost, CostKnown: totalKnown}
}
