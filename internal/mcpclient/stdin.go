package mcpclient

import (
	"errors"
	"io"
	"sync"
)

// maxQueued bounds what waits to be written to a stdio server's stdin.
const maxQueued = 2 * maxMessage

// ErrNotReading: a stdio server has left more than maxQueued of arbor's
// messages unread on its stdin.
var ErrNotReading = errors.New("the MCP server is not reading what arbor sends it")

// stdinQueue writes a stdio server's messages to its stdin on a
// goroutine of its own, in order. The SDK writes a message while its
// caller waits, under a lock and deaf to the caller's context, so a
// server that stops reading its stdin would hold every call (and
// cancelling them, and closing the session) once the pipe was full;
// through the queue a call waits only for its answer, which its context
// and tool_timeout bound.
type stdinQueue struct {
	w    io.WriteCloser
	done chan struct{} // closed when the writing goroutine returned

	mu     sync.Mutex // guards the fields below
	wake   *sync.Cond
	queue  [][]byte
	queued int   // bytes in queue and being written
	err    error // the first write's error, or once closed
}

func newStdinQueue(w io.WriteCloser) *stdinQueue {
	q := &stdinQueue{w: w, done: make(chan struct{})}
	q.wake = sync.NewCond(&q.mu)
	go q.run()
	return q
}

// Write queues a copy of p.
func (q *stdinQueue) Write(p []byte) (int, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	switch {
	case q.err != nil:
		return 0, q.err
	case q.queued+len(p) > maxQueued:
		return 0, ErrNotReading
	}
	q.queue = append(q.queue, append([]byte(nil), p...))
	q.queued += len(p)
	q.wake.Signal()
	return len(p), nil
}

func (q *stdinQueue) run() {
	defer close(q.done)
	for {
		q.mu.Lock()
		for len(q.queue) == 0 && q.err == nil {
			q.wake.Wait()
		}
		if q.err != nil {
			q.mu.Unlock()
			return
		}
		b := q.queue[0]
		q.queue[0] = nil
		q.queue = q.queue[1:]
		q.mu.Unlock()
		_, err := q.w.Write(b)
		q.mu.Lock()
		q.queued -= len(b)
		if err != nil && q.err == nil {
			q.err = err
		}
		q.mu.Unlock()
	}
}

// Close is a no-op: closing stdin is the process's (stop).
func (q *stdinQueue) Close() error { return nil }

// stop drops what is queued, closes stdin (which ends a write the server
// does not read) and waits for the writing goroutine.
func (q *stdinQueue) stop() {
	q.mu.Lock()
	if q.err == nil {
		q.err = errors.New("the MCP server's stdin is closed")
	}
	q.queue = nil
	q.wake.Signal()
	q.mu.Unlock()
	q.w.Close()
	<-q.done
}
