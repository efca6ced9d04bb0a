package sqlite

import (
	"context"
	"fmt"
	"time"

	"github.com/arbor-run/arbor/internal/store"
)

// AddUsage records one model call and adds it to the session totals in the
// same transaction. The session's cost stays known only while every call's
// cost was known; CostUSD sums the known costs. ErrNotFound for an unknown
// session; a zero At becomes now.
func (s *Store) AddUsage(ctx context.Context, u store.UsageRecord) error {
	if err := u.Validate(); err != nil {
		return fmt.Errorf("add usage to session %s: %w", u.SessionID, err)
	}
	now := time.Now()
	at, err := nanos(u.At, now)
	if err != nil {
		return fmt.Errorf("add usage to session %s: at: %w", u.SessionID, err)
	}
	n := u.Usage
	err = s.inTx(ctx, func(tx *wtx) error {
		ts := now.UnixNano()
		res, err := tx.ExecContext(ctx, `UPDATE sessions SET
			input_tokens = input_tokens + ?,
			output_tokens = output_tokens + ?,
			cache_read_tokens = cache_read_tokens + ?,
			cache_write_tokens = cache_write_tokens + ?,
			cost_usd = cost_usd + ?,
			cost_known = (cost_known AND ?),
			`+touch+`
			WHERE id = ?`,
			n.InputTokens, n.OutputTokens, n.CacheReadTokens, n.CacheWriteTokens,
			u.CostUSD, u.CostKnown, ts, ts, u.SessionID)
		if err != nil {
			return err
		}
		if err := requireRow(res); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO usage
			(session_id, model, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens,
			 cost_usd, cost_known, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			u.SessionID, u.Model, n.InputTokens, n.OutputTokens, n.CacheReadTokens, n.CacheWriteTokens,
			u.CostUSD, u.CostKnown, at)
		return err
	})
	if err != nil {
		return fmt.Errorf("add usage to session %s: %w", u.SessionID, err)
	}
	return nil
}
