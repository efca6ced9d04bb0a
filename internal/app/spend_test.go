package app_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/llm"
)

func TestGoalText(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	plan := filepath.Join(dir, "plan.md")
	if err := os.WriteFile(plan, []byte("the plan\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args      []string
		want, err string
	}{
		{args: []string{"write", "a", "haiku"}, want: "write a haiku"},
		{args: []string{plan}, want: "the plan\n"},
		{args: []string{dir}, err: "is a directory"},
		{args: []string{filepath.Join(dir, "missing.md")}, err: "add words to it"},
		{args: []string{"fix the readme.md"}, want: "fix the readme.md"},
	} {
		got, err := app.GoalText(c.args)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("GoalText(%q) err = %v, want one containing %q", c.args, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("GoalText(%q) = %q, %v; want %q", c.args, got, err, c.want)
		}
	}
}

func TestTotals(t *testing.T) {
	t.Parallel()
	u := &llm.Usage{InputTokens: 10, CacheReadTokens: 5, CacheWriteTokens: 1, OutputTokens: 7}
	nodes := []app.NodeSpend{{Usage: u, CostUSD: 0.5}, {Usage: u, CostUSD: 0.25}, {}}
	if in, out, cost := app.Totals(nodes); in != 32 || out != 14 || cost != "" {
		t.Fatalf("Totals = %d, %d, %q; want 32, 14 and an unknown cost (a NodeSpend not made by WithSpend has no known price)", in, out, cost)
	}
}
