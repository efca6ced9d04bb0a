package sqlite

import (
	"context"
	"database/sql"
	"sync"
)

// stmts caches the prepared statements of the writer connection. Parsing
// SQL is a third of a write's cost in SQLite, and the store runs the same
// few dozen statements over and over.
//
// A statement cannot be prepared on the writer while a transaction holds
// its one connection, so a query seen for the first time runs unprepared
// and is prepared after its transaction ends (prepareWanted).
type stmts struct {
	mu     sync.Mutex // guards cache, wanted
	cache  map[string]*sql.Stmt
	wanted map[string]bool
}

func (c *stmts) lookup(query string) (*sql.Stmt, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st, ok := c.cache[query]
	if !ok {
		if c.wanted == nil {
			c.wanted = map[string]bool{}
		}
		c.wanted[query] = true
	}
	return st, ok
}

// prepareWanted prepares the queries run unprepared so far. It must not be
// called while a transaction of this goroutine holds the writer.
func (c *stmts) prepareWanted(ctx context.Context, db *sql.DB) {
	c.mu.Lock()
	wanted := c.wanted
	c.wanted = nil
	c.mu.Unlock()
	for q := range wanted {
		st, err := db.PrepareContext(ctx, q)
		if err != nil {
			continue // the query keeps running unprepared
		}
		c.mu.Lock()
		if c.cache == nil {
			c.cache = map[string]*sql.Stmt{}
		}
		if _, dup := c.cache[q]; dup {
			_ = st.Close()
		} else {
			c.cache[q] = st
		}
		c.mu.Unlock()
	}
}

func (c *stmts) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range c.cache {
		_ = st.Close()
	}
	c.cache = nil
}

// wtx is a write transaction whose statements come from the cache. On the
// one writer connection, Tx.StmtContext reuses the statement prepared
// there instead of parsing the SQL again.
type wtx struct {
	*sql.Tx
	s *Store
}

// ExecContext runs query in the transaction, prepared when it can be.
func (t *wtx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st, ok := t.s.stmts.lookup(query); ok {
		return t.Tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	return t.Tx.ExecContext(ctx, query, args...)
}

// QueryContext runs query in the transaction, prepared when it can be.
func (t *wtx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st, ok := t.s.stmts.lookup(query); ok {
		return t.Tx.StmtContext(ctx, st).QueryContext(ctx, args...)
	}
	return t.Tx.QueryContext(ctx, query, args...)
}

// QueryRowContext runs query in the transaction, prepared when it can be.
func (t *wtx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st, ok := t.s.stmts.lookup(query); ok {
		return t.Tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
	}
	return t.Tx.QueryRowContext(ctx, query, args...)
}
