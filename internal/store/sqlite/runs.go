package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/arbor-run/arbor/internal/store"
)

const runColumns = `id, goal, status, model, workspace, mode, budget_usd, max_tokens,
	max_parallel, node_timeout_ms, result, error, created_at, updated_at, queue, trace_parent`

// CreateRun inserts r and, in the same transaction, upserts nodes (its
// first ones, as Commit does). An empty Status becomes store.RunRunning; a
// zero CreatedAt or UpdatedAt becomes now. ErrConflict when the id is
// taken (no node is written), ErrInvalid when r or a node is malformed
// or a node is another run's.
func (s *Store) CreateRun(ctx context.Context, r store.Run, nodes ...store.Node) error {
	if r.Status == "" {
		r.Status = store.RunRunning
	}
	if err := r.Validate(); err != nil {
		return fmt.Errorf("create run %s: %w", r.ID, err)
	}
	now := time.Now()
	created, err := nanos(r.CreatedAt, now)
	if err != nil {
		return fmt.Errorf("create run %s: created_at: %w", r.ID, err)
	}
	updated, err := nanos(r.UpdatedAt, now)
	if err != nil {
		return fmt.Errorf("create run %s: updated_at: %w", r.ID, err)
	}
	if err := store.NodesOf(r.ID, nodes); err != nil {
		return fmt.Errorf("create run %s: %w", r.ID, err)
	}
	_, writeNodes, err := s.commitTx(ctx, nil, nodes)
	if err != nil {
		return fmt.Errorf("create run %s: %w", r.ID, err)
	}
	err = s.inTx(ctx, func(tx *wtx) error {
		err := insertNew(ctx, tx, "id already taken", `INSERT INTO runs (`+runColumns+`)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (id) DO NOTHING`,
			r.ID, r.Goal, r.Status, r.Model, r.Workspace, r.Mode, r.BudgetUSD, r.MaxTokens,
			r.MaxParallel, r.NodeTimeout, r.Result, r.Error, created, updated, r.Queue, r.TraceParent)
		if err != nil || writeNodes == nil {
			return err
		}
		return writeNodes(tx)
	})
	if err != nil {
		return fmt.Errorf("create run %s: %w", r.ID, err)
	}
	return nil
}

// GetRun returns the run with id, ErrNotFound if there is none.
func (s *Store) GetRun(ctx context.Context, id string) (store.Run, error) {
	row := s.read.QueryRowContext(ctx, `SELECT `+runColumns+` FROM runs WHERE id = ?`, id)
	r, err := scanRun(row)
	if errors.Is(err, sql.ErrNoRows) {
		return store.Run{}, fmt.Errorf("get run %s: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return store.Run{}, fmt.Errorf("get run %s: %w", id, err)
	}
	return r, nil
}

// ListRuns returns runs by creation time, newest first (ties by id,
// descending); limit <= 0 means all.
func (s *Store) ListRuns(ctx context.Context, limit int) ([]store.Run, error) {
	out, err := listNewest(ctx, s.read, `SELECT `+runColumns+` FROM runs ORDER BY created_at DESC, id DESC`, limit, scanRun)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	return out, nil
}

// updateRun replaces every column of the run row but id and created_at
// inside tx and advances updated_at to now (by one nanosecond when the
// stored value is not earlier, so it strictly increases like a session's).
// ErrNotFound when the run does not exist; ErrConflict when it is complete
// and r would change its status: a complete run stays complete.
func updateRun(ctx context.Context, tx *wtx, r *store.Run, now int64) error {
	res, err := tx.ExecContext(ctx, `UPDATE runs SET goal = ?, status = ?, model = ?,
		workspace = ?, mode = ?, budget_usd = ?, max_tokens = ?, max_parallel = ?,
		node_timeout_ms = ?, result = ?, error = ?, queue = ?, `+touch+`
		WHERE id = ? AND (status <> 'complete' OR ? = 'complete')`,
		r.Goal, r.Status, r.Model, r.Workspace, r.Mode, r.BudgetUSD, r.MaxTokens, r.MaxParallel,
		r.NodeTimeout, r.Result, r.Error, r.Queue, now, now, r.ID, r.Status)
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		if err := requireRun(ctx, tx, r.ID); err != nil {
			return err
		}
		return fmt.Errorf("run %s is complete, refusing to mark it %s: %w", r.ID, r.Status, store.ErrConflict)
	}
	return nil
}

// requireRun returns ErrNotFound unless the run exists; q is the write
// transaction or the read pool.
func requireRun[R scanner](ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) R
}, id string) error {
	var one int
	err := q.QueryRowContext(ctx, `SELECT 1 FROM runs WHERE id = ?`, id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("no such run %s: %w", id, store.ErrNotFound)
	}
	return err
}

func scanRun(sc scanner) (store.Run, error) {
	var (
		r                store.Run
		created, updated int64
	)
	err := sc.Scan(&r.ID, &r.Goal, &r.Status, &r.Model, &r.Workspace, &r.Mode, &r.BudgetUSD,
		&r.MaxTokens, &r.MaxParallel, &r.NodeTimeout, &r.Result, &r.Error, &created, &updated, &r.Queue, &r.TraceParent)
	if err != nil {
		return store.Run{}, err
	}
	r.CreatedAt = fromNanos(created)
	r.UpdatedAt = fromNanos(updated)
	return r, nil
}
