package cli_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/store/postgres/pgtest"
)

// TestRunAndTreeOnPostgres runs the offline tree demo with the built
// binary on a PostgreSQL store given with --store, then reads it back with
// tree, runs and sessions from other processes.
func TestRunAndTreeOnPostgres(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dsn := pgtest.DSN(t)
	script, err := filepath.Abs("../../examples/tree.yaml")
	if err != nil {
		t.Fatal(err)
	}
	o := e.run("run", "--store", dsn, "--model", "script:"+script, "--max-parallel", "1", "Which tree should we plant in the courtyard?")
	if o.code != 0 || !strings.HasPrefix(o.stdout, "Plant a pine.") {
		t.Fatalf("run: exit %d stdout %q\n%s", o.code, o.stdout, o.stderr)
	}
	id := runID(t, o.stderr)

	o = e.run("tree", id, "--json", "--store", dsn)
	var shown treeShown
	if err := json.Unmarshal([]byte(o.stdout), &shown); err != nil || len(shown.Nodes) != 4 {
		t.Fatalf("tree --json: %v %d\n%s%s", err, len(shown.Nodes), o.stdout, o.stderr)
	}
	if shown.Run.Status != "complete" || !strings.HasPrefix(shown.Run.Result, "Plant a pine.") {
		t.Fatalf("run as stored: %+v", shown.Run)
	}
	for _, n := range shown.Nodes {
		if n.State != "complete" {
			t.Fatalf("#%d is %s", n.ID, n.State)
		}
	}
	if o := e.run("tree", id, "--store", dsn); !strings.Contains(o.stdout, "#4 [complete]") {
		t.Fatalf("tree:\n%s%s", o.stdout, o.stderr)
	}
	if o := e.run("runs", "--store", dsn); o.code != 0 || !strings.Contains(o.stdout, id) {
		t.Fatalf("runs:\n%s%s", o.stdout, o.stderr)
	}
	// Nothing of it went to the default SQLite file.
	if o := e.run("runs"); o.code != 0 || strings.Contains(o.stdout, id) {
		t.Fatalf("runs on the default file: %d\n%s", o.code, o.stdout)
	}
	e.vars = append(e.vars, "ARBOR_STORE="+dsn)
	if s := e.show(rootSession(id)); len(s.Messages) == 0 || s.Session.RunID != id {
		t.Fatalf("root session: %+v, %d messages", s.Session, len(s.Messages))
	}
}
