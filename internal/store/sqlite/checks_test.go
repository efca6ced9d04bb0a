package sqlite

import (
	"database/sql"
	"fmt"
	"net/url"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/store"
)

// TestHotWritesBuildNoEphemeralTable runs the writes of a turn and of a
// tree transition and checks that none of the statements they prepared
// builds an ephemeral b-tree (a RETURNING clause, or a CHECK with an IN
// list of more than two values, each builds one per execution).
func TestHotWritesBuildNoEphemeralTable(t *testing.T) {
	t.Parallel()
	b := setup(t)
	must(t, b.st.CreateSession(b.ctx, store.Session{ID: "s1"}))
	_, err := b.st.SaveStep(b.ctx, store.Step{
		Create:   &store.Session{ID: "s2"},
		Messages: []llm.Message{llm.UserText("go"), {Role: llm.RoleAssistant, Parts: []llm.Part{llm.TextPart("done")}}},
		Usage:    &store.UsageRecord{Model: "m", Usage: llm.Usage{InputTokens: 3}},
		Status:   store.SessionIdle,
	})
	must(t, err)
	run := store.Run{ID: "r1", Goal: "g", Status: store.RunRunning, Model: "m", MaxParallel: 1}
	must(t, b.st.CreateRun(b.ctx, run))
	node := store.Node{RunID: "r1", ID: 1, Kind: "goal", Goal: "g", State: "active"}
	must(t, b.st.Commit(b.ctx, &run, node))
	node.State = "complete"
	run.Status = store.RunComplete
	must(t, b.st.Commit(b.ctx, &run, node))

	var checked int
	for query := range b.st.w.stmts {
		if !strings.ContainsAny(query, " ") || strings.HasPrefix(query, "SAVEPOINT") ||
			strings.HasPrefix(query, "RELEASE") || strings.HasPrefix(query, "ROLLBACK") {
			continue // COMMIT, BEGIN IMMEDIATE and the savepoints
		}
		checked++
		if n := ephemeralTables(t, b.st.read, query); n > 0 {
			t.Errorf("statement builds %d ephemeral tables per run:\n%s", n, query)
		}
	}
	if checked < 5 {
		t.Fatalf("checked %d statements; the writes above prepare more", checked)
	}
}

// ephemeralTables counts the OpenEphemeral instructions of query's program.
func ephemeralTables(t *testing.T, db *sql.DB, query string) int {
	t.Helper()
	args := make([]any, strings.Count(query, "?"))
	n := 0
	_, rows := queryAll(t, db, "EXPLAIN "+query, args...)
	for _, vals := range rows {
		if fmt.Sprint(vals[1]) == "OpenEphemeral" {
			n++
		}
	}
	return n
}

// queryAll runs query on db and returns its columns and every row.
func queryAll(t *testing.T, db *sql.DB, query string, args ...any) (cols []string, all [][]any) {
	t.Helper()
	rows, err := db.QueryContext(t.Context(), query, args...)
	must(t, err)
	defer rows.Close()
	cols, err = rows.Columns()
	must(t, err)
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		must(t, rows.Scan(ptrs...))
		all = append(all, vals)
	}
	must(t, rows.Err())
	return cols, all
}

// migratedBefore returns a connection to a new file at path migrated up
// to, not including, the migration named name (as an older arbor left it).
func migratedBefore(t *testing.T, path, name string) *sql.DB {
	t.Helper()
	ms, err := loadMigrations(migrationFiles)
	must(t, err)
	i := slices.IndexFunc(ms, func(m migration) bool { return m.name == name })
	if i < 0 {
		t.Fatalf("no migration %s", name)
	}
	old, err := openDB(t.Context(), path, url.Values{"_txlock": {"immediate"}, "_foreign_keys": {"1"}}, 1)
	must(t, err)
	must(t, migrate(t.Context(), old, ms[:i]))
	return old
}

// TestMigrateChecksWithoutIn upgrades a file written before 0013, with
// sessions and runs that other rows reference: every row is kept as it
// was, every reference still holds, and the rebuilt constraints refuse
// what the old ones refused.
func TestMigrateChecksWithoutIn(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "arbor.db")
	old := migratedBefore(t, path, "0013_checks_without_in.sql")
	exec := func(q string, args ...any) {
		t.Helper()
		_, err := old.ExecContext(t.Context(), q, args...)
		must(t, err)
	}
	for k, status := range []string{"active", "idle", "interrupted", "failed"} {
		id := fmt.Sprintf("s%d", k)
		exec(`INSERT INTO sessions (id, title, model, workspace, status, created_at, updated_at, last_seq,
			input_tokens, cost_usd, cost_known, run_id, node_id)
			VALUES (?, 'title', 'm', '/w', ?, ?, ?, 2, 7, 0.5, ?, ?, ?)`,
			id, status, k+1, k+2, k%2 == 0, sql.NullString{String: "r0", Valid: k == 1}, sql.NullInt64{Int64: 1, Valid: k == 1})
		for seq := 1; seq <= 2; seq++ {
			exec(`INSERT INTO messages (session_id, seq, role, body, created_at) VALUES (?, ?, 'user', ?, 1)`,
				id, seq, fmt.Sprintf(`{"role":"user","parts":[{"type":"text","text":"%s/%d"}]}`, id, seq))
		}
		exec(`INSERT INTO usage (session_id, model, input_tokens, output_tokens, cache_read_tokens,
			cache_write_tokens, cost_usd, cost_known, created_at) VALUES (?, 'm', 7, 1, 0, 0, 0.5, TRUE, 1)`, id)
		exec(`INSERT INTO intents (session_id, call_id, tool, input, status, started_at) VALUES (?, 'c1', 'bash', '{}', 'started', 1)`, id)
		exec(`INSERT INTO compactions (session_id, up_to_seq, summary, created_at) VALUES (?, 1, 'sum', 1)`, id)
	}
	for k, status := range []string{"running", "complete", "failed", "cancelled", "budget_exhausted", "interrupted"} {
		run := fmt.Sprintf("r%d", k)
		exec(`INSERT INTO runs (id, goal, status, model, workspace, mode, budget_usd, max_tokens, max_parallel,
			node_timeout_ms, result, error, created_at, updated_at, queue)
			VALUES (?, 'goal', ?, 'm', '/w', 'auto', 1.5, 100, 4, 1000, 'res', '', ?, ?, 'q')`, run, status, k+1, k+2)
		for id, kind := range []string{"goal", "host", "task", "ask"} {
			exec(`INSERT INTO nodes (run_id, id, parent_id, kind, spawn, goal, prompt, blocked_by, returns,
				context_query, question, options, default_answer, state, result, error, draft, has_draft,
				context, session_id, attempts, synthesized, notice, created_at, updated_at, started_at,
				call_id, budget_usd, max_tokens, model, runner)
				VALUES (?, ?, 0, ?, 'spawn', 'g', 'p', '[1]', 'text', '', 'q?', '["a"]', 'a', 'done', 'r', '', 'd', ?,
				'ctx', 's1', 1, 0, '', 1, 2, 3, 'call', 0.25, 10, 'openai/x', 'claude-code')`,
				run, id+1, kind, id%2)
		}
	}
	tables := []string{"sessions", "messages", "usage", "intents", "compactions", "runs", "nodes"}
	before, columns := map[string][]string{}, map[string]string{}
	for _, tbl := range tables {
		before[tbl] = dumpTable(t, old, tbl, "*")
		cols, _ := queryAll(t, old, `SELECT * FROM `+tbl+` LIMIT 0`)
		columns[tbl] = strings.Join(cols, ", ") // later migrations add columns
	}
	must(t, old.Close())

	st := openAt(t, path)
	for _, tbl := range tables {
		if got := dumpTable(t, st.read, tbl, columns[tbl]); !reflect.DeepEqual(got, before[tbl]) {
			t.Errorf("table %s after the migration:\n%v\nwant\n%v", tbl, got, before[tbl])
		}
	}
	var broken int
	must(t, st.read.QueryRowContext(t.Context(), `SELECT COUNT(*) FROM pragma_foreign_key_check`).Scan(&broken))
	if broken != 0 {
		t.Fatalf("%d rows reference a missing parent after the migration", broken)
	}
	var indexes []string
	rows, err := st.read.QueryContext(t.Context(), `SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL ORDER BY name`)
	must(t, err)
	for rows.Next() {
		var name string
		must(t, rows.Scan(&name))
		indexes = append(indexes, name)
	}
	must(t, rows.Err())
	if want := []string{"compactions_session", "runs_created_at", "sessions_conversations", "sessions_created_at"}; !reflect.DeepEqual(indexes, want) {
		t.Fatalf("indexes after the migration = %v, want %v", indexes, want)
	}
	b := &testBundle{ctx: t.Context(), path: path, st: st}
	for name, q := range map[string]string{
		"session status": `UPDATE sessions SET status = 'bogus' WHERE id = 's0'`,
		"run status":     `UPDATE runs SET status = 'bogus' WHERE id = 'r0'`,
		"node kind":      `UPDATE nodes SET kind = 'bogus' WHERE run_id = 'r0' AND id = 1`,
		"has_draft":      `UPDATE nodes SET has_draft = 2 WHERE run_id = 'r0' AND id = 1`,
		"orphan message": `INSERT INTO messages (session_id, seq, role, body, created_at) VALUES ('nope', 1, 'user', '{}', 1)`,
		"orphan node": `INSERT INTO nodes (run_id, id, parent_id, kind, spawn, goal, prompt, blocked_by, returns,
			context_query, question, options, default_answer, state, result, error, draft, has_draft,
			context, session_id, attempts, synthesized, notice, created_at, updated_at)
			VALUES ('nope', 1, 0, 'goal', '', '', '', 'null', '', '', '', 'null', '', 'active', '', '', '', 0, '', '', 0, 0, '', 1, 1)`,
	} {
		if err := b.writeExec(q); err == nil {
			t.Errorf("%s: the migrated database accepted %s", name, q)
		}
	}
	if err := b.writeExec(`UPDATE sessions SET status = 'failed' WHERE id = 's0'`); err != nil {
		t.Fatalf("a valid status was refused: %v", err)
	}
}

// dumpTable returns every row of tbl, formatted, in primary key order.
func dumpTable(t *testing.T, db *sql.DB, tbl, columns string) []string {
	t.Helper()
	cols, rows := queryAll(t, db, `SELECT `+columns+` FROM `+tbl+` ORDER BY 1, 2`)
	var out []string
	for _, vals := range rows {
		out = append(out, fmt.Sprintf("%v %q", cols, vals))
	}
	if len(out) == 0 {
		t.Fatalf("table %s is empty: the test fills every table", tbl)
	}
	return out
}
