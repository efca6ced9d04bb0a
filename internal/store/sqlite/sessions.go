package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

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
		err = s.inTx(ctx, func(tx *wtx) error { return insertSession(ctx, tx, args) })
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
	// Plain string, int64 and nil values: the writer binds them without
	// database/sql's reflection.
	var runID, nodeID any
	if sess.RunID != "" {
		runID = sess.RunID
	}
	if sess.NodeID != 0 {
		nodeID = sess.NodeID
	}
	return []any{sess.ID, sess.Title, sess.Model, sess.Workspace, string(sess.Status), created, updated, runID, nodeID}, nil
}

// insertSession inserts a session row from sessionArgs; ErrConflict when
// the id is taken.
func insertSession(ctx context.Context, tx *wtx, args []any) error {
	err := insertNew(ctx, tx, "id already taken", `INSERT INTO sessions
		(id, title, model, workspace, status, created_at, updated_at, run_id, node_id)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO NOTHING`, args...)
	if err == nil {
		tx.w.seqs.put(args[0].(string), 0) // a new session has no messages (a hint: see stepWrite.write)
	}
	return err
}

// GetSession returns the session with id, ErrNotFound if there is none.
func (s *Store) GetSession(ctx context.Context, id string) (store.Session, error) {
	row := s.read.QueryRowContext(ctx, `SELECT `+sessionColumns+` FROM sessions WHERE id = ?`, id)
	sess, err := scanSession(row)
	if errors.Is(err, sql.ErrNoRows) {
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
	out, err := listNewest(ctx, s.read, `SELECT `+sessionColumns+` FROM sessions ORDER BY created_at DESC, id DESC`, limit, scanSession)
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	return out, nil
}

// LatestConversation returns the last-written session of workspace that
// no tree node owns; ErrNotFound when there is none.
func (s *Store) LatestConversation(ctx context.Context, workspace string) (store.Session, error) {
	row := s.read.QueryRowContext(ctx, latestConversationSQL, workspace)
	sess, err := scanSession(row)
	if errors.Is(err, sql.ErrNoRows) {
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
	query, args := conversationsSQL(q)
	out, err := listNewest(ctx, s.read, query, q.Limit, scanSession, args...)
	if err != nil {
		return nil, fmt.Errorf("list conversations: %w", err)
	}
	return out, nil
}

// conversation is what makes a session a conversation, written as the
// partial index sessions_conversations (0015) is, so that SQLite reads
// the conversations through it instead of every node's session.
const conversation = `(node_id IS NULL OR node_id = 0)`

const latestConversationSQL = `SELECT ` + sessionColumns + ` FROM sessions
	WHERE workspace = ? AND ` + conversation + `
	ORDER BY updated_at DESC, id DESC LIMIT 1`

// conversationsSQL is the query of Conversations and its arguments,
// without the limit.
func conversationsSQL(q store.ConversationQuery) (string, []any) {
	query := `SELECT ` + sessionColumns + ` FROM sessions WHERE ` + conversation
	var args []any
	if q.Workspace != "" {
		query += ` AND workspace = ?`
		args = append(args, q.Workspace)
	}
	if q.AfterID != "" {
		after := q.AfterUpdated.UnixNano()
		query += ` AND (updated_at < ? OR updated_at = ? AND id < ?)`
		args = append(args, after, after, q.AfterID)
	}
	return query + ` ORDER BY updated_at DESC, id DESC`, args
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
	err := s.inTx(ctx, func(tx *wtx) error {
		res, err := tx.ExecContext(ctx, `UPDATE sessions SET title = ? WHERE id = ? AND title = ''`, title, id)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n > 0 {
			return err
		}
		var one int
		err = tx.QueryRowContext(ctx, `SELECT 1 FROM sessions WHERE id = ?`, id).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("no such session: %w", store.ErrNotFound)
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("title session %s: %w", id, err)
	}
	return nil
}

// RenameSession sets session id's title; ErrNotFound for an unknown
// session.
func (s *Store) RenameSession(ctx context.Context, id, title string) error {
	err := s.inTx(ctx, func(tx *wtx) error {
		res, err := tx.ExecContext(ctx, `UPDATE sessions SET title = ? WHERE id = ?`, title, id)
		if err != nil {
			return err
		}
		return requireRow(res)
	})
	if err != nil {
		return fmt.Errorf("rename session %s: %w", id, err)
	}
	return nil
}

// touchSession advances the session's updated_at inside tx; ErrNotFound
// when the session does not exist.
func touchSession(ctx context.Context, tx *wtx, id string) error {
	now := time.Now().UnixNano()
	res, err := tx.ExecContext(ctx, `UPDATE sessions SET `+touch+` WHERE id = ?`, now, now, id)
	if err != nil {
		return err
	}
	return requireRow(res)
}

// requireRow turns an update that matched no row into ErrNotFound.
func requireRow(res sql.Result) error {
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("no such session: %w", store.ErrNotFound)
	}
	return nil
}

type scanner interface {
	Scan(dest ...any) error
}

func scanSession(sc scanner) (store.Session, error) {
	var (
		sess             store.Session
		created, updated int64
		runID            sql.NullString
		nodeID           sql.NullInt64
	)
	err := sc.Scan(&sess.ID, &sess.Title, &sess.Model, &sess.Workspace, &sess.Status,
		&created, &updated,
		&sess.Usage.InputTokens, &sess.Usage.OutputTokens,
		&sess.Usage.CacheReadTokens, &sess.Usage.CacheWriteTokens,
		&sess.CostUSD, &sess.CostKnown, &runID, &nodeID)
	if err != nil {
		return store.Session{}, err
	}
	sess.RunID, sess.NodeID = runID.String, nodeID.Int64
	sess.CreatedAt = fromNanos(created)
	sess.UpdatedAt = fromNanos(updated)
	return sess, nil
}
