//go:build unix

package tree_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/tree"
)

// TestNothingRunsOrIsAnnouncedBeforeItIsDurable: a turn's end is queued
// to the store under the run lock and waited for after it (group commit),
// so this checks what must still hold on a fan-out with eight agents at
// once: a node's model call starts only once its activation is stored,
// every NodeChanged event is published only once its state is stored, and
// each node's events arrive in the order of its transitions.
func TestNothingRunsOrIsAnnouncedBeforeItIsDurable(t *testing.T) {
	t.Parallel()
	// At 64 at once, children end while the root still spawns, so its
	// spawns launch them one by one (unlockDetached).
	for _, parallel := range []int{8, 64} {
		t.Run(fmt.Sprintf("parallel=%d", parallel), func(t *testing.T) { nothingBeforeDurable(t, parallel) })
	}
}

func nothingBeforeDurable(t *testing.T, parallel int) {
	const children = 120
	fanOut := spawnAll(2, children, false)
	var env *benchEnv
	var mu sync.Mutex // guards problems
	var problems []string
	report := func(format string, args ...any) {
		mu.Lock()
		problems = append(problems, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	var runID string
	answer := func(ctx context.Context, node int64, turn int) (llm.Message, error) {
		if n, err := env.store.GetNode(ctx, runID, node); err != nil || (n.State != tree.StateActive && n.State != tree.StateSynthesizing) {
			report("#%d turn %d: model called with the node stored as %s (%v)", node, turn, n.State, err)
		}
		switch {
		case node == 1:
			if m, ok := rootAnswers(fanOut, turn); ok {
				return m, nil
			}
		case node > 1 && node <= children+1 && turn == 0:
			return completeWith(fmt.Sprintf("result of #%d", node)), nil
		}
		return noAnswer(node, turn)
	}
	env = benchSetup(t, answer)
	rank := map[tree.NodeState]int{tree.StatePending: 0, tree.StateActive: 1, tree.StateWaiting: 2, tree.StateSynthesizing: 3, tree.StateComplete: 4}
	last := map[int64]int{} // guarded by mu
	sub := env.bus.Subscribe(func(ev agent.Event) {
		c, ok := ev.(*tree.NodeChanged)
		if !ok || c.RunID != runID {
			return
		}
		stored, err := env.store.GetNode(context.Background(), c.RunID, c.Node.ID)
		if err != nil {
			report("#%d %s announced, not stored: %v", c.Node.ID, c.Node.State, err)
			return
		}
		if rank[stored.State] < rank[c.Node.State] {
			report("#%d %s announced while stored as %s", c.Node.ID, c.Node.State, stored.State)
		}
		mu.Lock()
		defer mu.Unlock()
		if prev, seen := last[c.Node.ID]; seen && rank[c.Node.State] < prev {
			problems = append(problems, fmt.Sprintf("#%d: %s announced after a later state", c.Node.ID, c.Node.State))
		}
		last[c.Node.ID] = rank[c.Node.State]
	})
	t.Cleanup(sub.Close)
	runID = env.create(t, parallel)
	if err := env.drive(runID, "final", children+1); err != nil {
		t.Fatal(err)
	}
	sub.Flush()
	mu.Lock()
	defer mu.Unlock()
	for _, p := range problems {
		t.Error(p)
	}
	if len(last) != children+1 {
		t.Fatalf("events seen for %d nodes, want %d", len(last), children+1)
	}
}
