package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strconv"
	"strings"
	"time"
)

// ErrSchemaTooNew reports a database migrated by a newer arbor than this
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
	fsys    fs.FS
	path    string // in fsys
}

// statements reads the migration's statements.
func (m migration) statements() (string, error) {
	b, err := fs.ReadFile(m.fsys, m.path)
	if err != nil {
		return "", fmt.Errorf("read migration %s: %w", m.name, err)
	}
	return string(b), nil
}

// loadMigrations lists migrations/*.sql of fsys and checks that their
// versions run 1, 2, 3… without gaps or duplicates. The statements are
// read when a migration is applied: a store that is at the current
// version (every start but a machine's first) reads none, where reading
// them all cost every session 37 KB of heap.
func loadMigrations(fsys fs.FS) ([]migration, error) {
	names, err := fs.Glob(fsys, "migrations/*.sql")
	if err != nil {
		return nil, fmt.Errorf("list migrations: %w", err)
	}
	// fs.Glob returns names sorted; with zero-padded numbers that is
	// version order, and the gap check below catches anything else.
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
		ms = append(ms, migration{version: v, name: base, fsys: fsys, path: name})
	}
	return ms, nil
}

// freshSchema is the schema a new file gets in one step instead of
// running every migration: the statements SQLite stored after all of
// them ran, as schemaDump (schema_test.go) reads them. Its first line
// names the migration it stands for. TestFreshSchemaIsCurrent keeps it
// so; go test -run TestFreshSchemaIsCurrent -update rewrites it after a
// new migration.
//
// Why: a new file took 10 ms to migrate, most of it SQLite parsing the
// whole schema again after every table a migration rebuilt; a new file is
// every first run on a machine and every store a test opens.
//
//go:embed schema.sql
var freshSchema string

// freshHeader starts the first line of schema.sql; the migration's file
// name follows it, then the end of the line or a space.
const freshHeader = "-- The schema after "

// freshFor returns the schema that brings a new file to the last of ms at
// once, or "" when fresh (schema.sql) stands for another migration and
// the migrations must run one by one.
func freshFor(ms []migration, fresh string) string {
	first, _, _ := strings.Cut(fresh, "\n")
	if len(ms) == 0 {
		return ""
	}
	rest, ok := strings.CutPrefix(first, freshHeader+ms[len(ms)-1].name)
	if !ok || (rest != "" && rest[0] != ' ') {
		return ""
	}
	return fresh
}

// migrate brings db up to the last of ms: a new file in one step
// (freshSchema), an older one by the migrations it lacks.
func migrate(ctx context.Context, db *sql.DB, ms []migration) error {
	return migrateWith(ctx, db, ms, freshFor(ms, freshSchema))
}

// migrateWith is migrate with the schema for a new file given, "" to run
// every migration. Each step runs in its own write transaction that first
// re-reads the version, so several processes opening the same new file at
// once apply every migration exactly once.
func migrateWith(ctx context.Context, db *sql.DB, ms []migration, fresh string) error {
	// The common case, a file already at this schema, is one read: no
	// write lock, which every process opening the file would otherwise
	// take in turn (a gateway starts hundreds).
	if v, err := schemaVersion(ctx, db); err == nil && v == len(ms) {
		return nil
	}
	for {
		var done bool
		err := inTx(ctx, db, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
				version    BIGINT PRIMARY KEY,
				name       TEXT NOT NULL,
				applied_at BIGINT NOT NULL
			)`); err != nil {
				return fmt.Errorf("create schema_migrations: %w", err)
			}
			v, err := schemaVersion(ctx, tx)
			if err != nil {
				return err
			}
			if v > len(ms) {
				return fmt.Errorf("%w: the file is at schema version %d, this arbor knows versions up to %d; use a newer arbor", ErrSchemaTooNew, v, len(ms))
			}
			if v == len(ms) {
				done = true
				return nil
			}
			if v == 0 && fresh != "" {
				done = true
				return applyFresh(ctx, tx, ms, fresh)
			}
			m := ms[v]
			stmts, err := m.statements()
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, stmts); err != nil {
				return fmt.Errorf("apply migration %s: %w", m.name, err)
			}
			return record(ctx, tx, m, time.Now().UnixNano())
		})
		if err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		if done {
			return nil
		}
	}
}

// applyFresh creates the schema of a new file at once and records every
// migration of ms as applied.
func applyFresh(ctx context.Context, tx *sql.Tx, ms []migration, fresh string) error {
	if _, err := tx.ExecContext(ctx, fresh); err != nil {
		return fmt.Errorf("create the schema of %s: %w", ms[len(ms)-1].name, err)
	}
	now := time.Now().UnixNano()
	for _, m := range ms {
		if err := record(ctx, tx, m, now); err != nil {
			return err
		}
	}
	return nil
}

// record notes m as applied at the given time.
func record(ctx context.Context, tx *sql.Tx, m migration, at int64) error {
	_, err := tx.ExecContext(ctx,
		`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`, m.version, m.name, at)
	if err != nil {
		return fmt.Errorf("record migration %s: %w", m.name, err)
	}
	return nil
}

type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// schemaVersion returns the highest applied migration, 0 for a new file.
func schemaVersion(ctx context.Context, q querier) (int, error) {
	var v int
	err := q.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&v)
	if err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	return v, nil
}
