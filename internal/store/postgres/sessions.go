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

const sessionColumns = `id, title, model, workspace, status, created_at, updated_at,
	input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd, cost_known,
	run_id, node_id`

// CreateSession inserts s. An empty Status becomes store.SessionActive, a
// zero CreatedAt becomes now and a zero UpdatedAt becomes CreatedAt. The
// usage totals always start at zero with a known cost: they belong to
// AddUsage. ErrConflict when the id is taken.
func (s *Store) CreateSession(ctx context.Context, sess store.Session) error {
	args, err := sessionArgs(sess)
	if err == nil {
		// One statement: a transaction of one round trip, perhaps
		// shared with other writes (inBatch).
		err = s.inBatch(ctx, func(b *pgx.Batch) { b.Queue(insertSessionSQL, args...) },
			func(br pgx.BatchResults) error { _, err := br.Exec(); return takenID(err) })
	}
	if err != nil {
		return fmt.Errorf("create session %s: %w", sess.ID, err)
	}
	return nil
}

// sessionArgs validates a new session and returns the values insertSession
// binds: an empty Status becomes store.SessionActive, a zero CreatedAt
// now, a zero UpdatedAt CreatedAt.
func sessionArgs(sess store.Session) ([]any, error) {
	if err := sess.Validate(); err != nil {
		return nil, err
	}
	if sess.Status == "" {
		sess.Status = store.SessionActive
	}
	created, err := nanos(sess.CreatedAt, time.Now())
	if err != nil {
		return nil, fmt.Errorf("created_at: %w", err)
	}
	updated, err := nanos(sess.UpdatedAt, fromNanos(created))
	if err != nil {
		return nil, fmt.Errorf("updated_at: %w", err)
	}
	var runID *string
	var nodeID *int64
	if sess.NodeID != 0 {
		runID, nodeID = &sess.RunID, &sess.NodeID
	}
	return []any{sess.ID, sess.Title, sess.Model, sess.Workspace, sess.Status, created, updated, runID, nodeID}, nil
}

// insertSessionSQL inserts a session row from sessionArgs; it fails with
// a unique violation (taken) when the id is taken.
const insertSessionSQL = `INSERT INTO sessions
	(id, title, model, workspace, status, created_at, updated_at, run_id, node_id)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`

// takenID maps the unique violation of insertSessionSQL to ErrConflict.
func takenID(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "23505" {
		return fmt.Errorf("id already taken: %w", store.ErrConflict)
	}
	return err
}

// GetSession returns the session with id, ErrNotFound if there is none.
func (s *Store) GetSession(ctx context.Context, id string) (store.Session, error) {
	sess, err := scanSession(s.pool.QueryRow(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Session{}, fmt.Errorf("get session %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return store.Session{}, fmt.Errorf("get session %s: %w", id, err)
	}
	return sess, nil
}

// ListSessions returns sessions by creation time, newest first (ties by id,
// descending); limit <= 0 means all.
func (s *Store) ListSessions(ctx context.Context, limit int) ([]store.Session, error) {
	out, err := listNewest(ctx, s, `SELECT `+sessionColumns+` FROM sessions ORDER BY created_at DESC, id DESC`, limit, scanSession)
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	return out, nil
}

// LatestConversation returns the last-written session of workspace that
// no tree node owns; ErrNotFound when there is none.
func (s *Store) LatestConversation(ctx context.Context, workspace string) (store.Session, error) {
	sess, err := scanSession(s.pool.QueryRow(ctx, `SELECT `+sessionColumns+` FROM sessions
		WHERE workspace = $1 AND (node_id IS NULL OR node_id = 0)
		ORDER BY updated_at DESC, id DESC LIMIT 1`, workspace))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.Session{}, fmt.Errorf("latest conversation in %s: %w", workspace, store.ErrNotFound)
	}
	if err != nil {
		return store.Session{}, fmt.Errorf("latest conversation in %s: %w", workspace, err)
	}
	return sess, nil
}

// Conversations returns the conversations q asks for, the last written
// first (ties by id, the greater first).
func (s *Store) Conversations(ctx context.Context, q store.ConversationQuery) ([]store.Session, error) {
	query := `SELECT ` + sessionColumns + ` FROM sessions WHERE (node_id IS NULL OR node_id = 0)`
	var args []any
	arg := func(v any) string {
		args = append(args, v)
		return fmt.Sprintf("$%d", len(args))
	}
	if q.Workspace != "" {
		query += ` AND workspace = ` + arg(q.Workspace)
	}
	if q.AfterID != "" {
		after := arg(q.AfterUpdated.UnixNano())
		query += ` AND (updated_at < ` + after + ` OR updated_at = ` + after + ` AND id < ` + arg(q.AfterID) + `)`
	}
	out, err := listNewest(ctx, s, query+` ORDER BY updated_at DESC, id DESC`, q.Limit, scanSession, args...)
	if err != nil {
		return nil, fmt.Errorf("list conversations: %w", err)
	}
	return out, nil
}

// SetSessionStatus changes the status of session id; ErrInvalid for a status
// outside the store.Session* set, ErrNotFound for an unknown session.
func (s *Store) SetSessionStatus(ctx context.Context, id string, status store.SessionStatus) error {
	if !status.Valid() {
		return fmt.Errorf("set status of session %s: %w: unknown session status %q", id, store.ErrInvalid, status)
	}
	if _, err := s.saveStep(ctx, store.Step{SessionID: id, Status: status}); err != nil {
		return fmt.Errorf("set status of session %s: %w", id, err)
	}
	return nil
}

// TitleSession gives session id the title when it has none; ErrNotFound
// for an unknown session.
func (s *Store) TitleSession(ctx context.Context, id, title string) error {
	var n int64
	err := s.inBatch(ctx, func(b *pgx.Batch) {
		// One statement: the row that has a title already counts as found.
		b.Queue(`WITH t AS (UPDATE sessions SET title = $1 WHERE id = $2 AND title = '' RETURNING 1)
			SELECT (SELECT count(*) FROM t) + (SELECT count(*) FROM sessions WHERE id = $2 AND title <> '')`, title, id)
	}, func(br pgx.BatchResults) error { return br.QueryRow().Scan(&n) })
	if err == nil && n == 0 {
		err = fmt.Errorf("no such session: %w", store.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("title session %s: %w", id, err)
	}
	return nil
}

// RenameSession sets session id's title; ErrNotFound for an unknown
// session.
func (s *Store) RenameSession(ctx context.Context, id, title string) error {
	var n int64
	err := s.inBatch(ctx, func(b *pgx.Batch) {
		b.Queue(`UPDATE sessions SET title = $1 WHERE id = $2`, title, id)
	}, func(br pgx.BatchResults) error {
		tag, err := br.Exec()
		n = tag.RowsAffected()
		return err
	})
	if err == nil && n == 0 {
		err = fmt.Errorf("no such session: %w", store.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("rename session %s: %w", id, err)
	}
	return nil
}

// touchSession advances the session's updated_at inside tx; ErrNotFound
// when the session does not exist.
func touchSession(ctx context.Context, tx pgx.Tx, id string) error {
	tag, err := tx.Exec(ctx, `UPDATE sessions SET `+touch(1)+` WHERE id = $2`, time.Now().UnixNano(), id)
	if err != nil {
		return err
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("no such session: %w", store.ErrNotFound)
	}
	return nil
}

func scanSession(row pgx.Row) (store.Session, error) {
	var (
		sess             store.Session
		created, updated int64
		runID            *string
		nodeID           *int64
	)
	err := row.Scan(&sess.ID, &sess.Title, &sess.Model, &sess.Workspace, &sess.Status,
		&created, &updated,
		&sess.Usage.InputTokens, &sess.Usage.OutputTokens,
		&sess.Usage.CacheReadTokens, &sess.Usage.CacheWriteTokens,
		&sess.CostUSD, &sess.CostKnown, &runID, &nodeID)
	if err != nil {
		return store.Session{}, err
	}
	if runID != nil && nodeID != nil {
		sess.RunID, sess.NodeID = *runID, *nodeID
	}
	sess.CreatedAt = fromNanos(created)
	sess.UpdatedAt = fromNanos(updated)
	return sess, nil
}
