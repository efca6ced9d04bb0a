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
