// The writer's connection and statements: the driver connection held
// for a batch, the prepared-statement cache, argument binding, and the
// rows of queries run inside a write.

package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// maxStmts bounds the statement cache; the store runs a fixed set of a few
// dozen write statements, so the bound is only a guard.
const maxStmts = 256

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
// first time (SQLite prepares inside an open transaction as well). Past
// maxStmts a statement is prepared for one use (once): its caller closes
// it, or each run would leave one behind.
func (w *writer) stmt(query string) (st driver.Stmt, once bool, err error) {
	if w.dc == nil { // a statement is only run inside withConn's Raw
		if w.connErr != nil {
			return nil, false, w.connErr
		}
		return nil, false, sql.ErrConnDone
	}
	if st, ok := w.stmts[query]; ok {
		return st, false, nil
	}
	if pc, ok := w.dc.(driver.ConnPrepareContext); ok {
		st, err = pc.PrepareContext(context.Background(), query)
	} else {
		st, err = w.dc.Prepare(query)
	}
	if err != nil {
		return nil, false, w.check(err)
	}
	if len(w.stmts) >= maxStmts {
		return st, true, nil
	}
	w.stmts[query] = st
	return st, false, nil
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
	w.ran.Add(1)
	st, once, err := w.stmt(query)
	if err != nil {
		return nil, err
	}
	if once {
		defer st.Close()
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
	w.ran.Add(1)
	st, once, err := w.stmt(query)
	if err != nil {
		return &row{err: err}
	}
	if once {
		defer st.Close()
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
