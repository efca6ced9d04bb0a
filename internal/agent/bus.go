package agent

import (
	"sync"
	"time"
)

// Bus numbers events and hands them to subscribers, in one total order per
// process. Publishing never waits for a subscriber: Publish stamps the
// sequence number under a small lock and appends the event to each
// subscriber's own unbounded queue; every subscriber drains its queue on a
// goroutine of its own. So a slow subscriber (a client that stops reading
// stdout) slows only its own output, and a subscriber may take its own
// locks, call back into the runtime and publish.
type Bus struct {
	mu   sync.Mutex // guards seq and subs; held only to stamp and enqueue
	seq  uint64
	subs []*Subscription
	now  func() time.Time
}

// NewBus returns an empty bus.
func NewBus() *Bus {
	return &Bus{now: time.Now}
}

// Publish stamps e with the next sequence number and the time, then queues
// it for every subscriber. It returns at once.
func (b *Bus) Publish(e Event) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.seq++
	m := e.meta()
	m.Seq = b.seq
	if m.At.IsZero() {
		m.At = b.now()
	}
	// Queuing under b.mu keeps every subscriber's order the seq order.
	for _, s := range b.subs {
		s.push(e)
	}
}

// Subscribe calls fn with every event published from now on, in order, on
// a goroutine owned by the returned Subscription. fn may block, take locks
// and publish; it must not call Close or Flush of its own subscription.
func (b *Bus) Subscribe(fn func(Event)) *Subscription {
	s := &Subscription{bus: b, fn: fn, wake: make(chan struct{}, 1), done: make(chan struct{})}
	s.cond = sync.NewCond(&s.mu)
	b.mu.Lock()
	s.handled = b.seq
	s.queued = b.seq
	b.subs = append(b.subs, s)
	b.mu.Unlock()
	go s.drain()
	return s
}

// Seq returns the last sequence number handed out.
func (b *Bus) Seq() uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.seq
}

func (b *Bus) remove(s *Subscription) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, x := range b.subs {
		if x == s {
			b.subs = append(b.subs[:i:i], b.subs[i+1:]...)
			return
		}
	}
}

// Subscription is one subscriber's queue and the goroutine that drains it.
type Subscription struct {
	bus  *Bus
	fn   func(Event)
	wake chan struct{} // room for one "the queue or closed changed"
	done chan struct{} // closed when the drain goroutine has returned

	mu      sync.Mutex // guards the fields below
	cond    *sync.Cond // on mu: handled advanced or the drain ended
	queue   []Event
	queued  uint64 // seq of the last event queued
	handled uint64 // seq of the last event fn returned from
	closed  bool
	ended   bool // the drain goroutine is returning
}

func (s *Subscription) push(e Event) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.queue = append(s.queue, e)
	s.queued = e.meta().Seq
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *Subscription) drain() {
	defer func() {
		s.mu.Lock()
		s.closed, s.ended = true, true
		s.queue = nil
		s.cond.Broadcast()
		s.mu.Unlock()
		close(s.done)
	}()
	// spare is the array of a batch handled, emptied, which the queue
	// takes next: a queue grown from nothing for every batch was a few
	// allocations per event of a busy bus.
	var spare []Event
	for {
		s.mu.Lock()
		batch, closed := s.queue, s.closed
		s.queue, spare = spare, nil
		s.mu.Unlock()
		if len(batch) == 0 {
			spare = batch // nil, or the spare it was given back unused
			if closed {
				return
			}
			<-s.wake
			continue
		}
		for _, e := range batch {
			s.fn(e)
			s.mu.Lock()
			s.handled = e.meta().Seq
			s.cond.Broadcast()
			s.mu.Unlock()
		}
		if cap(batch) <= maxSpareEvents { // a burst's is not kept
			clear(batch)
			spare = batch[:0]
		}
	}
}

// maxSpareEvents bounds the queue array a subscription keeps for reuse.
const maxSpareEvents = 1024

// Flush waits until fn has handled every event published before the call
// (or the subscription is closed). A front end calls it before writing
// something that must follow those events, such as the end of a turn.
func (s *Subscription) Flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	target := s.queued
	for s.handled < target && !s.ended {
		s.cond.Wait()
	}
}

// Close stops the subscription: later events are not queued, the events
// already queued are handled, and Close returns when the drain goroutine
// has ended. It is safe to call more than once.
func (s *Subscription) Close() {
	s.bus.remove(s)
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	<-s.done
}
