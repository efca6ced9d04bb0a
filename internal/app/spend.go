package app

import (
	"context"
	"fmt"

	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/store"
)

// NodeSpend is a node and what its agent spent: its session's totals
// (none before it started). arbor tree --json prints it.
type NodeSpend struct {
	store.Node
	Usage   *llm.Usage `json:"usage,omitempty"`
	CostUSD float64    `json:"cost_usd,omitempty"`
	// costKnown: the session's model had a price.
	costKnown bool
}

// WithSpend is nodes with what each spent.
func WithSpend(ctx context.Context, st store.Store, nodes []store.Node) []NodeSpend {
	out := make([]NodeSpend, len(nodes))
	for i, n := range nodes {
		out[i].Node, out[i].costKnown = n, true
		if n.SessionID == "" {
			continue
		}
		if s, err := st.GetSession(ctx, n.SessionID); err == nil {
			out[i].Usage, out[i].CostUSD, out[i].costKnown = &s.Usage, s.CostUSD, s.CostKnown
		}
	}
	return out
}

// Totals is what a run's nodes spent together: input tokens (cache reads
// and writes included), output tokens, and the cost in dollars, or ""
// when a model's price is unknown.
func Totals(nodes []NodeSpend) (in, out int64, cost string) {
	var usd float64
	known := true
	for _, n := range nodes {
		if n.Usage != nil {
			in += n.Usage.InputTokens + n.Usage.CacheReadTokens + n.Usage.CacheWriteTokens
			out += n.Usage.OutputTokens
		}
		usd += n.CostUSD
		known = known && n.costKnown
	}
	if !known {
		return in, out, ""
	}
	return in, out, fmt.Sprintf("$%.4f", usd)
}
