package app_test

import (
	"testing"

	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/llm"
)

func TestTotals(t *testing.T) {
	t.Parallel()
	u := &llm.Usage{InputTokens: 10, CacheReadTokens: 5, CacheWriteTokens: 1, OutputTokens: 7}
	nodes := []app.NodeSpend{{Usage: u, CostUSD: 0.5}, {Usage: u, CostUSD: 0.25}, {}}
	if in, out, cost := app.Totals(nodes); in != 32 || out != 14 || cost != "" {
		t.Fatalf("Totals = %d, %d, %q; want 32, 14 and an unknown cost (a NodeSpend not made by WithSpend has no known price)", in, out, cost)
	}
}
