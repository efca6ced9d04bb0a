package tree

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestLiveSetMatchesAScan adds and ends nodes at random, ending some in
// the middle of a scan, and checks the set, its order and every parent's
// open children against a plain scan of the same nodes.
func TestLiveSetMatchesAScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var (
		l      liveSet
		parent = map[int64]int64{}
		ended  = map[int64]bool{}
		next   int64
	)
	add := func() {
		next++
		p := int64(0)
		if next > 1 {
			p = 1 + rng.Int64N(next-1)
		}
		parent[next] = p
		l.add(next, p)
	}
	end := func(id int64) {
		if !ended[id] {
			ended[id] = true
			l.end(id, parent[id])
		}
	}
	check := func() {
		t.Helper()
		var want []int64
		open := map[int64]int{}
		for id := int64(1); id <= next; id++ {
			if !ended[id] {
				want = append(want, id)
				if parent[id] != 0 {
					open[parent[id]]++
				}
			}
		}
		if got := slices.Collect(l.all()); !slices.Equal(got, want) {
			t.Fatalf("live = %v, want %v", got, want)
		}
		for id := int64(1); id <= next; id++ {
			if got := l.openChildren(id); got != open[id] {
				t.Fatalf("open children of #%d = %d, want %d", id, got, open[id])
			}
		}
	}
	for range 2000 {
		switch op := rng.IntN(10); {
		case op < 5 || next == 0:
			add()
		case op < 9:
			end(1 + rng.Int64N(next))
		default:
			// End the node a scan stands on and a later one; the scan
			// must still reach every node that stays.
			var seen []int64
			for id := range l.all() {
				seen = append(seen, id)
				if rng.IntN(3) == 0 {
					end(id)
					end(min(next, id+1+rng.Int64N(3)))
				}
			}
			for id := int64(1); id <= next; id++ {
				if !ended[id] && !slices.Contains(seen, id) {
					t.Fatalf("a scan that ended nodes missed live #%d (saw %v)", id, seen)
				}
			}
		}
		check()
	}
	end(next) // ending twice changes nothing
	l.end(next, parent[next])
	check()
}
