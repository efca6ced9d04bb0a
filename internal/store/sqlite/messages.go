package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/store"
)

// AppendMessages appends msgs to the session in one transaction and returns
// the seq of the last one. With no messages it returns the current last seq
// and writes nothing.
func (s *Store) AppendMessages(ctx context.Context, sessionID string, msgs ...llm.Message) (int64, error) {
	last, err := s.saveStep(ctx, store.Step{SessionID: sessionID, Messages: msgs})
	if err != nil {
		return 0, fmt.Errorf("append messages to session %s: %w", sessionID, err)
	}
	return last, nil
}

// SaveStep writes a step's messages, usage and status in one transaction
// and returns the session's last seq. ErrNotFound for an unknown session,
// ErrInvalid for an invalid part (then nothing is written).
func (s *Store) SaveStep(ctx context.Context, st store.Step) (int64, error) {
	last, err := s.saveStep(ctx, st)
	if err != nil {
		return 0, fmt.Errorf("save step of session %s: %w", st.SessionID, err)
	}
	return last, nil
}

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

// updateStepSession adds a step to an existing session row (q is
// stepUpdate or messagesUpdate, args its values) and returns the session's last seq after it. When
// the writer knows the row's last_seq the update is guarded by it and the
// new one follows; otherwise, or when the row moved on (another process
// wrote it), it is read back. No RETURNING: SQLite collects a RETURNING
// clause's rows in an ephemeral table, a b-tree opened and freed per
// statement, which costs more than reading the row back.
func updateStepSession(ctx context.Context, tx *wtx, st store.Step, q sessionUpdate, args []any) (int64, error) {
	if seq, ok := tx.w.seqs.get(st.SessionID); ok {
		res, err := tx.ExecContext(ctx, q.guarded, append(args, seq)...)
		if err != nil {
			return 0, err
		}
		if rows, err := res.RowsAffected(); err != nil {
			return 0, err
		} else if rows == 1 {
			return seq + int64(len(st.Messages)), nil
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
	err = tx.QueryRowContext(ctx, `SELECT last_seq FROM sessions WHERE id = ?`, st.SessionID).Scan(&end)
	return end, err
}

// maxKnownSeqs bounds the sessions whose last_seq the writer remembers.
const maxKnownSeqs = 4096

// saveStep validates and encodes st, then writes it with one update of the
// session row and the inserts of its messages and usage, and returns the
// session's last seq.
func (s *Store) saveStep(ctx context.Context, st store.Step) (int64, error) {
	write, last, err := s.stepWrite(ctx, st)
	switch {
	case err != nil:
		return 0, err
	case write == nil:
		return s.lastSeq(ctx, st.SessionID)
	}
	if err := s.inTx(ctx, write); err != nil {
		return 0, err
	}
	return *last, nil
}

// QueueStep queues what SaveStep writes and returns at once; wait returns
// what SaveStep would have, once the transaction holding the write
// committed. Like CommitAsync, the write keeps its place among this
// store's writes: a write queued after it commits with it or later, so a
// caller that queues a step and then a tree transition need only wait for
// the transition (agent.StepQueuer). ctx is not watched.
func (s *Store) QueueStep(ctx context.Context, st store.Step) (wait func() (int64, error)) {
	ctx = context.WithoutCancel(ctx)
	fail := func(err error) func() (int64, error) {
		return func() (int64, error) { return 0, fmt.Errorf("save step of session %s: %w", st.SessionID, err) }
	}
	write, last, err := s.stepWrite(ctx, st)
	switch {
	case err != nil:
		return fail(err)
	case write == nil:
		return func() (int64, error) { return s.lastSeq(ctx, st.SessionID) }
	}
	done := s.w.enqueue(write)
	return func() (int64, error) {
		if err := done(); err != nil {
			return fail(err)()
		}
		return *last, nil
	}
}

// stepWrite validates and encodes st and returns its write, which sets
// *last to the session's last seq; nil when st writes nothing. The
// session row's update comes first: it numbers the messages (last_seq)
// and serializes concurrent appends; a part left out adds zero to the
// totals and keeps the status.
func (s *Store) stepWrite(ctx context.Context, st store.Step) (write func(*wtx) error, last *int64, err error) {
	if st.Status != "" && !st.Status.Valid() {
		return nil, nil, fmt.Errorf("%w: unknown session status %q", store.ErrInvalid, st.Status)
	}
	var create []any
	if st.Create != nil {
		if st.SessionID == "" {
			st.SessionID = st.Create.ID
		}
		if st.Create.ID != st.SessionID {
			return nil, nil, fmt.Errorf("%w: creating session %s in a step of session %s", store.ErrInvalid, st.Create.ID, st.SessionID)
		}
		var err error
		if create, err = sessionArgs(*st.Create); err != nil {
			return nil, nil, fmt.Errorf("create session: %w", err)
		}
	}
	now := time.Now()
	var (
		u       store.UsageRecord
		usageAt int64
	)
	if st.Usage != nil {
		u = *st.Usage
		if u.SessionID == "" {
			u.SessionID = st.SessionID
		}
		if u.SessionID != st.SessionID {
			return nil, nil, fmt.Errorf("%w: usage of session %s in a step of session %s", store.ErrInvalid, u.SessionID, st.SessionID)
		}
		if err := u.Validate(); err != nil {
			return nil, nil, err
		}
		var err error
		if usageAt, err = nanos(u.At, now); err != nil {
			return nil, nil, fmt.Errorf("usage at: %w", err)
		}
	}
	bodies := make([]string, len(st.Messages))
	for i, m := range st.Messages {
		if err := store.ValidateMessage(m); err != nil {
			return nil, nil, fmt.Errorf("message %d: %w", i, err)
		}
		b, err := encodeJSON(m)
		if err != nil {
			return nil, nil, fmt.Errorf("encode message %d: %w", i, err)
		}
		bodies[i] = b
	}
	if len(st.Messages) == 0 && st.Usage == nil && st.Status == "" && create == nil {
		return nil, nil, nil
	}
	ts := now.UnixNano()
	costKnown := st.Usage == nil || u.CostKnown
	n := u.Usage
	last = new(int64)
	return func(tx *wtx) error {
		var (
			end int64 // the session's last seq after this write
			err error
		)
		if create != nil {
			// A new session's row is inserted as the step leaves it (its
			// messages counted, the step's usage in its totals, its
			// status): one statement where an insert and an update were.
			status := string(st.Status)
			if status == "" {
				status = create[4].(string)
			}
			updated := create[6].(int64)
			if updated < ts {
				updated = ts
			} else {
				updated++
			}
			if err := insertNew(ctx, tx, "id already taken", insertStepSession,
				create[0], create[1], create[2], create[3], status, create[5], updated, create[7], create[8],
				int64(len(st.Messages)), n.InputTokens, n.OutputTokens, n.CacheReadTokens, n.CacheWriteTokens,
				u.CostUSD, costKnown); err != nil {
				return err
			}
			end = int64(len(st.Messages))
		} else if st.Usage == nil {
			if end, err = updateStepSession(ctx, tx, st, messagesUpdate,
				[]any{len(st.Messages), string(st.Status), ts, ts, st.SessionID}); err != nil {
				return err
			}
		} else if end, err = updateStepSession(ctx, tx, st, stepUpdate, []any{len(st.Messages), n.InputTokens, n.OutputTokens,
			n.CacheReadTokens, n.CacheWriteTokens, u.CostUSD, costKnown, string(st.Status), ts, ts, st.SessionID}); err != nil {
			return err
		}
		// Known at once, not after the commit: the next step of the
		// session is mostly in the same transaction (a node's answer and
		// its tool results are queued together), and it would otherwise
		// read the row back. The guard makes a value this write leaves
		// and a rollback undoes harmless: it does not match the row.
		tx.w.seqs.put(st.SessionID, end)
		*last = end
		first := end - int64(len(st.Messages)) + 1
		for i := 0; i < len(st.Messages); {
			k := min(len(st.Messages)-i, len(insertMessages)-1)
			vals := make([]any, 0, 5*k)
			for j := i; j < i+k; j++ {
				vals = append(vals, st.SessionID, first+int64(j), string(st.Messages[j].Role), bodies[j], ts)
			}
			if _, err := tx.ExecContext(ctx, insertMessages[k], vals...); err != nil {
				return err
			}
			i += k
		}
		if st.Usage == nil {
			return nil
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO usage
			(session_id, model, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens,
			 cost_usd, cost_known, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			u.SessionID, u.Model, n.InputTokens, n.OutputTokens, n.CacheReadTokens, n.CacheWriteTokens,
			u.CostUSD, u.CostKnown, usageAt)
		return err
	}, last, nil
}

// Messages returns the session's messages with seq > afterSeq in seq order;
// ErrNotFound for an unknown session.
func (s *Store) Messages(ctx context.Context, sessionID string, afterSeq int64) ([]store.MessageRecord, error) {
	rows, err := s.read.QueryContext(ctx,
		`SELECT seq, body, created_at FROM messages WHERE session_id = ? AND seq > ? ORDER BY seq`,
		sessionID, afterSeq)
	if err != nil {
		return nil, fmt.Errorf("load messages of session %s: %w", sessionID, err)
	}
	defer rows.Close()
	out := []store.MessageRecord{}
	// RawBytes avoids a copy per row; json.Unmarshal copies what it keeps.
	var body sql.RawBytes
	for rows.Next() {
		rec := store.MessageRecord{SessionID: sessionID}
		var created int64
		if err := rows.Scan(&rec.Seq, &body, &created); err != nil {
			return nil, fmt.Errorf("load messages of session %s: %w", sessionID, err)
		}
		if err := json.Unmarshal(body, &rec.Message); err != nil {
			return nil, fmt.Errorf("load messages of session %s: decode message %d: %w", sessionID, rec.Seq, err)
		}
		rec.CreatedAt = fromNanos(created)
		out = append(out, rec)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load messages of session %s: %w", sessionID, err)
	}
	if len(out) == 0 {
		// Sessions are never deleted, so checking after the query is exact.
		if _, err := s.lastSeq(ctx, sessionID); err != nil {
			return nil, fmt.Errorf("load messages of session %s: %w", sessionID, err)
		}
	}
	return out, nil
}

// lastSeq returns the seq of the session's newest message, 0 when it has
// none; ErrNotFound for an unknown session.
func (s *Store) lastSeq(ctx context.Context, sessionID string) (int64, error) {
	var last int64
	err := s.read.QueryRowContext(ctx, `SELECT last_seq FROM sessions WHERE id = ?`, sessionID).Scan(&last)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("no such session: %w", store.ErrNotFound)
	}
	return last, err
}

// encodeJSON is json.Marshal without HTML escaping, so text and tool
// input holding '<', '>' or '&' are stored as written. Its buffers and
// encoders are reused: every step encodes its messages.
func encodeJSON(v any) (string, error) {
	e := encoders.Get().(*encoder)
	defer e.put()
	if err := e.enc.Encode(v); err != nil {
		return "", err
	}
	return string(bytes.TrimSuffix(e.buf.Bytes(), []byte("\n"))), nil
}

// encoder is a json.Encoder writing into its own buffer.
type encoder struct {
	buf bytes.Buffer
	enc *json.Encoder
}

var encoders = sync.Pool{New: func() any {
	e := &encoder{}
	e.enc = json.NewEncoder(&e.buf)
	e.enc.SetEscapeHTML(false)
	return e
}}

// maxPooledEncoder bounds the buffer an encoder keeps for the next one:
// a message of a large file read would pin its size.
const maxPooledEncoder = 64 << 10

func (e *encoder) put() {
	if e.buf.Cap() > maxPooledEncoder {
		return
	}
	e.buf.Reset()
	encoders.Put(e)
}
