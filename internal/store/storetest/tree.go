package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/store"
)

func testTree(t *testing.T, open Opener) {
	t.Run("CreateAndGetRun", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		in := fullRun("r1")
		noErr(t, b.st.CreateRun(b.ctx, in))
		got := b.getRun(t, "r1")
		want := in
		want.CreatedAt, want.UpdatedAt = when.UTC(), when.Add(time.Second).UTC()
		equal(t, "run", got, want)
		if got.CreatedAt.Location() != time.UTC || got.UpdatedAt.Location() != time.UTC {
			t.Fatalf("times not in UTC: %v, %v", got.CreatedAt.Location(), got.UpdatedAt.Location())
		}
	})

	t.Run("RunDefaults", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		before := time.Now()
		noErr(t, b.st.CreateRun(b.ctx, store.Run{ID: "r1", Goal: "g"}))
		after := time.Now()
		got := b.getRun(t, "r1")
		equal(t, "status", got.Status, store.RunRunning)
		within(t, "CreatedAt", got.CreatedAt, before, after)
		within(t, "UpdatedAt", got.UpdatedAt, before, after)
	})

	t.Run("DuplicateRun", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		first := b.run(t, "r1")
		errIs(t, b.st.CreateRun(b.ctx, store.Run{ID: "r1", Goal: "other"}), store.ErrConflict)
		equal(t, "run after conflict", b.getRun(t, "r1"), first)
	})

	t.Run("CreateRunWithItsNodes", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		root := fullNode("r1", 1)
		root.ParentID = 0
		noErr(t, b.st.CreateRun(b.ctx, store.Run{ID: "r1", Goal: "g"}, root))
		nodes, err := b.st.Nodes(b.ctx, "r1")
		noErr(t, err)
		equal(t, "nodes created with the run", len(nodes), 1)
		equal(t, "root's goal", nodes[0].Goal, root.Goal)
		// A taken id writes none of the nodes given with it.
		other, second := root, fullNode("r1", 2)
		other.Goal = "someone else's"
		errIs(t, b.st.CreateRun(b.ctx, store.Run{ID: "r1", Goal: "other"}, other, second), store.ErrConflict)
		nodes, err = b.st.Nodes(b.ctx, "r1")
		noErr(t, err)
		equal(t, "nodes after the conflict", len(nodes), 1)
		equal(t, "root's goal after the conflict", nodes[0].Goal, root.Goal)
		// An invalid node, or one of another run, creates nothing.
		bad := fullNode("r2", 1)
		bad.Kind = "nonsense"
		errIs(t, b.st.CreateRun(b.ctx, store.Run{ID: "r2", Goal: "g"}, bad), store.ErrInvalid)
		errIs(t, b.st.CreateRun(b.ctx, store.Run{ID: "r2", Goal: "g"}, fullNode("r3", 1)), store.ErrInvalid)
		_, err = b.st.GetRun(b.ctx, "r2")
		errIs(t, err, store.ErrNotFound)
	})

	t.Run("RunNotFoundAndInvalid", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		_, err := b.st.GetRun(b.ctx, "nope")
		errIs(t, err, store.ErrNotFound)
		errIs(t, b.st.CreateRun(b.ctx, store.Run{Goal: "no id"}), store.ErrInvalid)
		errIs(t, b.st.CreateRun(b.ctx, store.Run{ID: "r1", Status: "sleeping"}), store.ErrInvalid)
		errIs(t, b.st.CreateRun(b.ctx, store.Run{ID: "r1", MaxParallel: -1}), store.ErrInvalid)
		_, err = b.st.GetRun(b.ctx, "r1")
		errIs(t, err, store.ErrNotFound)
		runs, err := b.st.ListRuns(b.ctx, 0)
		noErr(t, err)
		equal(t, "runs after invalid creates", len(runs), 0)
	})

	t.Run("TraceParentIsSetOnce", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		in := fullRun("r1")
		noErr(t, b.st.CreateRun(b.ctx, in))
		run := b.getRun(t, "r1")
		run.TraceParent, run.Result = "", "later"
		noErr(t, b.st.Commit(b.ctx, &run))
		got := b.getRun(t, "r1")
		equal(t, "result", got.Result, "later")
		equal(t, "trace parent after a commit", got.TraceParent, in.TraceParent)
		for _, bad := range []string{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7", "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
			"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", "traceparent"} {
			errIs(t, b.st.CreateRun(b.ctx, store.Run{ID: "r2", TraceParent: bad}), store.ErrInvalid)
		}
	})

	t.Run("CompleteRunIsFinal", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		run := b.run(t, "r1")
		run.Status, run.Result = store.RunComplete, "done"
		noErr(t, b.st.Commit(b.ctx, &run))
		done := b.getRun(t, "r1")
		for _, status := range []store.RunStatus{store.RunInterrupted, store.RunRunning, store.RunFailed} {
			late := done
			late.Status, late.Error = status, "late"
			root := store.Node{RunID: "r1", ID: 1, Kind: "goal", Goal: "g", State: "active"}
			errIs(t, b.st.Commit(b.ctx, &late, root), store.ErrConflict)
			equal(t, "run after a late "+string(status), b.getRun(t, "r1"), done)
			_, err := b.st.GetNode(b.ctx, "r1", 1)
			errIs(t, err, store.ErrNotFound)
		}
		// Rewriting it complete (a raised budget) is fine.
		done.BudgetUSD = 3
		noErr(t, b.st.Commit(b.ctx, &done))
	})

	t.Run("ListRunsNewestFirst", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		listsNewestFirst(t,
			func(id string, at time.Time) error { return b.st.CreateRun(b.ctx, store.Run{ID: id, CreatedAt: at}) },
			func(limit int) ([]store.Run, error) { return b.st.ListRuns(b.ctx, limit) },
			func(r store.Run) string { return r.ID })
	})

	t.Run("CommitInsertsNodesAndUpdatesRun", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		created := b.run(t, "r1")
		run := created
		run.Status, run.Result, run.Error = store.RunFailed, "partial", "budget exceeded"
		run.BudgetUSD, run.MaxParallel, run.Queue = 2.5, 3, "default"
		// Neither timestamp is the caller's to set.
		run.CreatedAt, run.UpdatedAt = when, when
		root := store.Node{RunID: "r1", ID: 1, Kind: "goal", Goal: "g", State: "waiting", CreatedAt: when}
		child := store.Node{RunID: "r1", ID: 2, ParentID: 1, Kind: "task", Spawn: "spawn", State: "pending"}

		before := time.Now()
		noErr(t, b.st.Commit(b.ctx, &run, root, child))
		after := time.Now()

		got := b.getRun(t, "r1")
		within(t, "run UpdatedAt", got.UpdatedAt, before, after)
		want := run
		want.CreatedAt, want.UpdatedAt = created.CreatedAt, got.UpdatedAt
		equal(t, "run", got, want)

		nodes := b.nodes(t, "r1")
		equal(t, "node count", len(nodes), 2)
		within(t, "new node CreatedAt", nodes[1].CreatedAt, before, after)
		for i, n := range nodes {
			within(t, fmt.Sprintf("node %d UpdatedAt", n.ID), n.UpdatedAt, before, after)
			want := []store.Node{root, child}[i]
			want.UpdatedAt = n.UpdatedAt
			if i == 0 {
				want.CreatedAt = when.UTC()
			} else {
				want.CreatedAt = n.CreatedAt
			}
			equal(t, fmt.Sprintf("node %d", n.ID), n, want)
		}
		one, err := b.st.GetNode(b.ctx, "r1", 2)
		noErr(t, err)
		equal(t, "GetNode", one, nodes[1])

		// Nodes alone leave the run row as it is.
		noErr(t, b.st.Commit(b.ctx, nil, store.Node{RunID: "r1", ID: 3, ParentID: 1, Kind: "ask"}))
		equal(t, "run after a nodes-only commit", b.getRun(t, "r1"), got)
		noErr(t, b.st.Commit(b.ctx, nil))
	})

	t.Run("UpsertReplacesAllButCreatedAt", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		b.run(t, "r1")
		first := fullNode("r1", 2)
		noErr(t, b.st.Commit(b.ctx, nil, first))
		stored := b.node(t, "r1", 2)

		// Every field changes, several of them back to their zero value.
		second := store.Node{
			RunID: "r1", ID: 2, ParentID: 3, Kind: "ask", Goal: "other goal",
			BlockedBy: []int64{}, Returns: "json", Question: "Which one?",
			Options: []string{"a"}, Default: "a", State: "complete", Result: "a",
			Context: "c2", SessionID: "sess-2", Attempts: 4, Synthesized: 1,
			CreatedAt: when.Add(time.Hour),
		}
		before := time.Now()
		noErr(t, b.st.Commit(b.ctx, nil, second))
		after := time.Now()
		got := b.node(t, "r1", 2)
		within(t, "UpdatedAt", got.UpdatedAt, before, after)
		if !got.UpdatedAt.After(stored.UpdatedAt) {
			t.Fatalf("UpdatedAt = %v, want after %v", got.UpdatedAt, stored.UpdatedAt)
		}
		want := second
		want.CreatedAt, want.UpdatedAt = when.UTC(), got.UpdatedAt
		equal(t, "node after upsert", got, want)
	})

	t.Run("NodeFieldsRoundTrip", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		b.run(t, "r1")
		started := when.Add(time.Minute)
		ended := when.Add(time.Minute + 7*time.Nanosecond)
		cases := []store.Node{
			fullNode("r1", 1),
			{RunID: "r1", ID: 2, Kind: "task"}, // nil slices, nil times
			{RunID: "r1", ID: 3, Kind: "ask", BlockedBy: []int64{}, Options: []string{}},
			{RunID: "r1", ID: 4, Kind: "ask", BlockedBy: []int64{3, 1 << 40}, StartedAt: &started,
				Options: []string{"<yes> & \"no\"", "不", ""}},
			{RunID: "r1", ID: 5, Kind: "task", EndedAt: &ended},
		}
		noErr(t, b.st.Commit(b.ctx, nil, cases...))
		nodes := b.nodes(t, "r1")
		equal(t, "node count", len(nodes), len(cases))
		for i, got := range nodes {
			want := cases[i]
			want.UpdatedAt = got.UpdatedAt
			if want.CreatedAt.IsZero() {
				want.CreatedAt = got.CreatedAt
			} else {
				want.CreatedAt = want.CreatedAt.UTC()
			}
			want.StartedAt, want.EndedAt = inUTC(want.StartedAt), inUTC(want.EndedAt)
			equal(t, fmt.Sprintf("node %d", got.ID), got, want)
			for _, tm := range []*time.Time{got.StartedAt, got.EndedAt} {
				if tm != nil && tm.Location() != time.UTC {
					t.Fatalf("node %d: time %v not in UTC", got.ID, tm)
				}
			}
		}
	})

	t.Run("CommitIsAtomic", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		b.run(t, "r1")
		b.run(t, "r2")
		noErr(t, b.st.Commit(b.ctx, nil, store.Node{RunID: "r1", ID: 1, Kind: "goal", State: "active"}))
		runBefore, nodesBefore := b.getRun(t, "r1"), b.nodes(t, "r1")

		changed := runBefore
		changed.Status = store.RunComplete
		good := store.Node{RunID: "r1", ID: 1, Kind: "goal", State: "complete", Result: "done"}
		added := store.Node{RunID: "r1", ID: 2, ParentID: 1, Kind: "task"}
		for _, tc := range []struct {
			name   string
			run    *store.Run
			nodes  []store.Node
			target error
		}{
			{"invalid second node", &changed, []store.Node{good, {RunID: "r1", ID: 3, Kind: "bogus"}}, store.ErrInvalid},
			{"second node of an unknown run", &changed, []store.Node{good, added, {RunID: "nope", ID: 1, Kind: "goal"}}, store.ErrNotFound},
			{"unknown run row", &store.Run{ID: "nope", Status: store.RunRunning}, []store.Node{good}, store.ErrNotFound},
			{"invalid run row", &store.Run{ID: "r1", Status: "sleeping"}, []store.Node{good}, store.ErrInvalid},
			{"node without run id", nil, []store.Node{good, {ID: 4, Kind: "task"}}, store.ErrInvalid},
			{"node id zero", nil, []store.Node{good, {RunID: "r1", Kind: "task"}}, store.ErrInvalid},
			{"negative node id", nil, []store.Node{good, {RunID: "r1", ID: -1, Kind: "task"}}, store.ErrInvalid},
			{"empty kind", nil, []store.Node{good, {RunID: "r1", ID: 4}}, store.ErrInvalid},
		} {
			errIs(t, b.st.Commit(b.ctx, tc.run, tc.nodes...), tc.target)
			equal(t, tc.name+": run", b.getRun(t, "r1"), runBefore)
			equal(t, tc.name+": nodes", b.nodes(t, "r1"), nodesBefore)
		}
		equal(t, "nodes of the other run", len(b.nodes(t, "r2")), 0)
	})

	t.Run("NodesOrderedAndScoped", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		b.run(t, "r1")
		b.run(t, "r2")
		// Separate commits, out of order; 10 sorts after 9 numerically.
		for _, id := range []int64{10, 2, 1, 9, 3} {
			noErr(t, b.st.Commit(b.ctx, nil, store.Node{RunID: "r1", ID: id, Kind: "task"}))
		}
		noErr(t, b.st.Commit(b.ctx, nil, store.Node{RunID: "r2", ID: 2, Kind: "goal", Goal: "r2's"}))
		var ids []int64
		for _, n := range b.nodes(t, "r1") {
			ids = append(ids, n.ID)
		}
		equal(t, "node ids", ids, []int64{1, 2, 3, 9, 10})
		equal(t, "r1 node 2 kind", b.node(t, "r1", 2).Kind, "task")
		equal(t, "r2 node 2 goal", b.node(t, "r2", 2).Goal, "r2's")

		b.run(t, "empty")
		equal(t, "nodes of a run without nodes", len(b.nodes(t, "empty")), 0)
		_, err := b.st.Nodes(b.ctx, "nope")
		errIs(t, err, store.ErrNotFound)
		_, err = b.st.GetNode(b.ctx, "r1", 4)
		errIs(t, err, store.ErrNotFound)
		_, err = b.st.GetNode(b.ctx, "nope", 1)
		errIs(t, err, store.ErrNotFound)
	})

	t.Run("RunUpdatedAtAdvances", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		// An hour ahead of the clock: a commit still moves it forward.
		future := time.Now().Add(time.Hour)
		noErr(t, b.st.CreateRun(b.ctx, store.Run{ID: "r1", UpdatedAt: future}))
		r := b.getRun(t, "r1")
		for i := range 3 {
			noErr(t, b.st.Commit(b.ctx, &r))
			next := b.getRun(t, "r1")
			if !next.UpdatedAt.After(r.UpdatedAt) {
				t.Fatalf("commit %d: UpdatedAt = %v, want after %v", i, next.UpdatedAt, r.UpdatedAt)
			}
			r = next
		}
	})

	t.Run("ConcurrentCommits", func(t *testing.T) {
		t.Parallel()
		b := setup(t, open)
		run := b.run(t, "r1")
		const writers, rounds = 6, 10
		errs := make(chan error, writers*rounds)
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				for r := range rounds {
					n := store.Node{RunID: "r1", ID: int64(w + 1), Kind: "task", Attempts: r + 1,
						Result: fmt.Sprintf("writer %d round %d", w, r)}
					// Half of the commits also rewrite the run row.
					var rp *store.Run
					if r%2 == 0 {
						rp = &run
					}
					if err := b.st.Commit(b.ctx, rp, n); err != nil {
						errs <- err
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("concurrent commit: %v", err)
		}
		nodes := b.nodes(t, "r1")
		equal(t, "node count", len(nodes), writers)
		for i, n := range nodes {
			equal(t, "node id", n.ID, int64(i+1))
			equal(t, fmt.Sprintf("node %d attempts", n.ID), n.Attempts, rounds)
			equal(t, fmt.Sprintf("node %d result", n.ID), n.Result, fmt.Sprintf("writer %d round %d", i, rounds-1))
		}
	})
}

// run creates a run with default fields and returns it as stored.
func (b *bundle) run(t *testing.T, id string) store.Run {
	t.Helper()
	noErr(t, b.st.CreateRun(b.ctx, store.Run{ID: id, Goal: "goal of " + id, Model: "test/model", MaxParallel: 4}))
	return b.getRun(t, id)
}

func (b *bundle) getRun(t *testing.T, id string) store.Run {
	t.Helper()
	r, err := b.st.GetRun(b.ctx, id)
	noErr(t, err)
	return r
}

func (b *bundle) nodes(t *testing.T, runID string) []store.Node {
	t.Helper()
	nodes, err := b.st.Nodes(b.ctx, runID)
	noErr(t, err)
	return nodes
}

func (b *bundle) node(t *testing.T, runID string, id int64) store.Node {
	t.Helper()
	n, err := b.st.GetNode(b.ctx, runID, id)
	noErr(t, err)
	return n
}

// fullRun is a run with every field set to a value other than its default.
func fullRun(id string) store.Run {
	return store.Run{
		ID: id, Goal: "Port the parser to Go", Status: store.RunInterrupted,
		Model: "anthropic/claude-sonnet-4-5", Workspace: "/home/me/project", Mode: "auto",
		BudgetUSD: 12.75, MaxTokens: 2_000_000, MaxParallel: 8, NodeTimeout: 600_000,
		Result: "half done", Error: "interrupted by signal", Queue: "gpu",
		TraceParent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		CreatedAt:   when, UpdatedAt: when.Add(time.Second),
	}
}

// fullNode is a node with every field set to a value other than its default.
func fullNode(runID string, id int64) store.Node {
	started, ended := when.Add(time.Second), when.Add(2*time.Second+1)
	return store.Node{
		RunID: runID, ID: id, ParentID: id - 1, Kind: "task", Spawn: "fork",
		Goal: "Write the lexer", Prompt: "Use a table-driven scanner.",
		BlockedBy: []int64{1, 3}, Returns: "text", ContextQuery: "what about tokens?",
		Question: "q", Options: []string{"x", "y"}, Default: "x",
		State: "synthesizing", Result: "r", Error: "e", Draft: "draft", HasDraft: true,
		Context: "results of node 3", SessionID: "sess-1", Attempts: 2, Synthesized: 3,
		Notice: "you were resumed", CallID: "toolu_42", CreatedAt: when, StartedAt: &started, EndedAt: &ended,
		BudgetUSD: 0.25, MaxTokens: 40000, Model: "openai/gpt-5-mini",
	}
}

// within fails unless before <= got <= after.
func within(t *testing.T, what string, got, before, after time.Time) {
	t.Helper()
	if got.Before(before) || got.After(after) {
		t.Fatalf("%s = %v, want between %v and %v", what, got, before, after)
	}
}

func inUTC(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
