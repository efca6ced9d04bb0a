package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/arbor-run/arbor/internal/store"
)

// StartIntent records that a tool call is about to run. The intent is
// always stored as started with no result, whatever in says; a zero
// StartedAt becomes now. ErrNotFound for an unknown session, ErrConflict if
// the call already has an intent.
func (s *Store) StartIntent(ctx context.Context, in store.Intent) error {
	if err := in.Validate(); err != nil {
		return fmt.Errorf("start intent %s of session %s: %w", in.CallID, in.SessionID, err)
	}
	started, err := nanos(in.StartedAt, time.Now())
	if err != nil {
		return fmt.Errorf("start intent %s of session %s: started_at: %w", in.CallID, in.SessionID, err)
	}
	var input *string
	if in.Input != nil {
		v := string(in.Input)
		input = &v
	}
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		if err := touchSession(ctx, tx, in.SessionID); err != nil {
			return err
		}
		return insertNew(ctx, tx, "call already has an intent", `INSERT INTO intents
			(session_id, call_id, tool, input, status, is_error, started_at)
			VALUES ($1, $2, $3, $4, $5, FALSE, $6)
			ON CONFLICT (session_id, call_id) DO NOTHING`,
			in.SessionID, in.CallID, in.Tool, input, store.IntentStarted, started)
	})
	if err != nil {
		return fmt.Errorf("start intent %s of session %s: %w", in.CallID, in.SessionID, err)
	}
	return nil
}

// FinishIntent stores the result of a started intent and marks it
// finished. ErrNotFound when the call has no intent, ErrConflict when it
// was already finished. The result is stored as bytes, NUL bytes included.
func (s *Store) FinishIntent(ctx context.Context, sessionID, callID, result string, isError bool) error {
	now := time.Now().UnixNano()
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		return updateStarted(ctx, tx, sessionID, callID, "status = $4, result = $5, is_error = $6, ended_at = $7",
			store.IntentFinished, []byte(result), isError, now)
	})
	if err != nil {
		return fmt.Errorf("finish intent %s of session %s: %w", callID, sessionID, err)
	}
	return nil
}

// SetIntentPGID records the process group of a started intent's tool
// process. ErrNotFound when the call has no intent, ErrConflict when it is
// finished, ErrInvalid for a pgid < 1.
func (s *Store) SetIntentPGID(ctx context.Context, sessionID, callID string, pgid int) error {
	if pgid < 1 {
		return fmt.Errorf("set process group of intent %s of session %s: %w: pgid %d", callID, sessionID, store.ErrInvalid, pgid)
	}
	err := s.inTx(ctx, func(tx pgx.Tx) error {
		return updateStarted(ctx, tx, sessionID, callID, "pgid = $4", pgid)
	})
	if err != nil {
		return fmt.Errorf("set process group of intent %s of session %s: %w", callID, sessionID, err)
	}
	return nil
}

// updateStarted sets columns (an SQL SET list numbering its arguments
// from $4) of the started intent of callID and touches its session;
// ErrNotFound when the call has no intent, ErrConflict when it is
// finished. A concurrent finisher holds the row until it commits, and the
// status is then re-checked on the finished row, so only one finish wins.
func updateStarted(ctx context.Context, tx pgx.Tx, sessionID, callID, set string, args ...any) error {
	tag, err := tx.Exec(ctx, "UPDATE intents SET "+set+" WHERE session_id = $1 AND call_id = $2 AND status = $3",
		append([]any{sessionID, callID, store.IntentStarted}, args...)...)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return intentMissing(ctx, tx, sessionID, callID)
	}
	return touchSession(ctx, tx, sessionID)
}

// intentMissing explains why an update of a started intent matched no
// row: ErrNotFound when the call has none, ErrConflict when it is finished.
func intentMissing(ctx context.Context, tx pgx.Tx, sessionID, callID string) error {
	var status string
	err := tx.QueryRow(ctx, `SELECT status FROM intents WHERE session_id = $1 AND call_id = $2`,
		sessionID, callID).Scan(&status)
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("no intent was started: %w", store.ErrNotFound)
	}
	if err != nil {
		return err
	}
	return fmt.Errorf("intent is already %s: %w", status, store.ErrConflict)
}

// Intents returns the session's intents by start time (ties by call id);
// ErrNotFound for an unknown session.
func (s *Store) Intents(ctx context.Context, sessionID string) ([]store.Intent, error) {
	rows, err := s.pool.Query(ctx, `SELECT call_id, tool, input, status, result, is_error, started_at, ended_at, pgid
		FROM intents WHERE session_id = $1 ORDER BY started_at, call_id`, sessionID)
	if err != nil {
		return nil, fmt.Errorf("load intents of session %s: %w", sessionID, err)
	}
	defer rows.Close()
	out := []store.Intent{}
	for rows.Next() {
		in := store.Intent{SessionID: sessionID}
		var (
			input   *string
			result  []byte
			started int64
			ended   *int64
		)
		if err := rows.Scan(&in.CallID, &in.Tool, &input, &in.Status, &result, &in.IsError, &started, &ended, &in.PGID); err != nil {
			return nil, fmt.Errorf("load intents of session %s: %w", sessionID, err)
		}
		if input != nil {
			in.Input = []byte(*input)
		}
		in.Result = string(result)
		in.StartedAt = fromNanos(started)
		in.EndedAt = nullableTime(ended)
		out = append(out, in)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load intents of session %s: %w", sessionID, err)
	}
	if len(out) == 0 {
		if _, err := s.lastSeq(ctx, sessionID); err != nil {
			return nil, fmt.Errorf("load intents of session %s: %w", sessionID, err)
		}
	}
	return out, nil
}

// SaveCompaction stores c; a zero CreatedAt becomes now. ErrNotFound for an
// unknown session, ErrInvalid when UpToSeq passes the session's last
// message.
func (s *Store) SaveCompaction(ctx context.Context, c store.Compaction) error {
	if err := c.Validate(); err != nil {
		return fmt.Errorf("save compaction of session %s: %w", c.SessionID, err)
	}
	created, err := nanos(c.CreatedAt, time.Now())
	if err != nil {
		return fmt.Errorf("save compaction of session %s: created_at: %w", c.SessionID, err)
	}
	err = s.inTx(ctx, func(tx pgx.Tx) error {
		// FOR UPDATE: no append can move last_seq until this commits.
		var last int64
		err := tx.QueryRow(ctx, `SELECT last_seq FROM sessions WHERE id = $1 FOR UPDATE`, c.SessionID).Scan(&last)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("no such session: %w", store.ErrNotFound)
		}
		if err != nil {
			return err
		}
		if c.UpToSeq > last {
			return fmt.Errorf("%w: up_to_seq %d is past the last message %d", store.ErrInvalid, c.UpToSeq, last)
		}
		_, err = tx.Exec(ctx, `INSERT INTO compactions (session_id, up_to_seq, summary, created_at) VALUES ($1, $2, $3, $4)`,
			c.SessionID, c.UpToSeq, c.Summary, created)
		if err != nil {
			return err
		}
		return touchSession(ctx, tx, c.SessionID)
	})
	if err != nil {
		return fmt.Errorf("save compaction of session %s: %w", c.SessionID, err)
	}
	return nil
}

// LatestCompaction returns the compaction saved last; ErrNotFound when the
// session has none (or does not exist).
func (s *Store) LatestCompaction(ctx context.Context, sessionID string) (store.Compaction, error) {
	c := store.Compaction{SessionID: sessionID}
	var created int64
	err := s.pool.QueryRow(ctx, `SELECT up_to_seq, summary, created_at FROM compactions
		WHERE session_id = $1 ORDER BY id DESC LIMIT 1`, sessionID).Scan(&c.UpToSeq, &c.Summary, &created)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Compaction{}, fmt.Errorf("latest compaction of session %s: %w", sessionID, store.ErrNotFound)
	}
	if err != nil {
		return store.Compaction{}, fmt.Errorf("latest compaction of session %s: %w", sessionID, err)
	}
	c.CreatedAt = fromNanos(created)
	return c, nil
}
