package protocol

import (
	"runtime/debug"
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
// The default trim is debug.FreeOSMemory: a collection, then the free
// heap returned to the system. Without it a session keeps the garbage of
// its last turn until the next one, and the runtime's background
// scavenger returns free pages only down to its heap goal, about twice
// the live heap. It costs about 5 ms of CPU per quiet spell and saves
// about 2 MiB of private memory per idle session (docs/benchmarks.md,
// "Idle sessions give memory back").
type Quiet struct {
	after time.Duration
	trim  func()

	mu     sync.Mutex
	timer  *time.Timer
	closed bool
	wg     sync.WaitGroup // a trim that is armed or running
}

// NewQuiet returns a Quiet that runs trim after the given quiet time; a
// nil trim is debug.FreeOSMemory.
func NewQuiet(after time.Duration, trim func()) *Quiet {
	if trim == nil {
		trim = debug.FreeOSMemory
	}
	return &Quiet{after: after, trim: trim}
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
