package tui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/arbor-run/arbor/internal/tree"
)

// growTree plays a small run: a root that spawned a finished research
// task, a running analysis, a pending node blocked by both, a waiting
// node and a paused one.
func growTree(b *bundle) {
	b.send(
		changed(0, "", tree.NodeView{ID: 1, Kind: tree.KindGoal, Goal: "Compare REST and GraphQL", State: tree.StatePending}),
		changed(1, tree.StatePending, tree.NodeView{ID: 1, Kind: tree.KindGoal, Goal: "Compare REST and GraphQL", State: tree.StateActive, SessionID: "s1"}),
		changed(2, "", tree.NodeView{ID: 2, ParentID: 1, Kind: tree.KindTask, Spawn: "spawn", Goal: "Research GraphQL trade-offs", State: tree.StatePending}),
		changed(2, "", tree.NodeView{ID: 3, ParentID: 1, Kind: tree.KindTask, Spawn: "spawn", Goal: "Measure REST latency", State: tree.StatePending, Runner: "claude-code"}),
		changed(2, "", tree.NodeView{ID: 4, ParentID: 1, Kind: tree.KindTask, Spawn: "fork", Goal: "Comparative analysis", State: tree.StatePending, BlockedBy: []int64{2, 3}}),
		changed(3, tree.StatePending, tree.NodeView{ID: 2, ParentID: 1, Kind: tree.KindTask, Spawn: "spawn", Goal: "Research GraphQL trade-offs", State: tree.StateActive, SessionID: "s2"}),
		changed(4, tree.StatePending, tree.NodeView{ID: 3, ParentID: 1, Kind: tree.KindTask, Spawn: "spawn", Goal: "Measure REST latency", State: tree.StateActive, SessionID: "s3", Runner: "claude-code"}),
		changed(4, tree.StateActive, tree.NodeView{ID: 1, Kind: tree.KindGoal, Goal: "Compare REST and GraphQL", State: tree.StateWaiting, SessionID: "s1"}),
		usage(5, "s1", 1000, 200, 0.01, true),
		usage(6, "s2", 400, 100, 0.005, true),
		usage(7, "s2", 500, 0, 0.005, true),
		usage(7, "s-other", 9999, 0, 9, true), // no node of the run
		toolStarted(8, "s3", "shell", `{"command":"hey -n 100 http://localhost:8080"}`),
		changed(9, tree.StateActive, tree.NodeView{ID: 2, ParentID: 1, Kind: tree.KindTask, Spawn: "spawn", Goal: "Research GraphQL trade-offs", State: tree.StateComplete, SessionID: "s2", Result: "GraphQL cuts round trips\nbut caching is harder"}),
	)
}

func TestRender(t *testing.T) {
	t.Parallel()

	t.Run("tree", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		growTree(b)
		b.update(tickMsg(t0.Add(65 * time.Second)))
		s := b.screen(120)

		if l := lineWith(t, s, "Compare API styles"); !strings.Contains(l, "run r1") {
			t.Fatalf("header %q", l)
		}
		root := lineWith(t, s, "#1 ")
		if !strings.HasPrefix(root, "◐ #1 goal Compare REST and GraphQL") || !strings.Contains(root, "1m04s") || !strings.Contains(root, "1.2k tok $0.0100") {
			t.Fatalf("root line %q", root)
		}
		done := lineWith(t, s, "#2 ")
		if !strings.HasPrefix(done, "  ✓ #2 task(spawn) Research GraphQL trade-offs") || !strings.Contains(done, "1.0k tok $0.0100") || strings.Contains(done, "runner") {
			t.Fatalf("complete line %q", done)
		}
		if l := lineWith(t, s, "GraphQL cuts round trips"); !strings.HasPrefix(l, "    └ GraphQL cuts round trips") || strings.Contains(s, "caching is harder") {
			t.Fatalf("result line %q", l)
		}
		run := lineWith(t, s, "#3 ")
		if !strings.HasPrefix(run, "  ● #3 task(spawn) Measure REST latency") || !strings.Contains(run, spinner[1]+" 1m01s") || !strings.Contains(run, "runner: claude-code") {
			t.Fatalf("running line %q", run)
		}
		if l := lineWith(t, s, "→ shell"); !strings.HasPrefix(l, "    → shell hey -n 100") {
			t.Fatalf("tool line %q", l)
		}
		pend := lineWith(t, s, "#4 ")
		if !strings.HasPrefix(pend, "  ○ #4 task(fork) Comparative analysis") || !strings.Contains(pend, "blocked-by: #2, #3") || strings.Contains(pend, "tok") {
			t.Fatalf("pending line %q", pend)
		}
		if l := lineWith(t, s, "tokens "); !strings.Contains(l, "tokens 2.2k · $0.0200 · 1/4 done · 1m05s") {
			t.Fatalf("totals %q", l)
		}
	})

	t.Run("every state has its glyph", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		states := []struct {
			kind  tree.NodeKind
			state tree.NodeState
			glyph string
		}{
			{tree.KindTask, tree.StateActive, "●"},
			{tree.KindTask, tree.StateSynthesizing, "●"},
			{tree.KindTask, tree.StatePending, "○"},
			{tree.KindTask, tree.StateWaiting, "◐"},
			{tree.KindTask, tree.StatePaused, "⏸"},
			{tree.KindTask, tree.StateComplete, "✓"},
			{tree.KindTask, tree.StateFailed, "✗"},
			{tree.KindTask, tree.StateCancelled, "⊘"},
			{tree.KindAsk, tree.StateActive, "?"},
		}
		for i, st := range states {
			b.send(changed(i, "", tree.NodeView{ID: int64(i + 1), Kind: st.kind, Goal: fmt.Sprintf("node %s %s", st.kind, st.state), State: st.state}))
		}
		s := b.screen(100)
		for i, st := range states {
			l := lineWith(t, s, fmt.Sprintf("node %s %s", st.kind, st.state))
			if want := st.glyph + " #" + string(rune('1'+i)) + " "; !strings.HasPrefix(l, want) {
				t.Fatalf("%s %s: line %q, want prefix %q", st.kind, st.state, l, want)
			}
		}
		if l := lineWith(t, s, "node task synthesizing"); !strings.Contains(l, "synthesizing ") {
			t.Fatalf("synthesizing line %q", l)
		}
	})

	t.Run("failure, unknown cost and the run's end", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.send(
			changed(0, "", tree.NodeView{ID: 1, Kind: tree.KindGoal, Goal: "Ship it", State: tree.StateActive, SessionID: "s1"}),
			usage(1, "s1", 10, 5, 0, false),
			changed(2, tree.StateActive, tree.NodeView{ID: 1, Kind: tree.KindGoal, Goal: "Ship it", State: tree.StateFailed, SessionID: "s1", Error: "model refused\nstack"}),
			&tree.RunFinished{Meta: at(3), RunID: "r1", Outcome: "failed", Error: "root failed"},
		)
		b.update(tickMsg(t0.Add(time.Hour)))
		s := b.screen(100)
		if l := lineWith(t, s, "#1 "); !strings.HasPrefix(l, "✗ #1 goal Ship it") || !strings.Contains(l, "15 tok $?") {
			t.Fatalf("failed line %q", l)
		}
		lineWith(t, s, "  └ error: model refused")
		// elapsed stops with the run
		if l := lineWith(t, s, "tokens "); !strings.Contains(l, "tokens 15 · $? · 1/1 done · 3s") {
			t.Fatalf("totals %q", l)
		}
		lineWith(t, s, "run failed: root failed")
	})

	t.Run("other runs are not shown", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.send(&tree.NodeChanged{Meta: at(0), RunID: "r2", Node: tree.NodeView{ID: 1, Kind: tree.KindGoal, Goal: "someone else's", State: tree.StateActive}})
		if s := b.screen(100); strings.Contains(s, "someone else's") || !strings.Contains(s, "0/0 done") {
			t.Fatalf("screen:\n%s", s)
		}
	})

	t.Run("width cuts goals, not the figures", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		goal := "Investigate " + strings.Repeat("everything ", 20)
		b.send(changed(0, "", tree.NodeView{ID: 7, Kind: tree.KindTask, Spawn: "spawn", Goal: goal, State: tree.StatePending, BlockedBy: []int64{5}}))
		for l := range strings.SplitSeq(b.screen(60), "\n") {
			if w := len([]rune(l)); w > 60 {
				t.Fatalf("line of %d columns: %q", w, l)
			}
		}
		if l := lineWith(t, b.screen(60), "#7"); !strings.Contains(l, "…") || !strings.HasSuffix(l, "blocked-by: #5") {
			t.Fatalf("line %q", l)
		}
	})

	t.Run("height drops details, then nodes", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		growTree(b)
		b.update(tea.WindowSizeMsg{Width: 100, Height: 10})
		if s := b.screen(100); !strings.Contains(s, "└") || !strings.Contains(s, "→ shell") {
			t.Fatalf("details dropped though they fit:\n%s", s)
		}
		b.update(tea.WindowSizeMsg{Width: 100, Height: 9})
		s := b.screen(100)
		if strings.Contains(s, "└") || strings.Contains(s, "→ shell") || !strings.Contains(s, "#4 ") {
			t.Fatalf("details kept:\n%s", s)
		}
		if n := strings.Count(s, "\n") + 1; n != 7 {
			t.Fatalf("%d lines:\n%s", n, s)
		}
		b.update(tea.WindowSizeMsg{Width: 100, Height: 6})
		s = b.screen(100)
		if n := strings.Count(s, "\n") + 1; n != 5 || !strings.Contains(s, "#1 ") || !strings.Contains(s, "… 3 more nodes") {
			t.Fatalf("%d lines:\n%s", n, s)
		}
	})
}

// TestMCPFailures: each failed MCP server has a line under the totals
// until a later list no longer names it.
func TestMCPFailures(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.update(mcpMsg{failed: []MCPFailure{{Name: "github", Error: "environment variable GITHUB_TOKEN is not set"}, {Name: "fs", Error: "gave up after 5 restarts"}}})
	s := b.screen(120)
	lineWith(t, s, "✗ MCP server github failed: environment variable GITHUB_TOKEN is not set (its tools are not available)")
	lineWith(t, s, "✗ MCP server fs failed: gave up after 5 restarts")
	if tot, gh := strings.Index(s, "tokens "), strings.Index(s, "MCP server github"); tot < 0 || gh < tot {
		t.Fatalf("the failures are not under the totals:\n%s", s)
	}
	b.update(mcpMsg{failed: []MCPFailure{{Name: "fs", Error: "gave up after 5 restarts"}}})
	if s := b.screen(120); strings.Contains(s, "github") || !strings.Contains(s, "MCP server fs failed") {
		t.Fatalf("after github recovered:\n%s", s)
	}
}
