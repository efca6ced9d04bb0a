package tree

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
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

// TestLocalReusesGoroutines: jobs dispatched one after another run on the
// goroutine that ran the last one, Wait returns once every job did and
// ends the idle goroutines, and a job dispatched after Wait still runs.
// It counts the dispatcher's own goroutines in the stacks of all, as the
// process's goroutine count also moves with the runtime's and with
// goroutines other tests left ending.
func TestLocalReusesGoroutines(t *testing.T) {
	var l Local
	done := make(chan struct{})
	for range 100 {
		l.Dispatch(func() { done <- struct{}{} })
		<-done
		runtime.Gosched() // let the job's goroutine get back to idle
	}
	// Without reuse, every job would leave its goroutine idle: 100. A
	// goroutine still on its way back when the next job comes makes one
	// more, now and then.
	if n := serving(); n > 10 {
		t.Fatalf("%d goroutines serving after 100 jobs one at a time", n)
	}
	var ran atomic.Int32
	release := make(chan struct{})
	for range 8 {
		l.Dispatch(func() { <-release; ran.Add(1) })
	}
	close(release)
	l.Wait()
	if ran.Load() != 8 {
		t.Fatalf("Wait returned after %d of 8 jobs", ran.Load())
	}
	if n := serving(); n != 0 {
		t.Fatalf("%d goroutines still serving after Wait", n)
	}
	l.Dispatch(func() { ran.Add(1) })
	l.Wait()
	if ran.Load() != 9 {
		t.Fatal("a job dispatched after Wait did not run")
	}
}

// serving counts the goroutines in Local.serve.
func serving() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Count(string(buf[:n]), "tree.(*Local).serve(")
		}
		buf = make([]byte, 2*len(buf))
	}
}
