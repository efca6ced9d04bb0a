package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

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
	if len(nodes) > 0 {
		if err := store.NodesOf(r.ID, nodes); err != nil {
			return fmt.Errorf("create run %s: %w", r.ID, err)
		}
		// The run and its nodes in one transaction of their own: a taken
		// id fails it before a node is written.
		return s.inTx(ctx, func(tx pgx.Tx) error {
			if err := s.CreateRunTx(ctx, tx, r); err != nil {
				return err
			}
			return s.CommitTx(ctx, tx, nil, nodes...)
		})
	}
	// One statement: a transaction of one round trip, perhaps shared
	// with other writes (inBatch). A taken id inserts nothing.
	args, err := runArgs(r)
	if err == nil {
		err = s.inBatch(ctx, func(b *pgx.Batch) { b.Queue(insertRunSQL, args...) },
			func(br pgx.BatchResults) error {
				tag, err := br.Exec()
				if err == nil && tag.RowsAffected() == 0 {
					err = fmt.Errorf("id already taken: %w", store.ErrConflict)
				}
				return err
			})
	}
	if err != nil {
		return fmt.Errorf("create run %s: %w", r.ID, err)
	}
	return nil
}

// CreateRunTx is CreateRun on the caller's transaction: with CommitTx of
// its root and a job inserted on tx (cluster.Submit), a new run and its
// first work exist together or not at all.
func (s *Store) CreateRunTx(ctx context.Context, tx pgx.Tx, r store.Run) error {
	args, err := runArgs(r)
	if err == nil {
		err = insertNew(ctx, tx, "id already taken", insertRunSQL, args...)
	}
	if err != nil {
		return fmt.Errorf("create run %s: %w", r.ID, err)
	}
	return nil
}

// insertRunSQL inserts a run row from runArgs; it inserts nothing when
// the id is taken.
const insertRunSQL = `INSERT INTO runs (` + runColumns + `)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
	ON CONFLICT (id) DO NOTHING`

// runArgs validates a new run and returns the values insertRunSQL binds:
// an empty Status becomes running, a zero CreatedAt or UpdatedAt now.
func runArgs(r store.Run) ([]any, error) {
	if r.Status == "" {
		r.Status = store.RunRunning
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	now := time.Now()
	created, err := nanos(r.CreatedAt, now)
	if err != nil {
		return nil, fmt.Errorf("created_at: %w", err)
	}
	updated, err := nanos(r.UpdatedAt, now)
	if err != nil {
		return nil, fmt.Errorf("updated_at: %w", err)
	}
	return []any{r.ID, r.Goal, r.Status, r.Model, r.Workspace, r.Mode, r.BudgetUSD, r.MaxTokens,
		r.MaxParallel, r.NodeTimeout, r.Result, r.Error, created, updated, r.Queue, r.TraceParent}, nil
}

// GetRun returns the run with id, ErrNotFound if there is none.
func (s *Store) GetRun(ctx context.Context, id string) (store.Run, error) {
	r, err := scanRun(s.pool.QueryRow(ctx, `SELECT `+runColumns+` FROM runs WHERE id = $1`, id))
	if errors.Is(err, pgx.ErrNoRows) {
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
	out, err := listNewest(ctx, s, `SELECT `+runColumns+` FROM runs ORDER BY created_at DESC, id DESC`, limit, scanRun)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	return out, nil
}

// updateRunSQL replaces every column of the run row but id and created_at
// and advances updated_at to now (strictly, like a session's). It matches
// no row when the run is complete and the new status is not: a complete
// run stays complete. A concurrent commit that completes the run holds the
// row until it commits, and the condition is then re-checked on the
// complete row.
const updateRunSQL = `UPDATE runs SET goal = $1, status = $2, model = $3,
	workspace = $4, mode = $5, budget_usd = $6, max_tokens = $7, max_parallel = $8,
	node_timeout_ms = $9, result = $10, error = $11, queue = $14, ` + "updated_at = CASE WHEN updated_at < $12 THEN $12 ELSE updated_at + 1 END" + `
	WHERE id = $13 AND (status <> 'complete' OR $2 = 'complete')`

// updateRunChecked is updateRunSQL failing with a division by zero
// (refused) when it matched no row, so that a refused update undoes the
// rest of its transaction without a round trip to look at the count
// first.
const updateRunChecked = `WITH updated AS (` + updateRunSQL + ` RETURNING 1)
	SELECT 1 / count(*) FROM updated`

// refused reports the error of updateRunChecked matching no row.
func refused(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "22012"
}

func updateRunArgs(r *store.Run, now int64) []any {
	return []any{r.Goal, string(r.Status), r.Model, r.Workspace, r.Mode, r.BudgetUSD, r.MaxTokens, r.MaxParallel,
		r.NodeTimeout, r.Result, r.Error, now, r.ID, r.Queue}
}

// existingRuns selects which of the ids ($1) are runs.
const existingRuns = `SELECT id FROM runs WHERE id = ANY($1)`

// querier is a transaction or the pool.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// requireRuns returns ErrNotFound, naming the first missing one, unless
// every run of ids exists.
func requireRuns(ctx context.Context, q querier, ids []string) error {
	rows, err := q.Query(ctx, existingRuns, ids)
	if err != nil {
		return err
	}
	return missingRun(rows, ids)
}

// missingRun reads the result of existingRuns: ErrNotFound naming the
// first of ids that is not a run.
func missingRun(rows pgx.Rows, ids []string) error {
	found, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	for _, id := range ids {
		if !slices.Contains(found, id) {
			return fmt.Errorf("no such run %s: %w", id, store.ErrNotFound)
		}
	}
	return nil
}

func scanRun(row pgx.Row) (store.Run, error) {
	var (
		r                store.Run
		created, updated int64
	)
	err := row.Scan(&r.ID, &r.Goal, &r.Status, &r.Model, &r.Workspace, &r.Mode, &r.BudgetUSD,
		&r.MaxTokens, &r.MaxParallel, &r.NodeTimeout, &r.Result, &r.Error, &created, &updated, &r.Queue, &r.TraceParent)
	if err != nil {
		return store.Run{}, err
	}
	r.CreatedAt = fromNanos(created)
	r.UpdatedAt = fromNanos(updated)
	return r, nil
}
