package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/arbor-run/arbor/internal/store"
)

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
	err = s.inTx(ctx, func(tx *wtx) error {
		var last int64
		err := tx.QueryRowContext(ctx, `SELECT last_seq FROM sessions WHERE id = ?`, c.SessionID).Scan(&last)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("no such session: %w", store.ErrNotFound)
		}
		if err != nil {
			return err
		}
		if c.UpToSeq > last {
			return fmt.Errorf("%w: up_to_seq %d is past the last message %d", store.ErrInvalid, c.UpToSeq, last)
		}
		_, err = tx.ExecContext(ctx,
			`INSERT INTO compactions (session_id, up_to_seq, summary, created_at) VALUES (?, ?, ?, ?)`,
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
	err := s.read.QueryRowContext(ctx, `SELECT up_to_seq, summary, created_at FROM compactions
		WHERE session_id = ? ORDER BY id DESC LIMIT 1`, sessionID).Scan(&c.UpToSeq, &c.Summary, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Compaction{}, fmt.Errorf("latest compaction of session %s: %w", sessionID, store.ErrNotFound)
	}
	if err != nil {
		return store.Compaction{}, fmt.Errorf("latest compaction of session %s: %w", sessionID, err)
	}
	c.CreatedAt = fromNanos(created)
	return c, nil
}
