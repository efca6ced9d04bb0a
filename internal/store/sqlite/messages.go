package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

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

// saveStep validates and encodes st, then writes it with one update of the
// session row and the inserts of its messages and usage, and returns the
// session's last seq.
func (s *Store) saveStep(ctx context.Context, st store.Step) (int64, error) {
	sw, err := newStepWrite(ctx, st)
	switch {
	case err != nil:
		return 0, err
	case sw == nil:
		return s.lastSeq(ctx, st.SessionID)
	}
	if err := s.w.doTagged(ctx, sw.write, writeTag{step: sw}); err != nil {
		return 0, err
	}
	return sw.last, nil
}

// QueueStep queues what SaveStep writes and returns at once; wait returns
// what SaveStep would have, once the transaction holding the write
// committed. Like CommitAsync, the write keeps its place among this
// store's writes: a write queued after it commits with it or later, so a
// caller that queues a step and then a tree transition need only wait for
// the transition (agent.StepQueuer). ctx is not watched.
func (s *Store) QueueStep(ctx context.Context, st store.Step) (wait func() (int64, error)) {
	ctx = context.WithoutCancel(ctx)
	id := st.SessionID // not st: the closures would keep all of it
	sw, err := newStepWrite(ctx, st)
	switch {
	case err != nil:
		return func() (int64, error) { return stepFailed(id, err) }
	case sw == nil:
		return func() (int64, error) { return s.lastSeq(ctx, id) }
	}
	done := s.w.enqueueTagged(sw.write, writeTag{step: sw})
	return func() (int64, error) {
		if err := done(); err != nil {
			return stepFailed(id, err)
		}
		return sw.last, nil
	}
}

func stepFailed(session string, err error) (int64, error) {
	return 0, fmt.Errorf("save step of session %s: %w", session, err)
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
