package sqlite

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/store"
)

// TestNodeValsSame: same(i) agrees with comparing field(i)'s boxed values
// (what updateChanged compared before it kept typed values), for every
// field, over nodes that differ in some fields and not in others; and
// args binds one value per column.
func TestNodeValsSame(t *testing.T) {
	t.Parallel()
	if got, want := len((&nodeVals{}).args()), strings.Count(nodeColumns, ",")+1; got != want {
		t.Fatalf("args binds %d values for %d columns", got, want)
	}
	at := time.Unix(1_700_000_000, 0)
	rng := rand.New(rand.NewPCG(38, 12))
	pick := func(vals ...string) string { return vals[rng.IntN(len(vals))] }
	random := func() store.Node {
		n := store.Node{RunID: "r", ID: 5, ParentID: rng.Int64N(2) + 1, Kind: store.NodeKind(pick("task", "ask")),
			Spawn: pick("", "spawn"), Goal: pick("g", "h"), Prompt: pick("", "p"), Returns: pick("", "text"),
			ContextQuery: pick("", "q"), Question: pick("", "?"), Default: pick("", "d"),
			State: store.NodeState(pick("pending", "active", "complete")), Result: pick("", "r"), Error: pick("", "e"),
			Draft: pick("", "d"), HasDraft: rng.IntN(2) == 0, Context: pick("", "c"), SessionID: pick("", "r.2"),
			Attempts: rng.IntN(2), Synthesized: rng.IntN(2), Notice: pick("", "n"), CallID: pick("", "c1"),
			BudgetUSD: float64(rng.IntN(2)) / 2, MaxTokens: rng.Int64N(2), Model: pick("", "m"), Runner: pick("", "w"),
			CreatedAt: at}
		if rng.IntN(2) == 0 {
			n.BlockedBy = []int64{1}
		}
		if rng.IntN(3) == 0 {
			n.Options = []string{"a"}
		} else if rng.IntN(2) == 0 {
			n.Options = []string{}
		}
		if rng.IntN(2) == 0 {
			s := at.Add(time.Duration(rng.IntN(2)))
			n.StartedAt = &s
		}
		if rng.IntN(2) == 0 {
			n.EndedAt = &at
		}
		return n
	}
	differ := make([]int, len(nodeFields))
	for range 500 {
		a, err := newNodeVals(random(), at)
		must(t, err)
		b, err := newNodeVals(random(), at)
		must(t, err)
		for i, f := range nodeFields {
			want := a.field(i) == b.field(i)
			if got := a.same(b, i); got != want {
				t.Fatalf("%s: same %v, the values %#v and %#v", f, got, a.field(i), b.field(i))
			}
			if !want {
				differ[i]++
			}
		}
	}
	for i, n := range differ {
		if n == 0 {
			t.Errorf("%s never differed: not covered", nodeFields[i])
		}
	}
	// Nothing of the caller's slices or times is kept.
	n := random()
	n.BlockedBy, n.Options = []int64{7}, []string{"x"}
	v, err := newNodeVals(n, at)
	must(t, err)
	n.BlockedBy[0], n.Options[0] = 8, "y"
	if v.blocked != "[7]" || v.options != `["x"]` || v.n.BlockedBy != nil || v.n.Options != nil {
		t.Fatalf("kept the caller's slices: %q %q %v %v", v.blocked, v.options, v.n.BlockedBy, v.n.Options)
	}
}
