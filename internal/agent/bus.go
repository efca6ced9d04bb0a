package agent

import (
	"sync"
	"time"
)

// Bus numbers events and hands them to subscribers, in one total order per
// process. Subscribers are called synchronously, in the publisher's
// goroutine, under the bus lock: they must be quick and must not publish.
type Bus struct {
	mu   sync.Mutex // guards seq, subs, next
	seq  uint64
	subs map[int]func(Event)
	next int
	now  func() time.Time
}

// NewBus returns an empty bus.
func NewBus() *Bus {
	return &Bus{subs: map[int]func(Event){}, now: time.Now}
}

// Publish stamps e with the next sequence number and the time, then delivers
// it to every subscriber.
func (b *Bus) Publish(e Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.seq++
	m := e.meta()
	m.Seq = b.seq
	if m.At.IsZero() {
		m.At = b.now()
	}
	for _, fn := range b.subs {
		fn(e)
	}
}

// Subscribe registers fn for every later event; the returned function
// removes it.
func (b *Bus) Subscribe(fn func(Event)) (cancel func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	id := b.next
	b.next++
	b.subs[id] = fn
	return func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		delete(b.subs, id)
	}
}

// Seq returns the last sequence number handed out.
func (b *Bus) Seq() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.seq
}
