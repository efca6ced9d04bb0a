package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/arbor-run/arbor/internal/store"
)

// nodeFields are the node columns an upsert replaces, in the order
// nodeVals.field numbers them; run_id, id and created_at precede them and are kept
// by an update. updated_at follows them and strictly increases.
var nodeFields = []string{
	"parent_id", "kind", "spawn", "goal", "prompt", "blocked_by", "returns",
	"context_query", "question", "options", "default_answer", "state", "result",
	"error", "draft", "has_draft", "context", "session_id", "attempts",
	"synthesized", "notice", "call_id", "started_at", "ended_at", "budget_usd", "max_tokens",
	"model", "runner",
}

var (
	nodeColumns = "run_id, id, created_at, " + strings.Join(nodeFields, ", ") + ", updated_at"
	upsertNode  = func() string {
		set := make([]string, 0, len(nodeFields)+1)
		for _, f := range nodeFields {
			set = append(set, f+" = excluded."+f)
		}
		set = append(set, "updated_at = CASE WHEN nodes.updated_at < excluded.updated_at"+
			" THEN excluded.updated_at ELSE nodes.updated_at + 1 END")
		return "INSERT INTO nodes (" + nodeColumns + ") VALUES (" +
			strings.TrimSuffix(strings.Repeat("?, ", len(nodeFields)+4), ", ") + ")" +
			" ON CONFLICT (run_id, id) DO UPDATE SET " + strings.Join(set, ", ")
	}()
)

// Commit writes one engine transition in one BEGIN IMMEDIATE transaction:
// when run is non-nil it replaces the run row (all but ID and CreatedAt),
// then it upserts every node (all but RunID, ID and CreatedAt on update).
// Every record is validated before the transaction starts; a malformed one
// is ErrInvalid, a run or a node's run that does not exist is ErrNotFound,
// and on any error nothing is written. The UpdatedAt of the run and of every
// node becomes now (strictly later than the stored value); a new node's
// zero CreatedAt becomes now. The given UpdatedAt values are ignored and
// run is not modified.
func (s *Store) Commit(ctx context.Context, run *store.Run, nodes ...store.Node) error {
	what, fn, err := s.commitTx(ctx, run, nodes)
	if err == nil && fn != nil {
		err = s.w.doTagged(ctx, fn, writeTag{nodesOnly: true})
	}
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// CommitAsync queues what Commit writes and returns at once; wait returns
// what Commit would have returned, once the transaction holding the write
// committed. The write keeps its place among this store's writes: every
// write queued after it (by any goroutine) commits with it or later. So a
// caller may queue a transition while it holds a lock that orders its
// transitions, and wait for it after releasing the lock. Validation errors
// come from wait; ctx is not watched (a queued transition is never
// dropped).
func (s *Store) CommitAsync(ctx context.Context, run *store.Run, nodes ...store.Node) (wait func() error) {
	if run != nil {
		r := *run
		run = &r
	}
	// nodes need no copy: commitTx encodes them before it returns.
	what, fn, err := s.commitTx(context.WithoutCancel(ctx), run, nodes)
	if err != nil {
		return func() error { return fmt.Errorf("%s: %w", what, err) }
	}
	if fn == nil {
		return func() error { return nil }
	}
	done := s.w.enqueueTagged(fn, writeTag{nodesOnly: true})
	return func() error {
		if err := done(); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		return nil
	}
}

// commitTx validates a Commit and returns what it is (for errors) and its
// write function; nil when there is nothing to write.
func (s *Store) commitTx(ctx context.Context, run *store.Run, nodes []store.Node) (commitName, func(*wtx) error, error) {
	var what commitName
	switch {
	case run != nil:
		what = commitName(run.ID)
	case len(nodes) > 0:
		what = commitName(nodes[0].RunID)
	default:
		return what, nil, nil
	}
	if run != nil {
		if err := run.Validate(); err != nil {
			return what, nil, err
		}
	}
	now := time.Now()
	vals := make([]*nodeVals, len(nodes))
	for i, n := range nodes {
		v, err := newNodeVals(n, now)
		if err != nil {
			return what, nil, fmt.Errorf("node %d (#%d of the commit): %w", n.ID, i+1, err)
		}
		vals[i] = v
	}
	return what, func(tx *wtx) error {
		known := map[string]bool{}
		if run != nil {
			if err := updateRun(ctx, tx, run, now.UnixNano()); err != nil {
				return err
			}
			known[run.ID] = true
		}
		for _, v := range vals { // not nodes: CommitAsync's caller may reuse them
			k := v.key()
			if ok, err := updateChanged(ctx, tx, v); err != nil {
				return fmt.Errorf("node %d: %w", k.id, err)
			} else if ok {
				continue // its row exists, so its run does
			}
			if !known[k.run] {
				if err := requireRun(ctx, tx, k.run); err != nil {
					return fmt.Errorf("node %d: %w", k.id, err)
				}
				known[k.run] = true
			}
			if err := upsertWhole(ctx, tx, v); err != nil {
				return fmt.Errorf("node %d: %w", k.id, err)
			}
		}
		return nil
	}, nil
}

// commitName names a commit in its errors: "commit run ID", made only
// for an error (every transition's commit was a concatenation).
type commitName string

func (c commitName) String() string {
	if c == "" {
		return "commit"
	}
	return "commit run " + string(c)
}

// nodeRows remembers, for the nodes this writer wrote last, the values it
// wrote and the updated_at the row got, so the next write of a node can
// update only the columns that changed: a transition changes a few of a
// node's 28 columns, and binding and re-encoding all of them was most of
// its write. The update is guarded by updated_at, which every write of a
// node strictly increases, so a row that anything else wrote since (another
// process on the file) does not match and gets the whole upsert.
type nodeRows struct {
	rows    known[nodeKey, nodeRow]
	updates map[uint32]string // changed-column mask → UPDATE statement
	inserts map[uint64]string // literal-column mask → insert statement (insertStatement)
}

type nodeKey struct {
	run string
	id  int64
}

type nodeRow struct {
	vals    *nodeVals // the values written
	updated int64     // the row's updated_at after that write
}

// maxNodeRows bounds nodeRows (a node it dropped gets a whole upsert).
// Only nodes that have not ended are kept (remember), so the bound is on
// the nodes live at once: a fan-out of 10,000 children has that many
// pending, and a bound below it sent every activation of those the bound
// dropped through the whole upsert and a read back. A row kept is its
// nodeVals, about 0.5 KiB, whose strings are the engine's own.
const maxNodeRows = 1 << 15

// remember records, once the write of the node of args is committed, what
// it wrote and the updated_at its row got. A node that ended is
// forgotten: the engine never changes it again, and a write of it anyway
// (a repair) gets the whole upsert.
func (c *nodeRows) remember(tx *wtx, v *nodeVals, updated int64) {
	k := v.key()
	if v.n.State.Terminal() {
		tx.afterCommit(func() { c.rows.forget(k) })
		return
	}
	tx.afterCommit(func() { c.rows.put(k, nodeRow{vals: v, updated: updated}) })
}

// updateChanged writes the node of v as an UPDATE of the columns that
// changed since this writer last wrote it, and reports whether it did:
// false when the writer does not know the row or the row changed since,
// and then nothing was written.
func updateChanged(ctx context.Context, tx *wtx, v *nodeVals) (bool, error) {
	c := &tx.w.nodes
	k := v.key()
	prev, ok := c.rows.get(k)
	if !ok {
		return false, nil
	}
	var mask uint32
	vals := make([]any, 0, 8)
	for i := range nodeFields {
		if !v.same(prev.vals, i) {
			mask |= 1 << i
			vals = append(vals, v.field(i))
		}
	}
	q, ok := c.updates[mask]
	if !ok {
		var b strings.Builder
		b.WriteString("UPDATE nodes SET ")
		for i, f := range nodeFields {
			if mask&(1<<i) != 0 {
				b.WriteString(f + " = ?, ")
			}
		}
		b.WriteString("updated_at = CASE WHEN updated_at < ? THEN ? ELSE updated_at + 1 END" +
			" WHERE run_id = ? AND id = ? AND updated_at = ?")
		q = b.String()
		if c.updates == nil {
			c.updates = map[uint32]string{}
		}
		c.updates[mask] = q
	}
	now := v.updated
	res, err := tx.ExecContext(ctx, q, append(vals, now, now, k.run, k.id, prev.updated)...)
	if err != nil {
		return false, err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return false, err
	}
	updated := now
	if prev.updated >= now {
		updated = prev.updated + 1
	}
	c.remember(tx, v, updated)
	return true, nil
}

// upsertWhole writes every column of the node of v and remembers the row
// for updateChanged. A new node (every spawn) is one insert; a row that
// exists already is replaced and its updated_at read back.
func upsertWhole(ctx context.Context, tx *wtx, v *nodeVals) error {
	k, c := v.key(), &tx.w.nodes
	args := v.args()
	q, vals := c.insertStatement(args)
	res, err := tx.ExecContext(ctx, q, vals...)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 1 {
		c.remember(tx, v, v.updated)
		return nil
	}
	if _, err := tx.ExecContext(ctx, upsertNode, args...); err != nil {
		return err
	}
	var updated int64
	if err := tx.QueryRowContext(ctx, `SELECT updated_at FROM nodes WHERE run_id = ? AND id = ?`, k.run, k.id).Scan(&updated); err != nil {
		return err
	}
	c.remember(tx, v, updated)
	return nil
}

// insertStatement returns the statement that inserts the node of args
// (nodeVals.args) when its row does not exist yet, and does nothing
// when it does (its row's updated_at is then the one bound), with the
// values it binds: the empty strings and NULLs of args are written into
// the statement as literals. A new node has a dozen empty columns, and
// the driver copies every string it binds into memory of its own (an
// allocation, and an unbinding after the statement ran), an empty one
// too.
func (c *nodeRows) insertStatement(args []any) (string, []any) {
	var mask uint64
	vals := make([]any, 0, len(args))
	for i, v := range args {
		if s, ok := v.(string); i < 64 && ((ok && s == "") || v == nil) {
			mask |= 1 << i
			continue
		}
		vals = append(vals, v)
	}
	q, ok := c.inserts[mask]
	if !ok {
		var b strings.Builder
		b.WriteString("INSERT INTO nodes (" + nodeColumns + ") VALUES (")
		for i, v := range args {
			if i > 0 {
				b.WriteString(", ")
			}
			switch {
			case i >= 64 || mask&(1<<i) == 0:
				b.WriteString("?")
			case v == nil:
				b.WriteString("NULL")
			default:
				b.WriteString("''")
			}
		}
		b.WriteString(") ON CONFLICT (run_id, id) DO NOTHING")
		q = b.String()
		if c.inserts == nil {
			c.inserts = map[uint64]string{}
		}
		c.inserts[mask] = q
	}
	return q, vals
}

// encodeIDs is encodeJSON(ids), written without the reflection of
// encoding/json: every node's write encodes its blocked_by.
func encodeIDs(ids []int64) string {
	if ids == nil {
		return "null"
	}
	b := make([]byte, 0, 2+8*len(ids))
	b = append(b, '[')
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, id, 10)
	}
	return string(append(b, ']'))
}

// nullInt is v's value to bind: nil for NULL, else its int64.
func nullInt(v sql.NullInt64) any {
	if !v.Valid {
		return nil
	}
	return v.Int64
}

// Nodes returns the run's nodes ordered by id; ErrNotFound for an unknown
// run.
func (s *Store) Nodes(ctx context.Context, runID string) ([]store.Node, error) {
	rows, err := s.read.QueryContext(ctx,
		`SELECT `+nodeColumns+` FROM nodes WHERE run_id = ? ORDER BY id`, runID)
	if err != nil {
		return nil, fmt.Errorf("load nodes of run %s: %w", runID, err)
	}
	defer rows.Close()
	out := []store.Node{}
	for rows.Next() {
		n, err := scanNode(rows)
		if err != nil {
			return nil, fmt.Errorf("load nodes of run %s: %w", runID, err)
		}
		out = append(out, n)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load nodes of run %s: %w", runID, err)
	}
	if len(out) == 0 {
		// Runs are never deleted, so checking after the query is exact.
		if err := requireRun(ctx, s.read, runID); err != nil {
			return nil, fmt.Errorf("load nodes of run %s: %w", runID, err)
		}
	}
	return out, nil
}

// GetNode returns node id of the run, ErrNotFound if there is none.
func (s *Store) GetNode(ctx context.Context, runID string, id int64) (store.Node, error) {
	row := s.read.QueryRowContext(ctx,
		`SELECT `+nodeColumns+` FROM nodes WHERE run_id = ? AND id = ?`, runID, id)
	n, err := scanNode(row)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Node{}, fmt.Errorf("get node %d of run %s: %w", id, runID, store.ErrNotFound)
	}
	if err != nil {
		return store.Node{}, fmt.Errorf("get node %d of run %s: %w", id, runID, err)
	}
	return n, nil
}

func scanNode(sc scanner) (store.Node, error) {
	var (
		n                  store.Node
		blockedBy, options []byte
		hasDraft           int64
		created, updated   int64
		started, ended     sql.NullInt64
	)
	err := sc.Scan(&n.RunID, &n.ID, &created,
		&n.ParentID, &n.Kind, &n.Spawn, &n.Goal, &n.Prompt, &blockedBy, &n.Returns,
		&n.ContextQuery, &n.Question, &options, &n.Default, &n.State, &n.Result,
		&n.Error, &n.Draft, &hasDraft, &n.Context, &n.SessionID, &n.Attempts,
		&n.Synthesized, &n.Notice, &n.CallID, &started, &ended, &n.BudgetUSD, &n.MaxTokens,
		&n.Model, &n.Runner,
		&updated)
	if err != nil {
		return store.Node{}, err
	}
	if err := json.Unmarshal(blockedBy, &n.BlockedBy); err != nil {
		return store.Node{}, fmt.Errorf("decode blocked_by of node %d: %w", n.ID, err)
	}
	if err := json.Unmarshal(options, &n.Options); err != nil {
		return store.Node{}, fmt.Errorf("decode options of node %d: %w", n.ID, err)
	}
	n.HasDraft = hasDraft != 0
	n.CreatedAt = fromNanos(created)
	n.UpdatedAt = fromNanos(updated)
	n.StartedAt = nullableTime(started)
	n.EndedAt = nullableTime(ended)
	return n, nil
}

// nullableNanos is nanos for an optional time: nil stays NULL.
// A non-nil zero time is outside the storable range and so ErrInvalid.
func nullableNanos(t *time.Time) (sql.NullInt64, error) {
	if t == nil {
		return sql.NullInt64{}, nil
	}
	n, err := nanos(*t, time.Time{})
	if err != nil {
		return sql.NullInt64{}, err
	}
	return sql.NullInt64{Int64: n, Valid: true}, nil
}

// nullableTime is the inverse of nullableNanos.
func nullableTime(n sql.NullInt64) *time.Time {
	if !n.Valid {
		return nil
	}
	t := fromNanos(n.Int64)
	return &t
}

// boolInt stores a boolean as INTEGER 0/1, the same way in every dialect.
func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
