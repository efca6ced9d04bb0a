package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

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
	// One batch, one implicit transaction (inBatch): the session's touch,
	// then the intent. An unknown session touches no row and fails the
	// insert's foreign key; a call that has an intent fails its primary
	// key; either rolls the touch back.
	err = s.inBatch(ctx, func(b *pgx.Batch) {
		b.Queue(`UPDATE sessions SET `+touch(1)+` WHERE id = $2`, time.Now().UnixNano(), in.SessionID)
		b.Queue(`INSERT INTO intents (session_id, call_id, tool, input, status, is_error, started_at)
			VALUES ($1, $2, $3, $4, $5, FALSE, $6)`,
			in.SessionID, in.CallID, in.Tool, input, store.IntentStarted, started)
	}, func(br pgx.BatchResults) error {
		tag, err := br.Exec()
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fmt.Errorf("no such session: %w", store.ErrNotFound)
		}
		if _, err := br.Exec(); err != nil {
			var pe *pgconn.PgError
			if errors.As(err, &pe) && pe.Code == "23505" {
				return fmt.Errorf("call already has an intent: %w", store.ErrConflict)
			}
			return err
		}
		return nil
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
	err := s.updateStarted(ctx, sessionID, callID, "status = $5, result = $6, is_error = $7, ended_at = $8",
		store.IntentFinished, []byte(result), isError, now)
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
	err := s.updateStarted(ctx, sessionID, callID, "pgid = $5", pgid)
	if err != nil {
		return fmt.Errorf("set process group of intent %s of session %s: %w", callID, sessionID, err)
	}
	return nil
}

// updateStarted sets columns (an SQL SET list numbering its arguments
// from $5) of the started intent of callID and touches its session, in
// one statement (a transaction of one round trip, inBatch, so that a
// deadlock is retried): the session's update touches only the session of
// the intent it updated. ErrNotFound when
// the call has no intent, ErrConflict when it is finished. A concurrent
// finisher holds the row until it commits, and the status is then
// re-checked on the finished row, so only one finish wins.
func (s *Store) updateStarted(ctx context.Context, sessionID, callID, set string, args ...any) error {
	var touched int64
	err := s.inBatch(ctx, func(b *pgx.Batch) {
		b.Queue(`WITH updated AS (
			UPDATE intents SET `+set+` WHERE session_id = $1 AND call_id = $2 AND status = $3 RETURNING session_id)
			UPDATE sessions SET `+touch(4)+` WHERE id IN (SELECT session_id FROM updated)`,
			append([]any{sessionID, callID, store.IntentStarted, time.Now().UnixNano()}, args...)...)
	}, func(br pgx.BatchResults) error {
		tag, err := br.Exec()
		touched = tag.RowsAffected()
		return err
	})
	if err != nil {
		return err
	}
	if touched == 0 {
		return intentMissing(ctx, s.pool, sessionID, callID)
	}
	return nil
}

// rowQuerier is a transaction or the pool.
type rowQuerier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// intentMissing explains why an update of a started intent matched no
// row: ErrNotFound when the call has none, ErrConflict when it is finished.
func intentMissing(ctx context.Context, q rowQuerier, sessionID, callID string) error {
	var status string
	err := q.QueryRow(ctx, `SELECT status FROM intents WHERE session_id = $1 AND call_id = $2`,
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
