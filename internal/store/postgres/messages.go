package postgres

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

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

// AddUsage records one model call and adds it to the session totals in the
// same transaction. The session's cost stays known only while every call's
// cost was known; CostUSD sums the known costs. ErrNotFound for an unknown
// session; a zero At becomes now.
func (s *Store) AddUsage(ctx context.Context, u store.UsageRecord) error {
	if _, err := s.saveStep(ctx, store.Step{SessionID: u.SessionID, Usage: &u}); err != nil {
		return fmt.Errorf("add usage to session %s: %w", u.SessionID, err)
	}
	return nil
}

// saveStep validates and encodes st, then writes it with one update of the
// session row and the inserts of its messages and usage. The session row's
// update comes first: it numbers the messages (last_seq) and, holding the
// row's lock until commit, serializes concurrent appends; a part left out
// adds zero to the totals and keeps the status.
func (s *Store) saveStep(ctx context.Context, st store.Step) (int64, error) {
	w, err := stepWrite(st)
	switch {
	case err != nil:
		return 0, err
	case w == nil:
		return s.lastSeq(ctx, st.SessionID)
	}
	if err := s.inBatch(ctx, w.build, w.read); err != nil {
		return 0, err
	}
	return w.last, nil
}

// QueueStep queues what SaveStep writes and returns at once; wait returns
// what SaveStep would have, once the transaction holding the write
// committed (agent.StepQueuer). The write keeps its place among this
// store's writes, as CommitAsync's does: a write queued after it commits
// with it or later. ctx is not watched.
func (s *Store) QueueStep(ctx context.Context, st store.Step) (wait func() (int64, error)) {
	ctx = context.WithoutCancel(ctx)
	fail := func(err error) func() (int64, error) {
		return func() (int64, error) { return 0, fmt.Errorf("save step of session %s: %w", st.SessionID, err) }
	}
	w, err := stepWrite(st)
	switch {
	case err != nil:
		return fail(err)
	case w == nil:
		return func() (int64, error) { return s.lastSeq(ctx, st.SessionID) }
	}
	r, err := s.group.enqueue(ctx, w.build, w.read)
	if err != nil {
		return fail(err)
	}
	return func() (int64, error) {
		<-r.done
		if r.err != nil {
			return fail(r.err)()
		}
		return w.last, nil
	}
}

// step is a step's write for inBatch; read sets last.
type step struct {
	build func(*pgx.Batch)
	read  func(pgx.BatchResults) error
	last  int64
}

// stepWrite validates and encodes st and returns its write; nil when st
// writes nothing.
func stepWrite(st store.Step) (*step, error) {
	st, err := st.Resolved()
	if err != nil {
		return nil, err
	}
	var create []any
	if st.Create != nil {
		if create, err = sessionArgs(*st.Create); err != nil {
			return nil, fmt.Errorf("create session: %w", err)
		}
	}
	now := time.Now()
	var (
		u       store.UsageRecord
		usageAt int64
	)
	if st.Usage != nil {
		u = *st.Usage
		if usageAt, err = nanos(u.At, now); err != nil {
			return nil, fmt.Errorf("usage at: %w", err)
		}
	}
	bodies := make([]string, len(st.Messages))
	for i, m := range st.Messages {
		b, err := encodeJSON(m)
		if err != nil {
			return nil, fmt.Errorf("encode message %d: %w", i, err)
		}
		bodies[i] = b
	}
	if len(st.Messages) == 0 && st.Usage == nil && st.Status == "" && create == nil {
		return nil, nil
	}
	ts := now.UnixNano()
	costKnown := st.Usage == nil || u.CostKnown
	n := u.Usage
	w := &step{}
	// One pipelined batch, one implicit transaction (inBatch). The session
	// a step creates goes first: a taken id fails it (takenID) before
	// anything else is written. The session update numbers the messages
	// (last_seq) and holds the row's lock until commit, so appends to one
	// session serialize; each insert reads the seq back from the row this
	// transaction just updated. An unknown session updates no row; then
	// the message inserts fail (no seq), so does the usage insert (its
	// foreign key), and a step of a status alone writes nothing.
	w.build = func(batch *pgx.Batch) {
		if create != nil {
			batch.Queue(insertSessionSQL, create...)
		}
		batch.Queue(`UPDATE sessions SET
			last_seq = last_seq + $1,
			input_tokens = input_tokens + $2,
			output_tokens = output_tokens + $3,
			cache_read_tokens = cache_read_tokens + $4,
			cache_write_tokens = cache_write_tokens + $5,
			cost_usd = cost_usd + $6,
			cost_known = (cost_known AND $7),
			status = COALESCE(NULLIF($8::text, ''), status),
			`+touch(9)+`
			WHERE id = $10 RETURNING last_seq`,
			len(st.Messages), n.InputTokens, n.OutputTokens, n.CacheReadTokens, n.CacheWriteTokens,
			u.CostUSD, costKnown, string(st.Status), ts, st.SessionID)
		for i, m := range st.Messages {
			batch.Queue(`INSERT INTO messages (session_id, seq, role, body, created_at)
				VALUES ($1, (SELECT last_seq FROM sessions WHERE id = $1) - $2, $3, $4, $5)`,
				st.SessionID, len(st.Messages)-1-i, string(m.Role), bodies[i], ts)
		}
		if st.Usage != nil {
			batch.Queue(`INSERT INTO usage
				(session_id, model, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens,
				 cost_usd, cost_known, created_at)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
				u.SessionID, u.Model, n.InputTokens, n.OutputTokens, n.CacheReadTokens, n.CacheWriteTokens,
				u.CostUSD, u.CostKnown, usageAt)
		}
	}
	w.read = func(br pgx.BatchResults) error {
		if create != nil {
			if _, err := br.Exec(); err != nil {
				return takenID(err)
			}
		}
		err := br.QueryRow().Scan(&w.last)
		if errors.Is(err, pgx.ErrNoRows) {
			err = fmt.Errorf("no such session: %w", store.ErrNotFound)
		}
		return err
	}
	return w, nil
}

// Messages returns the session's messages with seq > afterSeq in seq order;
// ErrNotFound for an unknown session.
func (s *Store) Messages(ctx context.Context, sessionID string, afterSeq int64) ([]store.MessageRecord, error) {
	rows, err := s.pool.Query(ctx,
		`SELECT seq, body, created_at FROM messages WHERE session_id = $1 AND seq > $2 ORDER BY seq`,
		sessionID, afterSeq)
	if err != nil {
		return nil, fmt.Errorf("load messages of session %s: %w", sessionID, err)
	}
	defer rows.Close()
	out := []store.MessageRecord{}
	for rows.Next() {
		rec := store.MessageRecord{SessionID: sessionID}
		var (
			body    []byte
			created int64
		)
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
	err := s.pool.QueryRow(ctx, `SELECT last_seq FROM sessions WHERE id = $1`, sessionID).Scan(&last)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, fmt.Errorf("no such session: %w", store.ErrNotFound)
	}
	return last, err
}

// encodeJSON is json.Marshal without HTML escaping, so text and tool
// input holding '<', '>' or '&' are stored as written.
func encodeJSON(v any) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return string(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))), nil
}
