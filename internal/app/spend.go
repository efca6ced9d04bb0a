package app

import (
	"context"
	"fmt"
	"os"
	"strings"

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

// GoalText is the goal of arbor run's arguments. A lone argument that
// ends in .md or names an existing path is a plan file: it must be a
// readable file, so a mistyped name is an error, not a goal.
func GoalText(args []string) (string, error) {
	if len(args) == 1 {
		p := args[0]
		fi, err := os.Stat(p)
		switch {
		case err == nil && fi.IsDir():
			return "", fmt.Errorf("plan file %s is a directory", p)
		case err == nil && !fi.Mode().IsRegular():
			return "", fmt.Errorf("plan file %s is not a regular file", p)
		case err == nil:
			b, err := os.ReadFile(p)
			if err != nil {
				return "", fmt.Errorf("read plan file: %w", err)
			}
			return string(b), nil
		case strings.HasSuffix(strings.ToLower(p), ".md") && !strings.ContainsAny(p, " \n"):
			return "", fmt.Errorf("plan file %s: %w (to run a goal that looks like a file name, add words to it)", p, err)
		}
	}
	return strings.Join(args, " "), nil
}
