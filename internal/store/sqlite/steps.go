package sqlite

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/store"
)

// A step's write: SaveStep and QueueStep validate and encode a
// store.Step (newStepWrite), and the writer runs it as one update (or
// insert) of the session row, the inserts of its messages and the insert
// of its usage row.
//
// The writer merges steps of one session that meet in one transaction
// (coalesceSteps): an agent queues its answer and then its tool results,
// and both mostly commit together. Merged, the session row is written
// once and the messages go in one multi-row insert: a tree node's turn
// takes three statements where it took five. A transaction commits all
// of its writes or none, so what a crash can leave is unchanged.

// updateSessionStep adds a step to its session row: its messages to
// last_seq, its usage to the totals, and its status.
const updateSessionStep = `UPDATE sessions SET
	last_seq = last_seq + ?,
	input_tokens = input_tokens + ?,
	output_tokens = output_tokens + ?,
	cache_read_tokens = cache_read_tokens + ?,
	cache_write_tokens = cache_write_tokens + ?,
	cost_usd = cost_usd + ?,
	cost_known = (cost_known AND ?),
	status = COALESCE(NULLIF(?, ''), status),
	` + touch + `
	WHERE id = ?`

// updateSessionMessages is updateSessionStep for a step without usage (a
// step of tool results): it adds nothing to the totals, so it leaves them
// out and binds five values instead of eleven.
const updateSessionMessages = `UPDATE sessions SET
	last_seq = last_seq + ?,
	status = COALESCE(NULLIF(?, ''), status),
	` + touch + `
	WHERE id = ?`

// stepUpdate and messagesUpdate are the two updates of a step, each
// plain and guarded by the row's last_seq (for a row whose last_seq the
// writer knows).
var (
	stepUpdate     = sessionUpdate{updateSessionStep, updateSessionStep + ` AND last_seq = ?`}
	messagesUpdate = sessionUpdate{updateSessionMessages, updateSessionMessages + ` AND last_seq = ?`}
)

type sessionUpdate struct{ plain, guarded string }

// insertStepSession inserts a session created by a step as the step
// leaves it.
const insertStepSession = `INSERT INTO sessions
	(id, title, model, workspace, status, created_at, updated_at, run_id, node_id,
	 last_seq, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, cost_known)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT (id) DO NOTHING`

// insertMessages[k] inserts k messages in one statement; a step's
// messages go in statements of up to len-1 rows.
var insertMessages = func() [5]string {
	var qs [5]string
	for k := 1; k < len(qs); k++ {
		qs[k] = `INSERT INTO messages (session_id, seq, role, body, created_at) VALUES ` +
			strings.TrimSuffix(strings.Repeat(`(?, ?, ?, ?, ?), `, k), ", ")
	}
	return qs
}()

// updateStepSession adds a step's messages (messages of them) to an
// existing session row (q is stepUpdate or messagesUpdate, args its
// values) and returns the session's last seq after it. When
// the writer knows the row's last_seq the update is guarded by it and the
// new one follows; otherwise, or when the row moved on (another process
// wrote it), it is read back. No RETURNING: SQLite collects a RETURNING
// clause's rows in an ephemeral table, a b-tree opened and freed per
// statement, which costs more than reading the row back.
func updateStepSession(ctx context.Context, tx *wtx, session string, messages int, q sessionUpdate, args []any) (int64, error) {
	if seq, ok := tx.w.seqs.get(session); ok {
		res, err := tx.ExecContext(ctx, q.guarded, append(args, seq)...)
		if err != nil {
			return 0, err
		}
		if rows, err := res.RowsAffected(); err != nil {
			return 0, err
		} else if rows == 1 {
			return seq + int64(messages), nil
		}
	}
	res, err := tx.ExecContext(ctx, q.plain, args...)
	if err != nil {
		return 0, err
	}
	if err := requireRow(res); err != nil {
		return 0, err
	}
	var end int64
	err = tx.QueryRowContext(ctx, `SELECT last_seq FROM sessions WHERE id = ?`, session).Scan(&end)
	return end, err
}

// maxKnownSeqs bounds the sessions whose last_seq the writer remembers.
const maxKnownSeqs = 4096

// stepWrite is one step, validated and encoded: what its write binds.
type stepWrite struct {
	ctx     context.Context
	session string
	create  []any // the session's row (sessionArgs) when the step creates it
	status  string
	usage   *store.UsageRecord // nil for a step without a model call
	usageAt int64
	roles   []llm.Role
	bodies  []string // the messages, encoded
	ts      int64    // when the step was written: its messages' created_at
	// last is the session's last seq after the step, set by its write.
	last int64
	// more are later steps of the session that the writer merged into
	// this one for one transaction (coalesceSteps); this write writes
	// them too, and sets their last.
	more []*stepWrite
}

// newStepWrite validates and encodes st; nil when st writes nothing.
func newStepWrite(ctx context.Context, st store.Step) (*stepWrite, error) {
	st, err := st.Resolved()
	if err != nil {
		return nil, err
	}
	sw := &stepWrite{ctx: ctx, session: st.SessionID, status: string(st.Status), usage: st.Usage}
	if st.Create != nil {
		if sw.create, err = sessionArgs(*st.Create); err != nil {
			return nil, fmt.Errorf("create session: %w", err)
		}
	}
	now := time.Now()
	if st.Usage != nil {
		if sw.usageAt, err = nanos(st.Usage.At, now); err != nil {
			return nil, fmt.Errorf("usage at: %w", err)
		}
	}
	sw.roles = make([]llm.Role, len(st.Messages))
	sw.bodies = make([]string, len(st.Messages))
	for i, m := range st.Messages {
		b, err := encodeJSON(m)
		if err != nil {
			return nil, fmt.Errorf("encode message %d: %w", i, err)
		}
		sw.roles[i], sw.bodies[i] = m.Role, b
	}
	if len(st.Messages) == 0 && st.Usage == nil && st.Status == "" && sw.create == nil {
		return nil, nil
	}
	sw.ts = now.UnixNano()
	return sw, nil
}

// absorbs reports whether later, a step of the same session, can be
// merged into sw (and the steps merged into it already): not when it
// creates the session, and not when it adds usage to a row that this
// transaction updates with usage already, whose cost would then be
// summed in another order (floating point: the same total to the last
// bit only in the order the steps were taken).
func (sw *stepWrite) absorbs(later *stepWrite) bool {
	if later.create != nil {
		return false
	}
	if later.usage == nil || sw.create != nil {
		return true
	}
	for _, s := range sw.steps() {
		if s.usage != nil {
			return false
		}
	}
	return true
}

// steps are sw and the steps merged into it, in order.
func (sw *stepWrite) steps() []*stepWrite {
	if len(sw.more) == 0 {
		return []*stepWrite{sw}
	}
	return append([]*stepWrite{sw}, sw.more...)
}

// write writes sw and the steps merged into it: the session row once
// (inserted as the steps leave it when the first creates it, else
// updated), their messages in multi-row inserts, a usage row per model
// call.
func (sw *stepWrite) write(tx *wtx) error {
	ctx, steps := sw.ctx, sw.steps()
	var (
		messages  int
		n         llm.Usage
		cost      float64
		costKnown = true
		withUsage bool
		status    string
	)
	for _, s := range steps {
		messages += len(s.bodies)
		if s.usage != nil {
			withUsage = true
			n.InputTokens += s.usage.Usage.InputTokens
			n.OutputTokens += s.usage.Usage.OutputTokens
			n.CacheReadTokens += s.usage.Usage.CacheReadTokens
			n.CacheWriteTokens += s.usage.Usage.CacheWriteTokens
			cost += s.usage.CostUSD
			costKnown = costKnown && s.usage.CostKnown
		}
		if s.status != "" {
			status = s.status
		}
	}
	ts := steps[len(steps)-1].ts
	var (
		end int64 // the session's last seq after this write
		err error
	)
	switch {
	case sw.create != nil:
		// A new session's row is inserted as the steps leave it (their
		// messages counted, their usage in its totals, the status): one
		// statement where an insert and an update per step were.
		create := sw.create
		if status == "" {
			status = create[4].(string)
		}
		updated := create[6].(int64)
		for _, s := range steps { // each step's touch, in order
			if updated < s.ts {
				updated = s.ts
			} else {
				updated++
			}
		}
		if err := insertNew(ctx, tx, "id already taken", insertStepSession,
			create[0], create[1], create[2], create[3], status, create[5], updated, create[7], create[8],
			int64(messages), n.InputTokens, n.OutputTokens, n.CacheReadTokens, n.CacheWriteTokens,
			cost, costKnown); err != nil {
			return err
		}
		end = int64(messages)
	case !withUsage:
		if end, err = updateStepSession(ctx, tx, sw.session, messages, messagesUpdate,
			[]any{messages, status, ts, ts, sw.session}); err != nil {
			return err
		}
	default:
		if end, err = updateStepSession(ctx, tx, sw.session, messages, stepUpdate, []any{messages, n.InputTokens, n.OutputTokens,
			n.CacheReadTokens, n.CacheWriteTokens, cost, costKnown, status, ts, ts, sw.session}); err != nil {
			return err
		}
	}
	// Known at once, not after the commit: the next step of the session
	// is mostly in the same transaction, and it would otherwise read the
	// row back. The guard makes a value this write leaves and a rollback
	// undoes harmless: it does not match the row.
	tx.w.seqs.put(sw.session, end)
	seq := end - int64(messages)
	for _, s := range steps {
		seq += int64(len(s.bodies))
		s.last = seq
	}
	if err := insertStepMessages(ctx, tx, sw.session, end-int64(messages)+1, steps); err != nil {
		return err
	}
	for _, s := range steps {
		if s.usage == nil {
			continue
		}
		u := s.usage
		if _, err := tx.ExecContext(ctx, `INSERT INTO usage
			(session_id, model, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens,
			 cost_usd, cost_known, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			u.SessionID, u.Model, u.Usage.InputTokens, u.Usage.OutputTokens, u.Usage.CacheReadTokens, u.Usage.CacheWriteTokens,
			u.CostUSD, u.CostKnown, s.usageAt); err != nil {
			return err
		}
	}
	return nil
}

// insertStepMessages inserts the messages of steps, numbered from first,
// in statements of up to len(insertMessages)-1 rows.
func insertStepMessages(ctx context.Context, tx *wtx, session string, first int64, steps []*stepWrite) error {
	const most = len(insertMessages) - 1
	vals := make([]any, 0, 5*most)
	seq := first
	flush := func() error {
		if len(vals) == 0 {
			return nil
		}
		_, err := tx.ExecContext(ctx, insertMessages[len(vals)/5], vals...)
		vals = vals[:0]
		return err
	}
	for _, s := range steps {
		for i, body := range s.bodies {
			vals = append(vals, session, seq, string(s.roles[i]), body, s.ts)
			seq++
			if len(vals) == 5*most {
				if err := flush(); err != nil {
					return err
				}
			}
		}
	}
	return flush()
}

// coalesceSteps merges, in a batch about to run as one transaction, each
// step into the latest earlier step of its session that absorbs it, when
// only steps of other sessions and writes of nodes lie between them
// (writes that touch no session row, message or usage row); any other
// write ends every merge across it. The merged step is written where
// the earlier one was, which changes nothing another write of the
// transaction sees. It reports whether it merged any; uncoalesce undoes
// it before the writes may run again apart.
func (w *writer) coalesceSteps(live []*writeReq) bool {
	heads, merged := w.heads[:0], false
	for _, r := range live {
		switch {
		case r.step != nil:
			i := 0
			for i < len(heads) && heads[i].step.session != r.step.session {
				i++
			}
			if i < len(heads) && heads[i].step.absorbs(r.step) {
				heads[i].step.more = append(heads[i].step.more, r.step)
				r.absorbed, merged = true, true
				w.merged.Add(1)
				continue
			}
			if i < len(heads) {
				heads[i] = r
			} else {
				heads = append(heads, r)
			}
		case !r.nodesOnly:
			clear(heads)
			heads = heads[:0]
		}
	}
	clear(heads)
	w.heads = heads[:0]
	return merged
}

// uncoalesce undoes coalesceSteps on live.
func uncoalesce(live []*writeReq) {
	for _, r := range live {
		if r.step != nil {
			r.step.more = nil
		}
		r.absorbed = false
	}
}
