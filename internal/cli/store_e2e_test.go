package cli_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/tree/treetest"
)

// TestReadingCommandsNeedTheStore: the commands that work on what is
// stored refuse a SQLite store that --store or ARBOR_STORE names and that
// does not exist (exit 2, naming it) and create nothing. Before, they
// created the directory and an empty database, and arbor runs showed an
// empty table as if the runs were lost. A command that creates work still
// creates the store, and the default store, not written yet, is no
// misspelling.
func TestReadingCommandsNeedTheStore(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	missing := filepath.Join(e.home, "typo", "arbr.db")
	refused := func(o outcome) bool {
		return o.code == 2 && strings.Contains(o.stderr, "store "+missing+" does not exist")
	}
	for _, args := range [][]string{
		{"runs"}, {"tree", "R"}, {"sessions", "list"}, {"sessions", "show", "S"},
		{"answer", "R", "#2", "yes"}, {"stop", "R"}, {"trace", "R"}, {"resume", "R"},
	} {
		if o := e.run(append(args, "--store", missing)...); !refused(o) {
			t.Fatalf("%q --store %s: exit %d\n%s", args, missing, o.code, o.stderr)
		}
	}
	byEnv := *e
	byEnv.vars = append(slices.Clone(e.vars), "ARBOR_STORE="+missing)
	if o := byEnv.run("runs"); !refused(o) {
		t.Fatalf("runs with ARBOR_STORE=%s: exit %d\n%s", missing, o.code, o.stderr)
	}
	if _, err := os.Stat(filepath.Dir(missing)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the commands that only read created %s: %v", filepath.Dir(missing), err)
	}

	srv := llmtest.NewServer(llmtest.Turn{Text: "hello"})
	defer srv.Close()
	model := e.useProvider("anthropic", srv.URL)
	if o := e.run("headless", "--protocol", "stream-json", "--store", missing, "--model", model, "say hello"); o.code != 0 {
		t.Fatalf("headless --store %s: exit %d\n%s", missing, o.code, o.stderr)
	}
	if o := e.run("sessions", "list", "--store", missing); o.code != 0 || !strings.Contains(o.stdout, "anthropic/claude-test") {
		t.Fatalf("sessions list of the store headless created: exit %d, stdout %q\n%s", o.code, o.stdout, o.stderr)
	}
	if o := e.run("runs"); o.code != 0 {
		t.Fatalf("runs on the default store, not written yet: exit %d\n%s", o.code, o.stderr)
	}
}

// TestSessionsShowOfARunID: arbor sessions show given a run's id says that
// it names a run and what the run's sessions are called, with the run's
// own; before, it said "get session RUNID: not found". An id naming
// nothing is still not found.
func TestSessionsShowOfARunID(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv := llmtest.NewServerFunc(treetest.Responder(treetest.Script{1: {treetest.Complete("done")}}))
	defer srv.Close()
	model := e.useProvider("anthropic", srv.URL)
	o := e.run("run", "--model", model, "Say done")
	if o.code != 0 {
		t.Fatalf("run: exit %d\n%s", o.code, o.stderr)
	}
	run := runID(t, o.stderr)
	o = e.run("sessions", "show", run)
	want := run + " is a run, not a session: the sessions of a run's nodes are named " + run + ".N (" + run + ".1 for its root); this run's are " + run + ".1"
	if o.code != 1 || !strings.Contains(o.stderr, want) {
		t.Fatalf("sessions show %s: exit %d\n%s\nwant the line to say %q", run, o.code, o.stderr, want)
	}
	if o := e.run("sessions", "show", run+".1"); o.code != 0 || !strings.Contains(o.stdout, "session "+run+".1") {
		t.Fatalf("sessions show %s.1: exit %d\n%s", run, o.code, o.stderr)
	}
	if o := e.run("sessions", "show", "nothing-"+run); o.code != 1 || !strings.Contains(o.stderr, "not found") || strings.Contains(o.stderr, "is a run") {
		t.Fatalf("sessions show of an unknown id: exit %d\n%s", o.code, o.stderr)
	}
}
