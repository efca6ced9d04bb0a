package protocol

import (
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"
)

// QuietAfter is how long a headless session waits, after its last turn
// ended and with no input since, before it gives memory back: long enough
// that a client sending turn after turn never pays for it, short enough
// that a gateway's idle sessions shrink soon after their turn.
const QuietAfter = time.Second

// Quiet gives a waiting session's memory back to the system once per
// quiet spell: Idle (a turn ended) arms a one-shot timer, Busy (input
// arrived) disarms it, and the trim runs when the timer fires. A session
// that stays idle wakes once, not periodically.
//
// The default trim is FreeGarbage.
type Quiet struct {
	after time.Duration
	trim  func()

	mu     sync.Mutex
	timer  *time.Timer
	closed bool
	wg     sync.WaitGroup // a trim that is armed or running
}

// NewQuiet returns a Quiet that runs trim after the given quiet time; a
// nil trim is FreeGarbage.
func NewQuiet(after time.Duration, trim func()) *Quiet {
	if trim == nil {
		trim = FreeGarbage
	}
	return &Quiet{after: after, trim: trim}
}

// minGarbage is the least garbage FreeGarbage collects for.
const minGarbage = 1 << 20

// FreeGarbage collects and returns the free heap to the system
// (debug.FreeOSMemory) when that gives back at least 1 MiB: the heap's
// objects beyond what was live after the last collection, and the free
// pages it keeps (garbage a collection already freed, which the
// background scavenger returns only slowly). It does nothing otherwise. A
// session keeps its turns' garbage until the heap reaches the collector's
// goal (twice the live heap, 4 MiB at least), so an idle session that had
// busy turns holds a few MiB of it; one that has little would pay a
// collection's own memory (mark bits, work buffers) and CPU for nothing
// (docs/benchmarks.md, "Idle memory and start-up").
func FreeGarbage() {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}, {Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/free:bytes"}}
	metrics.Read(s)
	live, objects, free := s[0].Value.Uint64(), s[1].Value.Uint64(), s[2].Value.Uint64()
	if live == 0 || objects+free < live+minGarbage { // no collection yet: start-up's heap is live
		return
	}
	debug.FreeOSMemory()
}

// Idle says the session has nothing to do until its client writes: the
// trim runs after the quiet time unless Busy comes first.
func (q *Quiet) Idle() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return
	}
	q.disarm()
	q.wg.Add(1)
	q.timer = time.AfterFunc(q.after, func() {
		defer q.wg.Done()
		q.trim()
	})
}

// Busy says input arrived: a trim not yet started does not run.
func (q *Quiet) Busy() {
	q.mu.Lock()
	q.disarm()
	q.mu.Unlock()
}

// Close disarms the timer and waits for a trim that already started.
func (q *Quiet) Close() {
	q.mu.Lock()
	q.closed = true
	q.disarm()
	q.mu.Unlock()
	q.wg.Wait()
}

// disarm stops the armed timer; the caller holds mu.
func (q *Quiet) disarm() {
	if q.timer != nil && q.timer.Stop() {
		q.wg.Done() // its function will not run
	}
	q.timer = nil
}
