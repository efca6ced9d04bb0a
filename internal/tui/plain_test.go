package tui

import (
	"bytes"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/tree"
)

func TestPlain(t *testing.T) {
	t.Parallel()

	long := strings.Repeat("x", 150)
	root := tree.NodeView{ID: 1, Kind: tree.KindGoal, Goal: "Compare REST and GraphQL\nwith details", State: tree.StatePending}
	research := tree.NodeView{ID: 2, ParentID: 1, Kind: tree.KindTask, Spawn: "spawn", Goal: "Research GraphQL trade-offs", State: tree.StatePending, Runner: "claude-code"}
	compare := tree.NodeView{ID: 3, ParentID: 1, Kind: tree.KindTask, Spawn: "fork", Goal: "Comparative analysis", State: tree.StatePending, BlockedBy: []int64{2, 4}, Model: "openai/gpt-5-mini"}
	ask := tree.NodeView{ID: 4, ParentID: 1, Kind: tree.KindAsk, Question: "Which clients matter?", State: tree.StatePending}

	with := func(n tree.NodeView, f func(*tree.NodeView)) tree.NodeView { f(&n); return n }
	activeRoot := with(root, func(n *tree.NodeView) { n.State, n.SessionID = tree.StateActive, "s1" })
	activeResearch := with(research, func(n *tree.NodeView) { n.State, n.SessionID = tree.StateActive, "s2" })

	events := []agent.Event{
		changed(0, "", root),
		changed(1, tree.StatePending, activeRoot),
		toolStarted(2, "s1", "spawn", `{"goal":"Research GraphQL trade-offs","blocked_by":[]}`),
		changed(2, "", research),
		changed(2, "", compare),
		changed(2, "", ask),
		// another run's node and an unknown session's tool call: not shown
		&tree.NodeChanged{Meta: at(3), RunID: "r2", Node: tree.NodeView{ID: 9, Kind: tree.KindGoal, Goal: "other", State: tree.StatePending}},
		toolStarted(3, "s-unknown", "shell", `{"command":"rm -rf /"}`),
		changed(3, tree.StatePending, activeResearch),
		toolStarted(4, "s2", "shell", `{"command":"go test ./...\necho done"}`),
		&tree.Notified{Meta: at(4), RunID: "r1", From: activeResearch, To: 1, Message: "half the sources read\nmore"},
		&tree.Notified{Meta: at(4), RunID: "r2", From: activeResearch, To: 1, Message: "another run's note"},
		changed(5, tree.StateActive, with(activeResearch, func(n *tree.NodeView) { n.State, n.Result = tree.StateComplete, long+"\nsecond line" })),
		changed(6, tree.StatePending, with(ask, func(n *tree.NodeView) { n.State = tree.StateFailed; n.Error = "no answer before the deadline" })),
		changed(6, tree.StatePending, with(compare, func(n *tree.NodeView) { n.State = tree.StateCancelled; n.BlockedBy = nil })),
		&tree.NodeChanged{Meta: at(7), RunID: "r1", From: tree.StateActive, Node: with(activeRoot, func(n *tree.NodeView) { n.State = tree.StateFailed; n.Error = "needed #4 failed" }), Reason: "dependency failed"},
		&tree.RunFinished{Meta: at(8), RunID: "r2", Outcome: "complete"},
		&tree.RunFinished{Meta: at(8), RunID: "r1", Outcome: "failed", Error: "root failed: needed #4 failed"},
	}
	want := []string{
		"#1 + pending goal Compare REST and GraphQL",
		"#1 pending → active  goal Compare REST and GraphQL",
		"#1 → spawn Research GraphQL trade-offs",
		"#2 + pending task(spawn) Research GraphQL trade-offs runner=claude-code",
		"#3 + pending task(fork) Comparative analysis blocked_by=#2,#4 model=openai/gpt-5-mini",
		"#4 + pending ask Which clients matter?",
		"#2 pending → active  task(spawn) Research GraphQL trade-offs",
		"#2 → shell go test ./...",
		"#2 ✉ #1: half the sources read",
		"#2 active → complete  task(spawn) Research GraphQL trade-offs  result: " + strings.Repeat("x", 99) + "…",
		"#4 pending → failed  ask Which clients matter?  error: no answer before the deadline",
		"#3 pending → cancelled  task(fork) Comparative analysis",
		"#1 active → failed  goal Compare REST and GraphQL  error: needed #4 failed  reason: dependency failed",
		"run r1 failed: root failed: needed #4 failed",
	}

	for _, tc := range []struct{ name, runID string }{{"run id given", "r1"}, {"run id adopted", ""}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			p := NewPlain(&out, tc.runID)
			for _, e := range events {
				p.Handle(e)
			}
			got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
			if len(got) != len(want) {
				t.Fatalf("got %d lines, want %d:\n%s", len(got), len(want), out.String())
			}
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("line %d:\n got %q\nwant %q", i+1, got[i], want[i])
				}
			}
		})
	}

	t.Run("complete run and text deltas", func(t *testing.T) {
		t.Parallel()
		var out bytes.Buffer
		p := NewPlain(&out, "r1")
		p.Handle(&agent.TextDelta{Meta: at(0), Text: "thinking out loud"})
		p.Handle(&tree.RunFinished{Meta: at(1), RunID: "r1", Outcome: "complete", Result: "done"})
		if got := out.String(); got != "run r1 complete\n" {
			t.Fatalf("got %q", got)
		}
	})
}
