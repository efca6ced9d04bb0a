package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// ErrSchemaTooNew reports a schema migrated by a newer arbor than this
// one. Opening it would risk writing rows the newer schema does not expect.
var ErrSchemaTooNew = errors.New("database schema is newer than this arbor")

// migrationFiles holds the schema history: migrations/NNNN_name.sql,
// numbered from 1 without gaps. A released file is never edited; a change
// is a new file.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

type migration struct {
	version int
	name    string
	sql     string
}

// loadMigrations reads migrations/*.sql from fsys and checks that their
// versions run 1, 2, 3… without gaps or duplicates.
func loadMigrations(fsys fs.FS) ([]migration, error) {
	names, err := fs.Glob(fsys, "migrations/*.sql")
	if err != nil {
		return nil, fmt.Errorf("list migrations: %w", err)
	}
	ms := make([]migration, 0, len(names))
	for i, name := range names {
		base := path.Base(name)
		num, _, ok := strings.Cut(strings.TrimSuffix(base, ".sql"), "_")
		if !ok {
			return nil, fmt.Errorf("migration %s: name is not NNNN_name.sql", base)
		}
		v, err := strconv.Atoi(num)
		if err != nil {
			return nil, fmt.Errorf("migration %s: name is not NNNN_name.sql: %w", base, err)
		}
		if v != i+1 {
			return nil, fmt.Errorf("migration %s: version %d, want %d (versions run from 1 without gaps)", base, v, i+1)
		}
		body, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, fmt.Errorf("read migration %s: %w", base, err)
		}
		ms = append(ms, migration{version: v, name: base, sql: string(body)})
	}
	return ms, nil
}

// lockMigrations takes, for the rest of tx, the advisory lock of the
// current schema's migrations: several processes opening a new schema at
// once queue here, and each migration is applied exactly once.
const lockMigrations = `SELECT pg_advisory_xact_lock(hashtext('arbor.migrate'), hashtext(current_schema()))`

// migrate brings the schema up to the last of ms, one transaction per
// migration, each under the advisory lock and re-reading the version.
func (s *Store) migrate(ctx context.Context, ms []migration) error {
	for {
		var done bool
		err := s.inTx(ctx, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, lockMigrations); err != nil {
				return fmt.Errorf("lock migrations: %w", err)
			}
			var schema *string
			if err := tx.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
				return err
			}
			if schema == nil {
				return errors.New("no schema to migrate: the search_path names none that exists")
			}
			if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
				version    BIGINT PRIMARY KEY,
				name       TEXT NOT NULL,
				applied_at BIGINT NOT NULL
			)`); err != nil {
				return fmt.Errorf("create schema_migrations: %w", err)
			}
			var v int
			if err := tx.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&v); err != nil {
				return fmt.Errorf("read schema version: %w", err)
			}
			if v > len(ms) {
				return fmt.Errorf("%w: schema %s is at version %d, this arbor knows versions up to %d; use a newer arbor", ErrSchemaTooNew, *schema, v, len(ms))
			}
			if v == len(ms) {
				done = true
				return nil
			}
			m := ms[v]
			// No arguments: pgx sends the file with the simple protocol,
			// which runs several statements.
			if _, err := tx.Exec(ctx, m.sql); err != nil {
				return fmt.Errorf("apply migration %s: %w", m.name, err)
			}
			_, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)`,
				m.version, m.name, time.Now().UnixNano())
			if err != nil {
				return fmt.Errorf("record migration %s: %w", m.name, err)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		if done {
			return nil
		}
	}
}
