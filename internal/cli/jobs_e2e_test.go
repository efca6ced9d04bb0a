package cli_test

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/tree/treetest"
)

// TestNodeBackgroundJobs: a tree node starts a background job, reads its
// output with job_output, and completes; the job ends with the node's
// turn, so nothing of it runs after the run.
func TestNodeBackgroundJobs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.sandboxDefault()
	marker := strconv.Itoa(600000 + os.Getpid()%99999)
	srv := llmtest.NewServerFunc(treetest.Responder(treetest.Script{1: {
		treetest.Calls(treetest.Call("shell", map[string]any{"command": "echo serving; sleep " + marker, "run_in_background": true})),
		treetest.Calls(treetest.Call("shell", map[string]any{"command": "sleep 0.5"})),
		treetest.Calls(treetest.Call("job_output", map[string]any{"id": "job_1"})),
		treetest.Complete("the server said hello"),
	}}))
	defer srv.Close()
	o := e.run("run", "--model", e.useProvider("anthropic", srv.URL), "Start the server and check it")
	if o.code != 0 || strings.TrimSpace(o.stdout) != "the server said hello" {
		t.Fatalf("exit %d, stdout %q\nstderr:\n%s", o.code, o.stdout, o.stderr)
	}
	reqs := srv.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests", len(reqs))
	}
	if got := reqs[1].LastUserText(); !strings.Contains(got, "started background job job_1; read its output and exit code with job_output") {
		t.Fatalf("the start's result: %q", got)
	}
	if got := reqs[3].LastUserText(); !strings.Contains(got, "job_1 (`echo serving;") || !strings.Contains(got, "is running") || !strings.Contains(got, "serving") {
		t.Fatalf("job_output's result: %q", got)
	}
	waitGone(t, "sleep "+marker)
}

// TestNodeJobsEndWithTheTurn: a node's background job is killed when its
// turn ends (here: to wait for its child), not only when arbor exits; the
// child, running meanwhile, finds it gone.
func TestNodeJobsEndWithTheTurn(t *testing.T) {
	t.Parallel()
	e := newEnv(t) // unconfined: the child's pgrep must see the host's processes
	marker := strconv.Itoa(500000 + os.Getpid()%99999)
	srv := llmtest.NewServerFunc(treetest.Responder(treetest.Script{
		1: {
			treetest.Calls(treetest.Call("shell", map[string]any{"command": "sleep " + marker, "run_in_background": true}),
				treetest.Call("spawn", map[string]any{"goal": "Check", "prompt": "check"})),
			treetest.Complete("draft"),
			treetest.Complete("checked"),
		},
		2: {
			treetest.Calls(treetest.Call("shell", map[string]any{"command": "sleep 0.3; pgrep -f '^sleep " + marker + "$' >/dev/null && echo job-alive || echo job-gone"})),
			treetest.Complete("done"),
		},
	}))
	defer srv.Close()
	o := e.run("run", "--yes", "--model", e.useProvider("anthropic", srv.URL), "Start and check")
	if o.code != 0 || strings.TrimSpace(o.stdout) != "checked" {
		t.Fatalf("exit %d, stdout %q\nstderr:\n%s", o.code, o.stdout, o.stderr)
	}
	seen := ""
	for _, req := range srv.Requests() {
		if treetest.NodeOf(req) == 2 {
			seen += req.LastUserText() + "\n"
		}
	}
	if !strings.Contains(seen, "job-gone") {
		t.Fatalf("the child found the root's job alive after the root's turn ended:\n%s", seen)
	}
}
