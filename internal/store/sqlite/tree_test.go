package sqlite

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

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
	old := migratedBefore(t, path, "0002_tree.sql")
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
		(?, ?, 0, 0, ?, '', '', '', 'null', '', '', '', 'null', '', '', '', '', '', ?, '', '', 0, 0, '', '', NULL, NULL, 0, 0, '', '', 0)`
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
		if err := b.writeExec(insert, tc.run, tc.id, tc.kind, tc.hasDraft); err == nil {
			t.Fatalf("%s: the database accepted the row", tc.name)
		}
	}
	if err := b.writeExec(insert, "r1", 1, "goal", 1); err != nil {
		t.Fatalf("a well-formed row was refused: %v", err)
	}
	n, err := b.st.GetNode(b.ctx, "r1", 1)
	must(t, err)
	if !n.HasDraft || n.BlockedBy != nil || n.Options != nil {
		t.Fatalf("node = %+v, want HasDraft and nil slices", n)
	}
}

// TestMigrateSessionOwners upgrades a file written before sessions recorded
// their owning node: node sessions get their run and node from the nodes
// that name them (or whose "<run>.<node>" id they carry); conversations,
// a hosted run's main session among them, stay unowned.
func TestMigrateSessionOwners(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "arbor.db")
	old := migratedBefore(t, path, "0008_session_owner.sql")
	exec := func(q string, args ...any) {
		t.Helper()
		_, err := old.ExecContext(t.Context(), q, args...)
		must(t, err)
	}
	for _, run := range []string{"r1", "h1"} {
		exec(`INSERT INTO runs (id, goal, status, model, workspace, mode, budget_usd, max_tokens, max_parallel,
			node_timeout_ms, result, error, created_at, updated_at)
			VALUES (?, '', 'interrupted', '', '', '', 0, 0, 0, 0, '', '', 1, 1)`, run)
	}
	for _, n := range []struct {
		run     string
		id      int64
		kind    string
		session string
	}{
		{"r1", 1, "goal", "r1.1"},
		{"r1", 2, "task", ""}, // activated by an older arbor: its session is "r1.2"
		{"r1", 3, "ask", ""},
		{"h1", 1, "host", "h1"},
		{"h1", 2, "task", "h1.2"},
	} {
		exec(`INSERT INTO nodes (run_id, id, parent_id, kind, spawn, goal, prompt, blocked_by, returns,
			context_query, question, options, default_answer, state, result, error, draft, has_draft,
			context, session_id, attempts, synthesized, notice, created_at, updated_at)
			VALUES (?, ?, 0, ?, '', '', '', 'null', '', '', '', 'null', '', 'active', '', '', '', 0, '', ?, 0, 0, '', 1, 1)`,
			n.run, n.id, n.kind, n.session)
	}
	for _, id := range []string{"r1.1", "r1.2", "h1", "h1.2", "conv.5", "r1.3"} {
		exec(`INSERT INTO sessions (id, title, model, workspace, status, created_at, updated_at)
			VALUES (?, '', '', '', 'idle', 1, 1)`, id)
	}
	must(t, old.Close())

	st := openAt(t, path)
	for id, want := range map[string]store.Session{
		"r1.1":   {RunID: "r1", NodeID: 1},
		"r1.2":   {RunID: "r1", NodeID: 2},
		"h1.2":   {RunID: "h1", NodeID: 2},
		"h1":     {}, // the hosted run's main agent: a conversation
		"conv.5": {}, // looks like a node's id, but no node names it
		"r1.3":   {}, // an ask node has no agent session
	} {
		got, err := st.GetSession(t.Context(), id)
		must(t, err)
		if got.RunID != want.RunID || got.NodeID != want.NodeID {
			t.Errorf("session %s owned by run %q node %d, want run %q node %d", id, got.RunID, got.NodeID, want.RunID, want.NodeID)
		}
	}
}

// TestNodeWritesOfChangedColumns: after the first write of a node, its
// next writes update only the columns that changed. A row another Store
// (another process) wrote meanwhile, and a write that was rolled back,
// must still leave exactly the last committed node.
func TestNodeWritesOfChangedColumns(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "arbor.db")
	a, b := openAt(t, path), openAt(t, path)
	ctx := t.Context()
	must(t, a.CreateRun(ctx, store.Run{ID: "r1"}))
	n := store.Node{RunID: "r1", ID: 1, Kind: "goal", Goal: "g", Prompt: "first", State: "pending"}
	must(t, a.Commit(ctx, nil, n))
	want := func(st *Store, w store.Node) {
		t.Helper()
		got, err := st.GetNode(ctx, "r1", 1)
		must(t, err)
		if got.Goal != w.Goal || got.Prompt != w.Prompt || got.State != w.State || got.Result != w.Result {
			t.Fatalf("node = goal %q prompt %q state %q result %q, want %q %q %q %q",
				got.Goal, got.Prompt, got.State, got.Result, w.Goal, w.Prompt, w.State, w.Result)
		}
	}
	updated := func() int64 {
		t.Helper()
		got, err := a.GetNode(ctx, "r1", 1)
		must(t, err)
		return got.UpdatedAt.UnixNano()
	}

	n.State = "active" // one column: a's cached row
	must(t, a.Commit(ctx, nil, n))
	want(a, n)
	before := updated()

	other := n // another process rewrites the prompt
	other.Prompt = "rewritten"
	must(t, b.Commit(ctx, nil, other))
	want(a, other)
	n.State = "complete" // a still thinks the prompt is "first"
	must(t, a.Commit(ctx, nil, n))
	want(a, n)
	if after := updated(); after <= before {
		t.Fatalf("updated_at went from %d to %d", before, after)
	}

	// A commit whose second node fails rolls the first back with it.
	n2 := n
	n2.Result = "rolled back"
	err := a.Commit(ctx, nil, n2, store.Node{RunID: "no-such-run", ID: 1, Kind: "goal"})
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("commit with a node of an unknown run: %v, want ErrNotFound", err)
	}
	want(a, n)
	n.Result = "rolled back" // the same values again: they must be written
	must(t, a.Commit(ctx, nil, n))
	want(a, n)
	want(b, n)
}

// TestEncodeIDs: blocked_by is encoded by hand as encoding/json would.
func TestEncodeIDs(t *testing.T) {
	t.Parallel()
	for _, ids := range [][]int64{nil, {}, {1}, {2, 30, -4, 1 << 62}} {
		want, err := json.Marshal(ids)
		must(t, err)
		if got := encodeIDs(ids); got != string(want) {
			t.Errorf("encodeIDs(%v) = %s, want %s", ids, got, want)
		}
	}
}

// TestWriterForgetsEndedNodes: the writer remembers the rows of the nodes
// that have not ended (for updates of their changed columns) and forgets
// a node once a committed write ended it; a node written after it ended
// is written whole and stays right.
func TestWriterForgetsEndedNodes(t *testing.T) {
	t.Parallel()
	st := openAt(t, filepath.Join(t.TempDir(), "arbor.db"))
	ctx := t.Context()
	must(t, st.CreateRun(ctx, store.Run{ID: "r1"}))
	nodes := make([]store.Node, 4)
	for i := range nodes {
		nodes[i] = store.Node{RunID: "r1", ID: int64(i + 1), Kind: "task", Goal: "g", State: "pending"}
	}
	nodes[0].Kind = "goal"
	must(t, st.Commit(ctx, nil, nodes...))
	remembered := func(want int) {
		t.Helper()
		if got := len(st.w.nodes.rows.m); got != want {
			t.Fatalf("the writer remembers %d nodes, want %d", got, want)
		}
	}
	remembered(4)
	nodes[1].State, nodes[2].State, nodes[3].State = "complete", "failed", "active"
	must(t, st.Commit(ctx, nil, nodes[1:]...))
	remembered(2)
	nodes[1].Result = "written after the end"
	must(t, st.Commit(ctx, nil, nodes[1]))
	remembered(2)
	got, err := st.GetNode(ctx, "r1", 2)
	must(t, err)
	if got.State != "complete" || got.Result != "written after the end" {
		t.Fatalf("#2 is %s with result %q", got.State, got.Result)
	}
}

// TestCommitAsyncKeepsWhatItWasGiven: the nodes a queued commit writes
// are the ones it was given, even when the caller changes them before
// the commit runs.
func TestCommitAsyncKeepsWhatItWasGiven(t *testing.T) {
	t.Parallel()
	b := setup(t)
	must(t, b.st.CreateRun(b.ctx, store.Run{ID: "r1"}))
	g := holdWriter(t, b)
	nodes := []store.Node{{RunID: "r1", ID: 1, Kind: "goal", Goal: "given", State: "pending", BlockedBy: []int64{}}}
	wait := b.st.CommitAsync(b.ctx, nil, nodes...)
	nodes[0].Goal, nodes[0].BlockedBy = "changed", append(nodes[0].BlockedBy, 9)
	g.open(t)
	must(t, wait())
	got, err := b.st.GetNode(b.ctx, "r1", 1)
	must(t, err)
	if got.Goal != "given" || len(got.BlockedBy) != 0 {
		t.Fatalf("stored goal %q, blocked_by %v; want what the commit was given", got.Goal, got.BlockedBy)
	}
}

// TestNodeInsertWritesEmptyColumnsAsLiterals: a new node's empty strings
// and NULLs are in its insert statement, not bound, and read back as they
// were; nodes of the same shape share one statement.
func TestNodeInsertWritesEmptyColumnsAsLiterals(t *testing.T) {
	t.Parallel()
	b := setup(t)
	must(t, b.st.CreateRun(b.ctx, store.Run{ID: "r1"}))
	started := time.Unix(1_700_000_000, 5).UTC()
	sparse := store.Node{RunID: "r1", ID: 1, Kind: "goal", Goal: "g", State: "pending"}
	full := store.Node{RunID: "r1", ID: 2, ParentID: 1, Kind: "task", Spawn: "s", Goal: "g2", Prompt: "p",
		BlockedBy: []int64{1}, Returns: "r", ContextQuery: "q", Question: "?", Options: []string{"a"}, Default: "a",
		State: "active", Result: "res", Error: "e", Draft: "d", HasDraft: true, Context: "c", SessionID: "r1.2",
		Attempts: 2, Synthesized: 1, Notice: "n", CallID: "call", StartedAt: &started, BudgetUSD: 1.5, MaxTokens: 9,
		Model: "m", Runner: "w"}
	for _, n := range []store.Node{sparse, full} {
		v, err := newNodeVals(n, time.Now())
		must(t, err)
		args := v.args()
		q, vals := b.st.w.nodes.insertStatement(args)
		if got := strings.Count(q, "?"); got != len(vals) {
			t.Fatalf("node %d: %d placeholders for %d values: %s", n.ID, got, len(vals), q)
		}
		for _, v := range vals {
			if s, ok := v.(string); v == nil || ok && s == "" {
				t.Fatalf("node %d: binds an empty value: %#v", n.ID, vals)
			}
		}
		if n.ID == 1 && len(vals) >= len(args)-10 {
			t.Fatalf("node 1 binds %d of %d values", len(vals), len(args))
		}
		must(t, b.st.Commit(b.ctx, nil, n))
		got, err := b.st.GetNode(b.ctx, "r1", n.ID)
		must(t, err)
		got.CreatedAt, got.UpdatedAt = time.Time{}, time.Time{}
		if !reflect.DeepEqual(got, n) {
			t.Fatalf("node %d read back as\n%+v\nwant\n%+v", n.ID, got, n)
		}
	}
	third := sparse
	third.ID = 3
	must(t, b.st.Commit(b.ctx, nil, third))
	if len(b.st.w.nodes.inserts) != 2 {
		t.Fatalf("%d insert statements for nodes of two shapes", len(b.st.w.nodes.inserts))
	}
}

// TestMigrateConversationTitles: 0016 clears the front ends' placeholder
// titles of stored conversations, so their next prompt names them, and
// keeps every other title: a node's, and a conversation's own.
func TestMigrateConversationTitles(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "arbor.db")
	old := migratedBefore(t, path, "0016_conversation_titles.sql")
	for _, s := range []struct {
		id, title string
		node      any
	}{{"c1", "headless", nil}, {"c2", "stream-json", nil}, {"c3", "acp", 0}, {"c4", "fix the login page", nil}, {"r1.2", "headless", 2}} {
		_, err := old.ExecContext(t.Context(), `INSERT INTO sessions (id, title, model, workspace, status, created_at, updated_at, node_id)
			VALUES (?, ?, '', '', 'idle', 1, 1, ?)`, s.id, s.title, s.node)
		must(t, err)
	}
	must(t, old.Close())
	st := openAt(t, path)
	for id, want := range map[string]string{"c1": "", "c2": "", "c3": "", "c4": "fix the login page", "r1.2": "headless"} {
		got, err := st.GetSession(t.Context(), id)
		must(t, err)
		if got.Title != want {
			t.Errorf("session %s titled %q after the migration, want %q", id, got.Title, want)
		}
	}
}
