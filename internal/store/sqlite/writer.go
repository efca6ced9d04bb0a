package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
)

// errClosed is what a write gets once Close has begun.
var errClosed = errors.New("sqlite store is closed")

// maxBatch bounds how many queued writes share one transaction, so one
// commit's wait stays short for the first of them.
const maxBatch = 64

// writer runs the store's writes on its one write connection, with group
// commit: the writes that queued while a transaction was running share the
// next transaction, and one caller's failure rolls back only its own
// statements (the batch runs again with a SAVEPOINT per write when one
// failed: writer_tx.go). Every caller is released once the transaction
// holding its write has committed (or with its own error).
//
// There is no writer goroutine: the first caller to find the writer idle
// leads, running batches on its own goroutine until its own write is done,
// then hands the lead to the oldest waiting caller. An uncontended write
// thus runs on its caller's goroutine with no hand-off; under contention a
// batch costs one wake-up.
//
// Invariants: at most one leader at a time (leading, under mu); only the
// leader touches conn and stmts; a request is run at most once per
// transaction attempt and its caller is released exactly once.
type writer struct {
	db *sql.DB // the one-connection pool conn comes from

	mu      sync.Mutex // guards queue, spare, leading, closed, idle
	queue   []*writeReq
	spare   []*writeReq // the previous batch's backing array, reused
	leading bool
	closed  bool
	idle    chan struct{} // closed when the lead ends after closed is set

	// Owned by the leader. Statements run on the driver's connection
	// itself (sql.Conn.Raw, held for a whole batch): database/sql's
	// locking and argument conversion per statement were a tenth of a
	// write's cost. dc is that connection while a batch runs (withConn).
	conn    *sql.Conn
	dc      driver.Conn
	connErr error // why there is no dc during this batch
	bad     bool  // a statement found the connection gone
	stmts   map[string]driver.Stmt
	args    []driver.NamedValue  // reused for every statement's arguments
	live    []*writeReq          // the running batch's requests, reused
	heads   []*writeReq          // coalesceSteps' latest step per session, reused
	commits int                  // transactions committed, for ckpt
	nodes   nodeRows             // the node rows this writer last committed (nodes.go)
	seqs    known[string, int64] // sessions' last_seq as this writer last committed it
	host    hostLock             // taken around every transaction (hostlock.go)

	// ckpt, when set (before the first write), is asked for a background
	// checkpoint every checkpointEvery commits.
	ckpt *checkpointer

	// Counters, read by tests and benchmarks (Store.WriteStats).
	txs     atomic.Int64 // transactions begun
	writes  atomic.Int64 // writes run in them (a write run again counts again)
	batches atomic.Int64 // batches of two or more writes
	ran     atomic.Int64 // statements run, BEGIN and COMMIT included
	merged  atomic.Int64 // steps written merged into an earlier one (steps.go)

	// enqueued, when set (tests only), is signalled after every enqueue.
	enqueued chan<- struct{}
}

// Request states. A request is queued until the leader takes it into a
// batch or its caller abandons it (its context ended first); promoted
// marks a queued request whose caller was handed the lead.
const (
	reqQueued int32 = iota
	reqPromoted
	reqTaken
	reqAbandoned
)

type writeReq struct {
	fn func(*wtx) error
	writeTag
	// absorbed is set while this request's step is merged into an
	// earlier one of the running transaction (coalesceSteps): fn is not
	// run, and the request commits, or runs again apart, with the rest.
	absorbed bool
	state    atomic.Int32
	// waiting is set (under writer.mu) once the caller waits for the
	// request: only a waiting caller can be handed the lead. A queued
	// write (queue) waits later, or never.
	waiting bool
	wake    chan struct{} // one send: done, or promoted to lead
	done    bool          // set by the leader before the wake-up
	err     error
	panic   any // a panic of fn, raised again on its caller's goroutine
	// onCommit are what fn asked to run once its write is committed
	// (wtx.afterCommit); a write rolled back or run again drops them.
	onCommit []func()

	// Of a queued write (enqueueTagged): its wait, once, and its outcome.
	w        *writer
	waitOnce sync.Once
	waitErr  error
}

func newWriter(ctx context.Context, db *sql.DB) (*writer, error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	return &writer{db: db, conn: conn, stmts: map[string]driver.Stmt{},
		nodes: nodeRows{rows: known[nodeKey, nodeRow]{limit: maxNodeRows}},
		seqs:  known[string, int64]{limit: maxKnownSeqs}}, nil
}

// do runs fn in a write transaction, perhaps shared with other callers'
// writes, and returns once that transaction committed or fn's error. A
// write that ctx ends while it is still queued is not run (ctx.Err());
// once it runs it runs to the end, and its statements do not watch ctx.
func (w *writer) do(ctx context.Context, fn func(*wtx) error) error {
	return w.doTagged(ctx, fn, writeTag{})
}

// writeTag says what a write touches, for coalesceSteps: a step's
// write, or one that writes runs and nodes only. A write with neither
// may touch anything.
type writeTag struct {
	step      *stepWrite
	nodesOnly bool
}

// doTagged is do for a write that tag describes.
func (w *writer) doTagged(ctx context.Context, fn func(*wtx) error, tag writeTag) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r := &writeReq{fn: fn, writeTag: tag, wake: make(chan struct{}, 1), waiting: true}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return errClosed
	}
	w.queue = append(w.queue, r)
	lead := !w.leading
	w.leading = true
	w.mu.Unlock()
	if w.enqueued != nil {
		w.enqueued <- struct{}{}
	}
	return w.finish(ctx, r, lead)
}

// enqueue queues fn like do and returns at once; wait returns what do would
// have returned. The write runs when whoever leads next gets to it, at the
// latest in wait: so a caller may queue a write while it holds a lock and
// wait for it once it released the lock, and its writes keep their order
// with every write queued after them. wait may be called again, and from
// several goroutines at once: each call returns the same outcome (a write
// is released once, so a second wait for the release would never end).
func (w *writer) enqueue(fn func(*wtx) error) (wait func() error) {
	return w.enqueueTagged(fn, writeTag{})
}

// enqueueTagged is enqueue for a write that tag describes.
func (w *writer) enqueueTagged(fn func(*wtx) error, tag writeTag) (wait func() error) {
	r := &writeReq{fn: fn, writeTag: tag, wake: make(chan struct{}, 1), w: w}
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return func() error { return errClosed }
	}
	w.queue = append(w.queue, r)
	w.mu.Unlock()
	if w.enqueued != nil {
		w.enqueued <- struct{}{}
	}
	return r.wait
}

// wait is the wait of a queued write (enqueueTagged): the first call
// waits for it, or leads; every call returns its outcome. (Its state is
// the request's: one allocation per write, where a closure and what it
// shared were three.)
func (r *writeReq) wait() error {
	r.waitOnce.Do(func() {
		w := r.w
		w.mu.Lock()
		r.waiting = true
		// Not leading and not taken: nobody got to it yet.
		lead := !w.leading && r.state.Load() == reqQueued
		w.leading = w.leading || lead
		w.mu.Unlock()
		r.waitErr = w.finish(context.Background(), r, lead)
	})
	if r.panic != nil { // the first wait panicked with it
		panic(r.panic)
	}
	return r.waitErr
}

// finish waits for r (or runs it, when its caller leads) and returns its
// outcome.
func (w *writer) finish(ctx context.Context, r *writeReq, lead bool) error {
	if !lead {
		select {
		case <-r.wake:
		case <-ctx.Done():
			if r.state.CompareAndSwap(reqQueued, reqAbandoned) {
				return ctx.Err()
			}
			<-r.wake
		}
	}
	if !r.done {
		w.lead(r)
	}
	if r.panic != nil {
		panic(r.panic)
	}
	return r.err
}

// lead runs batches until own is done, then passes the lead on.
func (w *writer) lead(own *writeReq) {
	for {
		// The window of the group commit: let the goroutines that are
		// ready to run reach their writes first (agents finishing a step
		// on the other core get there while this one commits; on this
		// core they would not). With nothing else to run it returns at
		// once. It made batches of ~1.4 writes ~3.8 on the fan-out.
		runtime.Gosched()
		w.mu.Lock()
		batch, whole := w.queue, true
		if len(batch) > maxBatch {
			batch, whole = batch[:maxBatch:maxBatch], false
			w.queue = w.queue[maxBatch:]
		} else {
			w.queue, w.spare = w.spare[:0], nil
		}
		w.mu.Unlock()
		w.withConn(func() { w.run(batch, own) })
		w.mu.Lock()
		if whole { // its array becomes the next queue's
			clear(batch)
			w.spare = batch[:0]
		}
		if own.done {
			w.passLeadLocked()
			w.mu.Unlock()
			return
		}
		w.mu.Unlock()
	}
}

// passLeadLocked hands the lead to the oldest caller waiting for a
// queued write, or ends it when there is none. A write queued by enqueue
// whose caller does not wait yet stays queued: that caller leads when it
// waits, unless a later caller got to it first.
func (w *writer) passLeadLocked() {
	for len(w.queue) > 0 && w.queue[0].state.Load() == reqAbandoned {
		w.queue = w.queue[1:]
	}
	for _, next := range w.queue {
		if next.waiting && next.state.CompareAndSwap(reqQueued, reqPromoted) {
			next.wake <- struct{}{}
			return
		}
	}
	w.leading = false
	if w.closed && w.idle != nil {
		close(w.idle)
		w.idle = nil
	}
}

// close refuses new writes, waits for the lead to end, runs the writes
// still queued, and releases the connection. Safe to call once
// (Store.Close's sync.Once guards it).
func (w *writer) close() {
	w.mu.Lock()
	w.closed = true
	for {
		if w.leading {
			idle := make(chan struct{})
			w.idle = idle
			w.mu.Unlock()
			<-idle
			w.mu.Lock()
			continue
		}
		if len(w.queue) == 0 {
			break
		}
		// Queued writes nobody waits for yet: run them (their callers
		// find them done), with the lead so nobody else runs at once.
		batch := w.queue
		w.queue, w.leading = nil, true
		w.mu.Unlock()
		for len(batch) > 0 {
			n := min(len(batch), maxBatch)
			w.withConn(func() { w.run(batch[:n], nil) })
			batch = batch[n:]
		}
		w.mu.Lock()
		w.leading = false
	}
	w.mu.Unlock()
	w.dropConn()
	w.host.close()
}

// Statements reports how many statements the store's writer ran (BEGIN
// and COMMIT included), for benchmarks and tests to count what a write
// costs.
func (s *Store) Statements() int64 { return s.w.ran.Load() }

// WriteStats reports how many write transactions the store began and how
// many writes (calls of its write methods) ran in them, so benchmarks can
// show how many writes group commit put in one transaction.
func (s *Store) WriteStats() (transactions, writes int64) {
	return s.w.txs.Load(), s.w.writes.Load()
}
