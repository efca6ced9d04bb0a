package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/store"
)

// AppendMessages appends msgs to the session in one transaction and returns
// the seq of the last one. The session row's last_seq is bumped first,
// which both numbers the messages and serializes concurrent appends. With
// no messages it returns the current last seq and writes nothing.
func (s *Store) AppendMessages(ctx context.Context, sessionID string, msgs ...llm.Message) (int64, error) {
	if len(msgs) == 0 {
		last, err := s.lastSeq(ctx, sessionID)
		if err != nil {
			return 0, fmt.Errorf("append messages to session %s: %w", sessionID, err)
		}
		return last, nil
	}
	bodies := make([]string, len(msgs))
	for i, m := range msgs {
		if err := store.ValidateMessage(m); err != nil {
			return 0, fmt.Errorf("append messages to session %s: message %d: %w", sessionID, i, err)
		}
		b, err := encodeJSON(m)
		if err != nil {
			return 0, fmt.Errorf("append messages to session %s: encode message %d: %w", sessionID, i, err)
		}
		bodies[i] = b
	}
	now := time.Now().UnixNano()
	var last int64
	err := s.inTx(ctx, func(tx *wtx) error {
		err := tx.QueryRowContext(ctx,
			`UPDATE sessions SET last_seq = last_seq + ?, `+touch+` WHERE id = ? RETURNING last_seq`,
			len(msgs), now, now, sessionID).Scan(&last)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("no such session: %w", store.ErrNotFound)
		}
		if err != nil {
			return err
		}
		stmt, err := tx.PrepareContext(ctx,
			`INSERT INTO messages (session_id, seq, role, body, created_at) VALUES (?, ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		defer stmt.Close()
		first := last - int64(len(msgs)) + 1
		for i, m := range msgs {
			if _, err := stmt.ExecContext(ctx, sessionID, first+int64(i), string(m.Role), bodies[i], now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("append messages to session %s: %w", sessionID, err)
	}
	return last, nil
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
