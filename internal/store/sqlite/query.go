package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/arbor-run/arbor/internal/store"
)

// insertNew runs an INSERT … ON CONFLICT DO NOTHING and fails with
// store.ErrConflict (saying what) when the row already existed.
func insertNew(ctx context.Context, tx *wtx, what, query string, args ...any) error {
	res, err := tx.ExecContext(ctx, query, args...)
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("%s: %w", what, store.ErrConflict)
	}
	return nil
}

// listNewest runs an ordered SELECT of args with an optional LIMIT
// (limit <= 0 means all) on the read pool and scans every row.
func listNewest[T any](ctx context.Context, db *sql.DB, query string, limit int, scan func(scanner) (T, error), args ...any) ([]T, error) {
	if limit > 0 {
		query += ` LIMIT ?`
		args = append(args, limit)
	}
	rows, err := db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
