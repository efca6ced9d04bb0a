package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

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
	err = s.inTx(ctx, func(tx *wtx) error {
		if err := touchSession(ctx, tx, in.SessionID); err != nil {
			return err
		}
		return insertNew(ctx, tx, "call already has an intent", `INSERT INTO intents
			(session_id, call_id, tool, input, status, is_error, started_at)
			VALUES (?, ?, ?, ?, ?, FALSE, ?)
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
// was already finished.
func (s *Store) FinishIntent(ctx context.Context, sessionID, callID, result string, isError bool) error {
	now := time.Now().UnixNano()
	err := s.inTx(ctx, func(tx *wtx) error {
		return updateStarted(ctx, tx, sessionID, callID, "status = ?, result = ?, is_error = ?, ended_at = ?",
			store.IntentFinished, result, isError, now)
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
	err := s.inTx(ctx, func(tx *wtx) error {
		return updateStarted(ctx, tx, sessionID, callID, "pgid = ?", pgid)
	})
	if err != nil {
		return fmt.Errorf("set process group of intent %s of session %s: %w", callID, sessionID, err)
	}
	return nil
}

// updateStarted sets columns (an SQL SET list with args) of the started
// intent of callID and touches its session; ErrNotFound when the call has
// no intent, ErrConflict when it is finished.
func updateStarted(ctx context.Context, tx *wtx, sessionID, callID, set string, args ...any) error {
	res, err := tx.ExecContext(ctx, "UPDATE intents SET "+set+" WHERE session_id = ? AND call_id = ? AND status = ?",
		append(args, sessionID, callID, store.IntentStarted)...)
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return intentMissing(ctx, tx, sessionID, callID)
	}
	return touchSession(ctx, tx, sessionID)
}

// intentMissing explains why an update of a started intent matched no
// row: ErrNotFound when the call has none, ErrConflict when it is finished.
func intentMissing(ctx context.Context, tx *wtx, sessionID, callID string) error {
	var status string
	err := tx.QueryRowContext(ctx,
		`SELECT status FROM intents WHERE session_id = ? AND call_id = ?`,
		sessionID, callID).Scan(&status)
	if errors.Is(err, sql.ErrNoRows) {
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
	rows, err := s.read.QueryContext(ctx, `SELECT call_id, tool, input, status, result, is_error, started_at, ended_at, pgid
		FROM intents WHERE session_id = ? ORDER BY started_at, call_id`, sessionID)
	if err != nil {
		return nil, fmt.Errorf("load intents of session %s: %w", sessionID, err)
	}
	defer rows.Close()
	out := []store.Intent{}
	for rows.Next() {
		in := store.Intent{SessionID: sessionID}
		var (
			input   []byte
			result  sql.NullString
			started int64
			ended   sql.NullInt64
		)
		if err := rows.Scan(&in.CallID, &in.Tool, &input, &in.Status, &result, &in.IsError, &started, &ended, &in.PGID); err != nil {
			return nil, fmt.Errorf("load intents of session %s: %w", sessionID, err)
		}
		if input != nil {
			in.Input = input
		}
		in.Result = result.String
		in.StartedAt = fromNanos(started)
		if ended.Valid {
			t := fromNanos(ended.Int64)
			in.EndedAt = &t
		}
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
