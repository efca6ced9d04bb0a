// The writer's transactions: a batch run as one transaction (again with a
// savepoint per write when one of them failed, or each write alone when
// that transaction failed), and wtx, the transaction a write function runs
// in.

package sqlite

import (
	"context"
	"database/sql"
)

// run runs the live requests of batch in one transaction (one alone) and
// releases their callers, except own, whose caller is this goroutine.
func (w *writer) run(batch []*writeReq, own *writeReq) {
	live := w.live[:0]
	for _, r := range batch {
		if r.state.CompareAndSwap(reqQueued, reqTaken) || r.state.CompareAndSwap(reqPromoted, reqTaken) {
			live = append(live, r)
		}
	}
	// The host lock is held from before BEGIN to after COMMIT or ROLLBACK
	// (hostlock.go); write functions' panics are recovered by call.
	locked := len(live) > 0 && w.host.lock()
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
	if locked {
		w.host.unlock()
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

// begin starts a write transaction for live, counting it; when BEGIN
// fails it gives every request the error and reports false.
func (w *writer) begin(live []*writeReq) bool {
	w.txs.Add(1)
	w.writes.Add(int64(len(live)))
	if err := w.exec("BEGIN IMMEDIATE"); err != nil {
		for _, r := range live {
			r.err = err
		}
		return false
	}
	return true
}

// runTogether runs live in one transaction, first with no savepoints:
// writes rarely fail, and a savepoint and its release were two of the
// about fifteen statements of a tree node's writes. When one of them fails
// (an error or a panic), that transaction is rolled back and the batch
// runs again with a savepoint per write (runSavepoints), so that the
// failure rolls back only its own statements and the others commit; a
// write function may thus run more than once, as it may when the
// transaction itself fails. It reports false when the transaction itself
// failed: then nothing of it was committed and the caller runs every
// request again on its own, so one request's failure never fails
// another's write.
func (w *writer) runTogether(live []*writeReq) bool {
	if !w.begin(live) {
		return true
	}
	merged := w.coalesceSteps(live)
	for _, r := range live {
		if r.absorbed {
			continue
		}
		if w.call(r) {
			w.rollback()
			if merged {
				uncoalesce(live)
			}
			for _, r := range live {
				r.err, r.panic, r.onCommit = nil, nil, nil
			}
			return w.runSavepoints(live)
		}
	}
	if merged { // written: should the COMMIT fail, each runs again alone
		uncoalesce(live)
	}
	return w.commitTogether(live)
}

// runSavepoints runs live in one transaction, each request in a savepoint
// that its failure rolls back. It reports false when the transaction
// itself failed (a statement error that ends the transaction, such as
// SQLITE_FULL or an I/O error, or a failed COMMIT), as runTogether does.
func (w *writer) runSavepoints(live []*writeReq) bool {
	if !w.begin(live) {
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
	return w.commitTogether(live)
}

// commitTogether commits the open transaction of live and runs what their
// writes asked to run after it; false when the COMMIT failed (then it was
// rolled back).
func (w *writer) commitTogether(live []*writeReq) bool {
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
