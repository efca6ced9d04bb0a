package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
)

// errClosed is what a write gets once Close has begun.
var errClosed = errors.New("sqlite store is closed")

// maxBatch bounds how many queued writes share one transaction, so one
// commit's wait stays short for the first of them.
const maxBatch = 64

// maxStmts bounds the statement cache; the store runs a fixed set of a few
// dozen write statements, so the bound is only a guard.
const maxStmts = 256

// writer runs the store's writes on its one write connection, with group
// commit: the writes that queued while a transaction was running share the
// next transaction, each in its own SAVEPOINT, so one caller's failure
// rolls back only its own statements. Every caller is released once the
// transaction holding its write has committed (or with its own error).
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
	commits int                  // transactions committed, for ckpt
	nodes   nodeRows             // the node rows this writer last committed (nodes.go)
	seqs    known[string, int64] // sessions' last_seq as this writer last committed it

	// ckpt, when set (before the first write), is asked for a background
	// checkpoint every checkpointEvery commits.
	ckpt *checkpointer

	// Counters, read by tests and benchmarks (Store.WriteStats).
	txs     atomic.Int64 // transactions begun
	writes  atomic.Int64 // writes run in them (a write run again counts again)
	batches atomic.Int64 // batches of two or more writes

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
	fn    func(*wtx) error
	state atomic.Int32
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
	if err := ctx.Err(); err != nil {
		return err
	}
	r := &writeReq{fn: fn, wake: make(chan struct{}, 1), waiting: true}
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
// with every write queued after them.
func (w *writer) enqueue(fn func(*wtx) error) (wait func() error) {
	r := &writeReq{fn: fn, wake: make(chan struct{}, 1)}
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
	return func() error {
		w.mu.Lock()
		r.waiting = true
		// Not leading and not taken: nobody got to it yet.
		lead := !w.leading && r.state.Load() == reqQueued
		w.leading = w.leading || lead
		w.mu.Unlock()
		return w.finish(context.Background(), r, lead)
	}
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

// run runs the live requests of batch in one transaction (one alone) and
// releases their callers, except own, whose caller is this goroutine.
func (w *writer) run(batch []*writeReq, own *writeReq) {
	live := w.live[:0]
	for _, r := range batch {
		if r.state.CompareAndSwap(reqQueued, reqTaken) || r.state.CompareAndSwap(reqPromoted, reqTaken) {
			live = append(live, r)
		}
	}
	switch {
	case len(live) == 1:
		w.runAlone(live[0])
	case len(live) > 1:
		if !w.runTogether(live) {
			for _, r := range live {
				r.err, r.panic = nil, nil
				w.runAlone(r)
			}
		}
		w.batches.Add(1)
	}
	for _, r := range live {
		r.done = true
		if r != own {
			r.wake <- struct{}{}
		}
	}
	clear(live)
	w.live = live[:0]
}

// runAlone runs r in a transaction of its own.
func (w *writer) runAlone(r *writeReq) {
	w.txs.Add(1)
	w.writes.Add(1)
	if err := w.exec("BEGIN IMMEDIATE"); err != nil {
		r.err = err
		return
	}
	if w.call(r) {
		w.rollback()
		return
	}
	if err := w.exec("COMMIT"); err != nil {
		w.rollback()
		r.err = err
		r.onCommit = nil
		return
	}
	w.committed()
	r.runOnCommit()
}

// runTogether runs live in one transaction, each request in a savepoint
// that its failure rolls back. It reports false when the transaction
// itself failed (a statement error that ends the transaction, such as
// SQLITE_FULL or an I/O error, or a failed COMMIT): then nothing of it
// was committed and the caller runs every request again on its own, so
// one request's failure never fails another's write.
func (w *writer) runTogether(live []*writeReq) bool {
	w.txs.Add(1)
	w.writes.Add(int64(len(live)))
	if err := w.exec("BEGIN IMMEDIATE"); err != nil {
		for _, r := range live {
			r.err = err
		}
		return true
	}
	for _, r := range live {
		if err := w.exec("SAVEPOINT write"); err != nil {
			w.rollback()
			return false
		}
		if w.call(r) {
			r.onCommit = nil
			if err := w.exec("ROLLBACK TO write"); err != nil {
				w.rollback()
				return false
			}
		}
		if err := w.exec("RELEASE write"); err != nil {
			w.rollback()
			return false
		}
	}
	if err := w.exec("COMMIT"); err != nil {
		w.rollback()
		return false
	}
	w.committed()
	for _, r := range live {
		r.runOnCommit()
	}
	return true
}

// runOnCommit runs what r's write asked to run once it was committed.
func (r *writeReq) runOnCommit() {
	for _, fn := range r.onCommit {
		fn()
	}
	r.onCommit = nil
}

// committed counts a committed transaction and asks for a background
// checkpoint every checkpointEvery of them; when the checkpointer has
// handed over, it checkpoints the last frames itself, so that the next
// transaction restarts the WAL (checkpoint.go).
func (w *writer) committed() {
	w.commits++
	if w.ckpt == nil {
		return
	}
	if w.ckpt.due.Load() {
		if frames, err := walCheckpoint(w.queryRow(walCheckpointSQL, nil)); err == nil && frames > 0 {
			w.ckpt.due.Store(false)
		}
		return
	}
	if w.commits%checkpointEvery == 0 {
		w.ckpt.request()
	}
}

// call runs r's function and reports whether it failed (an error or a
// panic, both kept in r).
func (w *writer) call(r *writeReq) (failed bool) {
	defer func() {
		if p := recover(); p != nil {
			r.panic = p
			r.onCommit = nil
			failed = true
		}
	}()
	r.onCommit = nil
	r.err = r.fn(&wtx{w: w, req: r})
	if r.err != nil {
		r.onCommit = nil
	}
	return r.err != nil
}

// rollback ends the open transaction, if any is still open. Its error
// only says there was none.
func (w *writer) rollback() { _ = w.exec("ROLLBACK") }

// exec runs one of the transaction-control statements.
func (w *writer) exec(query string) error {
	_, err := w.execArgs(query, nil)
	return err
}

// withConn runs f with the write connection's driver connection in dc,
// taking a connection first when the last one was dropped; if none can be
// had, f runs without one and its statements fail with the reason. A
// statement that found the connection gone (bad) has it dropped after f.
func (w *writer) withConn(f func()) {
	if w.conn == nil {
		conn, err := w.db.Conn(context.Background())
		if err != nil {
			w.runWithout(err, f)
			return
		}
		w.conn = conn
	}
	ran := false
	err := w.conn.Raw(func(dc any) error {
		ran, w.dc = true, dc.(driver.Conn) // what Raw hands over
		defer func() { w.dc = nil }()
		f()
		if w.bad {
			w.closeStmts()
			return driver.ErrBadConn // database/sql closes it
		}
		return nil
	})
	if err != nil || w.bad {
		w.bad = false
		w.dropConn()
	}
	if !ran {
		w.runWithout(err, f)
	}
}

// runWithout runs f with no connection: its statements fail with err.
func (w *writer) runWithout(err error, f func()) {
	w.connErr = err
	defer func() { w.connErr = nil }()
	f()
}

// stmt returns query prepared on the driver connection, preparing it the
// first time (SQLite prepares inside an open transaction as well).
func (w *writer) stmt(query string) (driver.Stmt, error) {
	if w.dc == nil { // a statement is only run inside withConn's Raw
		if w.connErr != nil {
			return nil, w.connErr
		}
		return nil, sql.ErrConnDone
	}
	if st, ok := w.stmts[query]; ok {
		return st, nil
	}
	var (
		st  driver.Stmt
		err error
	)
	if pc, ok := w.dc.(driver.ConnPrepareContext); ok {
		st, err = pc.PrepareContext(context.Background(), query)
	} else {
		st, err = w.dc.Prepare(query)
	}
	if err != nil {
		return nil, w.check(err)
	}
	if len(w.stmts) < maxStmts {
		w.stmts[query] = st
	}
	return st, nil
}

// bind converts args as database/sql would and returns them as the
// writer's reused argument list.
func (w *writer) bind(args []any) ([]driver.NamedValue, error) {
	nv := w.args[:0]
	for i, a := range args {
		v, err := driverValue(a)
		if err != nil {
			return nil, fmt.Errorf("argument %d: %w", i+1, err)
		}
		nv = append(nv, driver.NamedValue{Ordinal: i + 1, Value: v})
	}
	w.args = nv
	return nv, nil
}

// unbind drops the references the argument list holds.
func (w *writer) unbind() {
	clear(w.args)
	w.args = w.args[:0]
}

// driverValue is database/sql's conversion of one argument, with the
// types the store binds most taken first.
func driverValue(a any) (driver.Value, error) {
	switch v := a.(type) {
	case nil, string, int64, float64, bool, []byte:
		return v, nil
	case int:
		return int64(v), nil
	}
	return driver.DefaultParameterConverter.ConvertValue(a)
}

// execArgs runs query with args.
func (w *writer) execArgs(query string, args []any) (driver.Result, error) {
	st, err := w.stmt(query)
	if err != nil {
		return nil, err
	}
	nv, err := w.bind(args)
	if err != nil {
		return nil, err
	}
	defer w.unbind()
	var res driver.Result
	if ec, ok := st.(driver.StmtExecContext); ok {
		res, err = ec.ExecContext(context.Background(), nv)
	} else {
		err = fmt.Errorf("sqlite statement %T cannot run with a context", st)
	}
	return res, w.check(err)
}

// queryRow runs query with args and returns its first row.
func (w *writer) queryRow(query string, args []any) *row {
	st, err := w.stmt(query)
	if err != nil {
		return &row{err: err}
	}
	nv, err := w.bind(args)
	if err != nil {
		return &row{err: err}
	}
	defer w.unbind()
	qc, ok := st.(driver.StmtQueryContext)
	if !ok {
		return &row{err: fmt.Errorf("sqlite statement %T cannot run with a context", st)}
	}
	rows, err := qc.QueryContext(context.Background(), nv)
	if err != nil {
		return &row{err: w.check(err)}
	}
	defer rows.Close()
	vals := make([]driver.Value, len(rows.Columns()))
	switch err := rows.Next(vals); {
	case errors.Is(err, io.EOF):
		return &row{err: sql.ErrNoRows}
	case err != nil:
		return &row{err: w.check(err)}
	}
	for i, v := range vals { // the driver may reuse its buffers
		if b, ok := v.([]byte); ok {
			vals[i] = bytes.Clone(b)
		}
	}
	return &row{vals: vals}
}

// check marks the connection to be dropped when err says it is gone, so
// the next batch takes a fresh one.
func (w *writer) check(err error) error {
	if errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone) {
		w.bad = true
	}
	return err
}

// closeStmts closes the prepared statements; called with dc held.
func (w *writer) closeStmts() {
	for q, st := range w.stmts {
		_ = st.Close()
		delete(w.stmts, q)
	}
}

// dropConn closes the statements and releases the connection.
func (w *writer) dropConn() {
	if w.conn == nil {
		return
	}
	if err := w.conn.Raw(func(any) error {
		w.closeStmts()
		return nil
	}); err != nil {
		// The connection cannot be had to close them on: they go with
		// it (the next connection prepares its own).
		clear(w.stmts)
	}
	_ = w.conn.Close()
	w.conn = nil
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
}

// WriteStats reports how many write transactions the store began and how
// many writes (calls of its write methods) ran in them, so benchmarks can
// show how many writes group commit put in one transaction.
func (s *Store) WriteStats() (transactions, writes int64) {
	return s.w.txs.Load(), s.w.writes.Load()
}

// wtx is the write transaction a write function runs in. Its statements
// are prepared once per connection and reused; they run to the end once
// started, whatever the caller's context says (the caller's context is
// checked before the write is run).
type wtx struct {
	w   *writer
	req *writeReq
}

// afterCommit runs fn on the writer once this write is committed, and
// never if it is rolled back; fn may use the writer's own state (nodes).
func (t *wtx) afterCommit(fn func()) { t.req.onCommit = append(t.req.onCommit, fn) }

// ExecContext runs query in the transaction.
func (t *wtx) ExecContext(_ context.Context, query string, args ...any) (sql.Result, error) {
	return t.w.execArgs(query, args)
}

// QueryRowContext runs query in the transaction and returns its first
// row; its errors, sql.ErrNoRows included, come from Scan.
func (t *wtx) QueryRowContext(_ context.Context, query string, args ...any) scanner {
	return t.w.queryRow(query, args)
}

// row is a row of a query in a write transaction, or why there is none.
type row struct {
	vals []driver.Value
	err  error
}

// Scan copies the row's columns into dest, which may point to a string,
// []byte, int, int64, float64 or bool, or be a sql.Scanner.
func (r *row) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	if len(dest) != len(r.vals) {
		return fmt.Errorf("scan: %d destinations for %d columns", len(dest), len(r.vals))
	}
	for i, d := range dest {
		if err := assign(d, r.vals[i]); err != nil {
			return fmt.Errorf("scan column %d: %w", i, err)
		}
	}
	return nil
}

// assign stores the driver value v in dest.
func assign(dest any, v driver.Value) error {
	if sc, ok := dest.(sql.Scanner); ok {
		return sc.Scan(v)
	}
	switch d := dest.(type) {
	case *string:
		switch x := v.(type) {
		case string:
			*d = x
			return nil
		case []byte:
			*d = string(x)
			return nil
		case int64: // as database/sql does
			*d = strconv.FormatInt(x, 10)
			return nil
		}
	case *[]byte:
		switch x := v.(type) {
		case []byte:
			*d = x
			return nil
		case string:
			*d = []byte(x)
			return nil
		case nil:
			*d = nil
			return nil
		}
	case *int64:
		if x, ok := v.(int64); ok {
			*d = x
			return nil
		}
	case *int:
		if x, ok := v.(int64); ok {
			*d = int(x)
			return nil
		}
	case *float64:
		switch x := v.(type) {
		case float64:
			*d = x
			return nil
		case int64:
			*d = float64(x)
			return nil
		}
	case *bool:
		if x, ok := v.(int64); ok {
			*d = x != 0
			return nil
		}
	}
	return fmt.Errorf("cannot store %T in %T", v, dest)
}
