package agent_test

import (
	"sync"
	"testing"

	"github.com/arbor-run/arbor/internal/agent"
)

func TestBus(t *testing.T) {
	t.Parallel()

	t.Run("a blocked subscriber blocks neither publishers nor other subscribers", func(t *testing.T) {
		t.Parallel()
		bus := agent.NewBus()
		release := make(chan struct{})
		blocked := bus.Subscribe(func(agent.Event) { <-release })
		var got []uint64
		other := bus.Subscribe(func(e agent.Event) { got = append(got, agent.MetaOf(e).Seq) })
		const n = 100_000
		for range n {
			bus.Publish(&agent.Idle{})
		}
		other.Flush()
		if len(got) != n {
			t.Fatalf("the other subscriber handled %d events, want %d", len(got), n)
		}
		for i, seq := range got {
			if seq != uint64(i+1) {
				t.Fatalf("event %d has seq %d: out of order", i, seq)
			}
		}
		close(release)
		blocked.Close() // handles the 100,000 queued events first
		other.Close()
	})

	t.Run("a subscriber may publish and take locks the publisher holds", func(t *testing.T) {
		t.Parallel()
		bus := agent.NewBus()
		var mu sync.Mutex
		echoed := 0
		sub := bus.Subscribe(func(e agent.Event) {
			mu.Lock()
			defer mu.Unlock()
			if _, ok := e.(*agent.Idle); ok {
				bus.Publish(&agent.StepStarted{})
			} else {
				echoed++
			}
		})
		for range 1000 {
			mu.Lock() // published while holding the lock the subscriber takes
			bus.Publish(&agent.Idle{})
			mu.Unlock()
		}
		sub.Flush() // handles the idles
		sub.Flush() // and the events they published
		mu.Lock()
		defer mu.Unlock()
		if echoed != 1000 {
			t.Fatalf("echoed %d, want 1000", echoed)
		}
		if bus.Seq() != 2000 {
			t.Fatalf("seq %d, want 2000", bus.Seq())
		}
		sub.Close()
	})

	t.Run("close handles what was queued and drops what comes later", func(t *testing.T) {
		t.Parallel()
		bus := agent.NewBus()
		handled := 0
		sub := bus.Subscribe(func(agent.Event) { handled++ })
		for range 500 {
			bus.Publish(&agent.Idle{})
		}
		sub.Close()
		if handled != 500 {
			t.Fatalf("handled %d before Close returned, want 500", handled)
		}
		bus.Publish(&agent.Idle{})
		sub.Close() // twice is fine
		sub.Flush() // and so is a flush after close
		if handled != 500 {
			t.Fatalf("handled %d after Close, want 500", handled)
		}
	})

	t.Run("events before subscribe are not delivered", func(t *testing.T) {
		t.Parallel()
		bus := agent.NewBus()
		bus.Publish(&agent.Idle{})
		var seqs []uint64
		sub := bus.Subscribe(func(e agent.Event) { seqs = append(seqs, agent.MetaOf(e).Seq) })
		bus.Publish(&agent.Idle{})
		sub.Flush()
		sub.Close()
		if len(seqs) != 1 || seqs[0] != 2 {
			t.Fatalf("got seqs %v, want [2]", seqs)
		}
	})

	t.Run("concurrent publishers, one order for every subscriber", func(t *testing.T) {
		t.Parallel()
		bus := agent.NewBus()
		var a, b []uint64
		sa := bus.Subscribe(func(e agent.Event) { a = append(a, agent.MetaOf(e).Seq) })
		sb := bus.Subscribe(func(e agent.Event) { b = append(b, agent.MetaOf(e).Seq) })
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for range 1000 {
					bus.Publish(&agent.Idle{})
				}
			})
		}
		wg.Wait()
		sa.Close()
		sb.Close()
		if len(a) != 8000 || len(b) != 8000 {
			t.Fatalf("handled %d and %d, want 8000 each", len(a), len(b))
		}
		for i := range a {
			if a[i] != uint64(i+1) || b[i] != a[i] {
				t.Fatalf("event %d: seq %d and %d, want %d", i, a[i], b[i], i+1)
			}
		}
	})
}
