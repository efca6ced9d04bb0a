package sqlite

import (
	"net/url"
	"path/filepath"
	"testing"

	"github.com/arbor-run/arbor/internal/store"
)

// TestMigrateTreeOntoVersion1 upgrades a file written by an arbor that only
// knew migration 0001: its sessions are kept and runs can be stored.
func TestMigrateTreeOntoVersion1(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "arbor.db")
	ms, err := loadMigrations(migrationFiles)
	must(t, err)
	if len(ms) < 2 || ms[1].name != "0002_tree.sql" {
		t.Fatalf("migration 2 is %+v, want 0002_tree.sql", ms[1:])
	}
	old, err := openDB(t.Context(), path, url.Values{"_txlock": {"immediate"}, "_foreign_keys": {"1"}}, 1)
	must(t, err)
	must(t, migrate(t.Context(), old, ms[:1]))
	_, err = old.ExecContext(t.Context(), `INSERT INTO sessions (id, title, model, workspace, status, created_at, updated_at)
		VALUES ('s1', 'kept', '', '', 'idle', 1, 1)`)
	must(t, err)
	must(t, old.Close())

	st := openAt(t, path)
	if v, err := schemaVersion(t.Context(), st.read); err != nil || v != len(ms) {
		t.Fatalf("schema version = %d, %v; want %d", v, err, len(ms))
	}
	sess, err := st.GetSession(t.Context(), "s1")
	must(t, err)
	if sess.Title != "kept" {
		t.Fatalf("session after upgrade = %+v", sess)
	}
	must(t, st.CreateRun(t.Context(), store.Run{ID: "r1"}))
	must(t, st.Commit(t.Context(), nil, store.Node{RunID: "r1", ID: 1, Kind: "goal"}))
	if _, err := st.GetNode(t.Context(), "r1", 1); err != nil {
		t.Fatalf("node after upgrade: %v", err)
	}
}

// TestTreeSchemaRefusesStrayRows pins the constraints that back the Go
// validation: a writer that bypasses Commit still cannot store a node of an
// unknown run, an unknown kind or a non-boolean has_draft.
func TestTreeSchemaRefusesStrayRows(t *testing.T) {
	t.Parallel()
	b := setup(t)
	must(t, b.st.CreateRun(b.ctx, store.Run{ID: "r1"}))
	insert := `INSERT INTO nodes (` + nodeColumns + `) VALUES
		(?, ?, 0, 0, ?, '', '', '', 'null', '', '', '', 'null', '', '', '', '', '', ?, '', '', 0, 0, '', '', NULL, NULL, 0, 0, 0)`
	for _, tc := range []struct {
		name     string
		run      string
		id       int64
		kind     string
		hasDraft int
	}{
		{"unknown run", "nope", 1, "goal", 0},
		{"id zero", "r1", 0, "goal", 0},
		{"unknown kind", "r1", 1, "bogus", 0},
		{"has_draft two", "r1", 1, "goal", 2},
	} {
		if _, err := b.st.write.ExecContext(b.ctx, insert, tc.run, tc.id, tc.kind, tc.hasDraft); err == nil {
			t.Fatalf("%s: the database accepted the row", tc.name)
		}
	}
	if _, err := b.st.write.ExecContext(b.ctx, insert, "r1", 1, "goal", 1); err != nil {
		t.Fatalf("a well-formed row was refused: %v", err)
	}
	n, err := b.st.GetNode(b.ctx, "r1", 1)
	must(t, err)
	if !n.HasDraft || n.BlockedBy != nil || n.Options != nil {
		t.Fatalf("node = %+v, want HasDraft and nil slices", n)
	}
}
