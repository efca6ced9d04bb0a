package cli_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/store/postgres/pgtest"
	"github.com/arbor-run/arbor/internal/tree/treetest"
)

type treeShown struct {
	Run   store.Run    `json:"run"`
	Nodes []store.Node `json:"nodes"`
}

// TestTreeRunWithAnswerFromAnotherShell runs a tree with the built binary,
// not on a terminal: the root splits the goal, an ask node waits until
// `arbor answer` (another process) answers it, a fork builds on both, and
// the root's synthesis goes to stdout.
func TestTreeRunWithAnswerFromAnotherShell(t *testing.T) {
	t.Parallel()
	treeRunWithAnswer(t, newEnv(t))
}

// TestTreeRunWithAnswerOnPostgres is the same run with every process on
// one PostgreSQL store (ARBOR_STORE), the answer's too.
func TestTreeRunWithAnswerOnPostgres(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.vars = append(e.vars, "ARBOR_STORE="+pgtest.DSN(t))
	treeRunWithAnswer(t, e)
	// --store wins over ARBOR_STORE: a SQLite file that does not exist is
	// refused by name, not the database read.
	other := filepath.Join(e.home, "other.db")
	if o := e.run("runs", "--store", other); o.code != 2 || !strings.Contains(o.stderr, other) || strings.Contains(o.stdout, "complete") {
		t.Fatalf("runs on a SQLite file: %d\n%s%s", o.code, o.stdout, o.stderr)
	}
}

func treeRunWithAnswer(t *testing.T, e *env) {
	t.Helper()
	srv := llmtest.NewServerFunc(treetest.Responder(treetest.Script{
		1: {
			treetest.Calls(
				treetest.Call("spawn", map[string]any{"goal": "Audit current REST API surface", "prompt": "Count endpoints."}),
				treetest.Call("ask", map[string]any{"question": "How many concurrent users do you serve?", "options": []any{"<1K", "1K-10K", "10K-100K"}, "blocked_by": []any{"#2"}}),
				treetest.Call("fork", map[string]any{"goal": "Comparative analysis", "prompt": "Compare.", "blocked_by": []any{"#2", "#3"}})),
			treetest.Complete("draft"),
			treetest.Complete("RECOMMENDATION: migrate the nested resources first"),
		},
		2: {treetest.Complete("47 endpoints, 12 heavily nested")},
		4: {treetest.Complete("GraphQL fits 10K-100K users")},
	}))
	defer srv.Close()
	model := e.useProvider("anthropic", srv.URL)

	c := e.cmd(context.Background(), "run", "--model", model, "Should we migrate our API from REST to GraphQL?")
	stderr, err := c.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	c.Stdout = &out
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	var lines []string
	sc := bufio.NewScanner(stderr)
	var run string
	for sc.Scan() {
		line := sc.Text()
		lines = append(lines, line)
		if run == "" {
			if m := runLine.FindStringSubmatch(line); m != nil {
				run = m[1]
			}
		}
		if strings.Contains(line, "answer with: arbor answer") {
			o := e.run("answer", run, "#3", "10K-100K")
			if o.code != 0 || !strings.Contains(o.stdout, "delivered to the running process") {
				t.Fatalf("answer: %d %q %q", o.code, o.stdout, o.stderr)
			}
		}
	}
	_, _ = io.Copy(io.Discard, stderr)
	if err := c.Wait(); err != nil {
		t.Fatalf("run: %v\n%s", err, strings.Join(lines, "\n"))
	}
	if strings.TrimSpace(out.String()) != "RECOMMENDATION: migrate the nested resources first" {
		t.Fatalf("stdout %q", out.String())
	}
	all := strings.Join(lines, "\n")
	for _, want := range []string{
		"#2 + pending task(spawn) Audit current REST API surface",
		"#3 + pending ask How many concurrent users do you serve? blocked_by=#2",
		"#4 + pending task(fork) Comparative analysis blocked_by=#2,#3",
		"#2 active → complete  task(spawn) Audit current REST API surface  result: 47 endpoints, 12 heavily nested",
		"#4 pending → active",
		"#1 synthesizing → complete",
		"run " + run + " complete",
	} {
		if !strings.Contains(all, want) {
			t.Fatalf("stderr lacks %q:\n%s", want, all)
		}
	}
	// The fork saw the audit and the answer.
	for _, req := range srv.Requests() {
		if treetest.NodeOf(req) == 4 && treetest.Turns(req) == 0 {
			first := req.Messages[0].Text()
			if !strings.Contains(first, "47 endpoints") || !strings.Contains(first, "10K-100K") {
				t.Fatalf("#4 context:\n%s", first)
			}
		}
	}
	o := e.run("tree", run, "--json")
	var shown treeShown
	if err := json.Unmarshal([]byte(o.stdout), &shown); err != nil || len(shown.Nodes) != 4 {
		t.Fatalf("tree --json: %v %d\n%s", err, len(shown.Nodes), o.stdout)
	}
	for _, n := range shown.Nodes {
		if n.State != "complete" {
			t.Fatalf("#%d is %s", n.ID, n.State)
		}
	}
	if o := e.run("tree", run); !strings.Contains(o.stdout, "#3 [complete] ask: How many concurrent users") {
		t.Fatalf("tree:\n%s", o.stdout)
	}
	if o := e.run("runs"); !strings.Contains(o.stdout, run) || !strings.Contains(o.stdout, "complete") {
		t.Fatalf("runs:\n%s", o.stdout)
	}
	if o := e.run("answer", run, "#3", "again"); o.code != 1 || !strings.Contains(o.stderr, "already complete") {
		t.Fatalf("answering twice: %d %s", o.code, o.stderr)
	}
	// An empty answer (an unset variable) is refused, not taken as a
	// decline; --decline says so and takes no text.
	for _, args := range [][]string{{"answer", run, "#3", ""}, {"answer", run, "#3", "  "}, {"answer", run, "#3"}, {"answer", run, "#3", "x", "--decline"}} {
		if o := e.run(args...); o.code != 2 || !strings.Contains(o.stderr, "--decline") {
			t.Fatalf("%q: exit %d, %s; want a usage error naming --decline", args, o.code, o.stderr)
		}
	}
	if o := e.run("answer", run, "#3", "--decline"); o.code != 1 || !strings.Contains(o.stderr, "already complete") {
		t.Fatalf("declining an answered question: %d %s", o.code, o.stderr)
	}
}
