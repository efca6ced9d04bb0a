// Group commit: the store's one-round-trip writes (inBatch) queue for
// the store's committer, which sends the writes that queued while its
// last transaction ran as one pipelined batch, one implicit transaction,
// so that they share one commit and one WAL flush.

package postgres

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// errClosed is what a write gets once Close has begun.
var errClosed = errors.New("postgres store is closed")

// maxGroup bounds how many queued writes share one transaction.
const maxGroup = 64

// endOfWrite follows each write's statements in a shared batch. It fails
// (the batch's first error, which pgx repeats for every later result)
// exactly when a statement before it failed, so the first failing one
// names the write whose statement failed.
const endOfWrite = `SELECT 1`

// Request states: queued until the committer takes it or its caller
// gives up waiting (its context ended first).
const (
	reqQueued int32 = iota
	reqTaken
	reqAbandoned
)

// writeReq is one inBatch call waiting for the committer.
type writeReq struct {
	ctx   context.Context // for a write run alone
	build func(*pgx.Batch)
	read  func(pgx.BatchResults) error
	last  bool // sent after the other writes of its batch (a lease's release)
	state atomic.Int32
	done  chan struct{} // closed once err is final
	err   error
}

// committer sends the store's writes with group commit: the writes that
// queued while a transaction ran are sent together, on the committer's
// goroutine, as one batch that PostgreSQL runs as one implicit
// transaction (see inBatch), so they share its commit and WAL flush. A
// write that finds nothing queued and nothing being sent is sent by its
// caller, alone, exactly as before group commit.
//
// One write's failure fails no other write: when a statement of a shared
// batch fails, the whole transaction rolls back, the write it belongs to
// gets its error (a refusal such as a taken id or a complete run; these
// are errors of the statement's own data), and the others are sent again
// without it. A failure that is not one write's (a deadlock, a
// serialization failure, a cancelled statement) runs each write again in
// a transaction of its own, with its own retries. A failure that leaves
// it unknown whether the commit happened (the connection broke after the
// batch was sent) is every write's error: running them again could write
// them twice. Every caller is released once the transaction holding its
// write committed, or with its own error.
//
// Invariants: one transaction is sent at a time (busy), by loop or by a
// caller that found nothing queued and nothing being sent (do), so the
// writes commit in the order they were queued (a write queued after
// another commits with it or later; inside one transaction a lease's
// release runs after the other writes, lastAtEnd); a request is
// released exactly once.
type committer struct {
	s *Store

	mu     sync.Mutex // guards queue, busy, held and closed
	queue  []*writeReq
	busy   bool // a transaction is being sent, by loop or by a caller (do)
	held   bool // tests: nothing is sent, so that writes queue (hold)
	closed bool
	wake   chan struct{} // one token: one of the above changed
	ended  chan struct{} // closed when loop returns

	// Counters, read by tests and benchmarks (Store.WriteStats).
	txs    atomic.Int64 // transactions sent (a write run again counts again)
	writes atomic.Int64 // writes sent in them
}

func newCommitter(s *Store) *committer {
	c := &committer{s: s, wake: make(chan struct{}, 1), ended: make(chan struct{})}
	go c.loop()
	return c
}

// do runs a write and returns once the transaction holding it committed,
// or its error. When nothing is queued or being sent, the caller sends
// its write itself, alone, with no hand-off to the committer's goroutine;
// otherwise the write queues for the next batch. A write whose ctx ends
// while it is still queued is not run (ctx.Err()); once taken it runs to
// its end.
func (c *committer) do(ctx context.Context, build func(*pgx.Batch), read func(pgx.BatchResults) error) error {
	return c.send(ctx, &writeReq{ctx: ctx, build: build, read: read, done: make(chan struct{})})
}

// send is do for a request made by the caller.
func (c *committer) send(ctx context.Context, r *writeReq) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	if !c.closed && !c.busy && !c.held && len(c.queue) == 0 {
		c.busy = true
		c.mu.Unlock()
		defer c.idle()
		err := c.s.runBatch(ctx, r.build, r.read, &c.txs)
		c.writes.Add(1)
		return dbError(err)
	}
	c.mu.Unlock()
	if err := c.queued(r); err != nil {
		return err
	}
	select {
	case <-r.done:
	case <-ctx.Done():
		if r.state.CompareAndSwap(reqQueued, reqAbandoned) {
			return ctx.Err()
		}
		<-r.done
	}
	return r.err
}

// idle ends a caller's own send (do) and lets loop take what queued
// meanwhile.
func (c *committer) idle() {
	c.mu.Lock()
	c.busy = false
	c.mu.Unlock()
	c.signal()
}

// signal wakes loop to look at the queue again.
func (c *committer) signal() {
	select {
	case c.wake <- struct{}{}:
	default: // a wake-up is already pending
	}
}

// hold stops (on) or resumes sending, for tests: writes queue meanwhile
// and are then taken into one batch.
func (c *committer) hold(on bool) {
	c.mu.Lock()
	c.held = on
	c.mu.Unlock()
	c.signal()
}

// enqueue queues a write and returns its request at once; the write runs
// whether or not anyone waits for it (CommitAsync, QueueStep).
func (c *committer) enqueue(ctx context.Context, build func(*pgx.Batch), read func(pgx.BatchResults) error) (*writeReq, error) {
	r := &writeReq{ctx: ctx, build: build, read: read, done: make(chan struct{})}
	if err := c.queued(r); err != nil {
		return nil, err
	}
	return r, nil
}

// queued appends r to the queue; errClosed after close.
func (c *committer) queued(r *writeReq) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return errClosed
	}
	c.queue = append(c.queue, r)
	c.mu.Unlock()
	c.signal()
	return nil
}

// close refuses new writes, lets loop run what is queued, and waits for
// it to return. Safe to call once (Store.Close's sync.Once guards it).
func (c *committer) close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.signal()
	<-c.ended
}

// loop takes the queued writes, at most maxGroup at a time, and runs
// them, until the committer is closed, nothing is queued and no caller
// sends its own write.
func (c *committer) loop() {
	defer close(c.ended)
	live := make([]*writeReq, 0, maxGroup)
	for {
		c.mu.Lock()
		for len(c.queue) == 0 || c.busy || c.held {
			if c.closed && len(c.queue) == 0 && !c.busy {
				c.mu.Unlock()
				return
			}
			c.mu.Unlock()
			<-c.wake
			c.mu.Lock()
		}
		c.busy = true
		live = live[:0]
		n := 0
		for n < len(c.queue) && len(live) < maxGroup {
			r := c.queue[n]
			n++
			if r.state.CompareAndSwap(reqQueued, reqTaken) {
				live = append(live, r)
			}
		}
		clear(c.queue[:n])
		c.queue = c.queue[n:]
		if len(c.queue) == 0 {
			c.queue = nil // let the array go; the next append makes a new one
		}
		c.mu.Unlock()
		c.run(live)
		c.mu.Lock()
		c.busy = false
		c.mu.Unlock()
		for _, r := range live {
			r.err = dbError(r.err)
			close(r.done)
		}
		clear(live)
	}
}

// run runs live, together when there are several, and sets each one's
// err.
func (c *committer) run(live []*writeReq) {
	live = lastAtEnd(live)
	for len(live) > 1 {
		culprit, err := c.together(live)
		var pe *pgconn.PgError
		switch {
		case err == nil:
			return
		case !errors.As(err, &pe) && !pgconn.SafeToRetry(err):
			// The commit may or may not have happened.
			for _, r := range live {
				r.err = err
			}
			return
		case culprit >= 0 && ownFailure(pe):
			// Rolled back because of one write: that write fails, the
			// others go again without it.
			live = append(live[:culprit:culprit], live[culprit+1:]...)
		default:
			// Rolled back, or never sent, for a reason of no one write.
			for _, r := range live {
				c.alone(r)
			}
			return
		}
	}
	if len(live) == 1 {
		c.alone(live[0])
	}
}

// lastAtEnd returns live with the writes marked last after the others,
// each part in its order. They commit in the same transaction either way;
// a batch that takes a lease row only after its other rows never holds
// one while it waits for a node row, as a claim (which locks its node
// first, then its lease) might (see Store.ReleaseLease).
func lastAtEnd(live []*writeReq) []*writeReq {
	if !slices.ContainsFunc(live, func(r *writeReq) bool { return r.last }) {
		return live
	}
	out := make([]*writeReq, 0, len(live))
	for _, last := range []bool{false, true} {
		for _, r := range live {
			if r.last == last {
				out = append(out, r)
			}
		}
	}
	return out
}

// ownFailure reports an error of a statement's own data: invalid or
// refused values (class 22), a violated constraint (23), a raised
// exception (P0: the append-only trigger). Running the statement again
// would fail the same way; running the other writes again will not.
func ownFailure(pe *pgconn.PgError) bool {
	switch pe.Code[:2] {
	case "22", "23", "P0":
		return true
	}
	return false
}

// alone runs r in a transaction of its own (inBatch's transaction before
// group commit), retried on a deadlock or serialization failure.
func (c *committer) alone(r *writeReq) {
	r.err = c.s.runBatch(r.ctx, r.build, r.read, &c.txs)
	c.writes.Add(1)
}

// together sends live as one batch, one implicit transaction, each
// write's statements followed by endOfWrite, and reads every write's
// results with its own read. It returns nil when the transaction
// committed (each write's err is then what its read returned); otherwise
// the batch's error and the index of the write whose statement failed
// (-1 when none did: the error came with the commit or the connection),
// whose err is what its read made of that failure.
func (c *committer) together(live []*writeReq) (culprit int, err error) {
	c.txs.Add(1)
	c.writes.Add(int64(len(live)))
	var batch pgx.Batch
	counts := make([]int, len(live))
	for i, r := range live {
		n := batch.Len()
		r.build(&batch)
		counts[i] = batch.Len() - n
		batch.Queue(endOfWrite)
	}
	br := c.s.pool.SendBatch(context.Background(), &batch)
	culprit = -1
	for i, r := range live {
		cr := &countedResults{br: br}
		r.err = r.read(cr)
		for ; cr.n < counts[i]; cr.n++ { // what read left unread
			if _, err := br.Exec(); err != nil && r.err == nil {
				r.err = err
			}
		}
		if _, err := br.Exec(); err != nil && culprit < 0 {
			culprit = i
			if r.err == nil {
				r.err = err
			}
		}
	}
	if err := br.Close(); err != nil {
		return culprit, err
	}
	return -1, nil
}

// countedResults is one write's view of a shared batch's results: it
// counts the results its read takes, so that the committer reads the
// rest. Close is the committer's; the batch begins no transaction (Tx).
type countedResults struct {
	br pgx.BatchResults
	n  int
}

func (c *countedResults) Exec() (pgconn.CommandTag, error) { c.n++; return c.br.Exec() }
func (c *countedResults) Query() (pgx.Rows, error)         { c.n++; return c.br.Query() }
func (c *countedResults) QueryRow() pgx.Row                { c.n++; return c.br.QueryRow() }
func (c *countedResults) Close() error                     { return nil }
func (c *countedResults) Tx() pgx.Tx                       { return nil }

// WriteStats reports how many write transactions the store sent and how
// many writes (calls of its write methods) ran in them, so benchmarks can
// show how many writes group commit put in one transaction.
func (s *Store) WriteStats() (transactions, writes int64) {
	return s.group.txs.Load(), s.group.writes.Load()
}
