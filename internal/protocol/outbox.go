package protocol

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"
)

// Outbox is an unbounded FIFO of lines on their way to a Writer, written
// in order by its own goroutine. Put encodes and queues a value and never
// blocks, so no caller holds a lock (or stops reading its input) while the
// client is slow to read the output: a client that stops reading stalls
// nothing but its own output.
type Outbox struct {
	w     *Writer
	onErr func(error)
	wake  chan struct{} // room for one "lines or closed changed"
	done  chan struct{} // closed when run has returned

	mu     sync.Mutex // guards the fields below
	lines  [][]byte
	closed bool
}

// NewOutbox starts an outbox writing to w; the first write failure goes
// to onErr (every later write fails the same way and is dropped). Close it.
func NewOutbox(w io.Writer, onErr func(error)) *Outbox {
	o := &Outbox{w: NewWriter(w), onErr: onErr, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go o.run()
	return o
}

// Put encodes v as Writer.Write does and queues the line. A value that
// cannot be encoded is an error and queues nothing; after Close, Put
// drops the line.
func (o *Outbox) Put(v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("protocol: encode %T: %w", v, err)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return nil
	}
	o.lines = append(o.lines, buf.Bytes())
	select {
	case o.wake <- struct{}{}:
	default:
	}
	return nil
}

// Write queues p, which is one or more whole lines, as it is, and never
// blocks: an Outbox is the io.Writer for code that encodes its own lines
// (the MCP SDK's stdio transport). After Close it drops p.
func (o *Outbox) Write(p []byte) (int, error) {
	line := bytes.Clone(p)
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.closed {
		o.lines = append(o.lines, line)
		select {
		case o.wake <- struct{}{}:
		default:
		}
	}
	return len(p), nil
}

// batchBytes bounds one write of lines queued together.
const batchBytes = 64 << 10

// run writes the queued lines until Close.
func (o *Outbox) run() {
	defer close(o.done)
	failed := false
	var batch []byte // the lines queued since the last write, written as one
	for {
		o.mu.Lock()
		lines, closed := o.lines, o.closed
		o.lines = nil
		o.mu.Unlock()
		if len(lines) > 0 {
			// One write for the lines queued together (up to batchBytes):
			// a turn's events often come at once, and a write is a system
			// call and, in a process among many on few cores, a chance for
			// the runtime to hand the session's processor to another
			// thread.
			for len(lines) > 0 {
				line, n := lines[0], 1
				if len(lines) > 1 && len(line) < batchBytes {
					batch = append(batch[:0], line...)
					for ; n < len(lines) && len(batch)+len(lines[n]) <= batchBytes; n++ {
						batch = append(batch, lines[n]...)
					}
					line = batch
				}
				lines = lines[n:]
				if err := o.w.emit(line); err != nil && !failed {
					failed = true
					if o.onErr != nil {
						o.onErr(err)
					}
				}
			}
			if cap(batch) > 4<<10 {
				batch = nil // an idle session keeps no burst's buffer
			}
			continue
		}
		if closed {
			return
		}
		<-o.wake
	}
}

// Close lets the outbox write what is queued, then stops it and waits.
// It is safe to call more than once.
func (o *Outbox) Close() { _ = o.CloseContext(context.Background()) }

// CloseContext is Close that gives up waiting when ctx ends (a client
// that stopped reading must not keep a signalled process alive): the lines
// not yet written are dropped and ctx's error returned. The goroutine
// blocked in the write ends when the writer fails or the process exits.
func (o *Outbox) CloseContext(ctx context.Context) error {
	o.mu.Lock()
	o.closed = true
	select {
	case o.wake <- struct{}{}:
	default:
	}
	o.mu.Unlock()
	select {
	case <-o.done:
		return nil
	case <-ctx.Done():
		o.mu.Lock()
		o.lines = nil
		o.mu.Unlock()
		return ctx.Err()
	}
}

// ShutdownGrace is how long a headless server that was signalled (its
// context cancelled) waits for a client to read its last lines.
const ShutdownGrace = 2 * time.Second

// CloseAfter closes o: at once-and-wait while ctx is live, or within
// ShutdownGrace once ctx has ended (the process was signalled).
func (o *Outbox) CloseAfter(ctx context.Context) {
	if ctx.Err() == nil {
		o.Close()
		return
	}
	gctx, cancel := context.WithTimeout(context.Background(), ShutdownGrace)
	defer cancel()
	_ = o.CloseContext(gctx)
}
