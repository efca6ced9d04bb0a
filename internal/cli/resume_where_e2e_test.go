package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
)

// TestResumeWorksWhereTheRunStarted: a run started in one directory in
// auto-edit mode, interrupted, and resumed from another directory without
// --mode, goes on in its own workspace and mode: its write lands there
// and needs no approval. Before, it worked in the directory it was
// resumed from, in the default mode, where the write was denied (no
// terminal to ask).
func TestResumeWorksWhereTheRunStarted(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv := llmtest.NewServer(
		llmtest.Turn{Text: "never finished", Fault: &llmtest.Fault{Kind: llmtest.FaultStall, AfterEvents: 2}},
		llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "write_file", Input: map[string]any{"path": "where.txt", "content": "here\n"}}}},
		llmtest.Turn{Text: "wrote it"},
	)
	defer srv.Close()
	model := e.useProvider("anthropic", srv.URL)
	// The stream is open and stalled once the server has the request.
	id, _ := e.interruptRun(t, func() { srv.WaitRequests(1) }, "run", "--mode", "auto-edit", "--model", model, "write where.txt")

	started := e.workspace
	e.workspace = filepath.Join(e.home, "elsewhere")
	if err := os.MkdirAll(e.workspace, 0o755); err != nil {
		t.Fatal(err)
	}
	o := e.run("resume", id)
	if o.code != 0 || strings.TrimSpace(o.stdout) != "wrote it" {
		t.Fatalf("resume: %d %q\n%s", o.code, o.stdout, o.stderr)
	}
	if b, err := os.ReadFile(filepath.Join(started, "where.txt")); err != nil || string(b) != "here\n" {
		t.Fatalf("where.txt in the run's workspace: %q, %v\n%s", b, err, o.stderr)
	}
	if _, err := os.Stat(filepath.Join(e.workspace, "where.txt")); !os.IsNotExist(err) {
		t.Fatalf("the resumed run wrote where it was resumed from (%v)", err)
	}
	if !strings.Contains(o.stderr, "works in "+started) {
		t.Fatalf("stderr should say where the run works:\n%s", o.stderr)
	}
}

// TestResumeOfAFailedRunSaysItIsOver: resuming a run that failed says it
// failed earlier and is over, and asks the model nothing; before, it
// printed the stored error as if the resume had just failed with it.
func TestResumeOfAFailedRunSaysItIsOver(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv := llmtest.NewServer(llmtest.Turn{Fault: &llmtest.Fault{Kind: llmtest.FaultServer, Status: 401}})
	defer srv.Close()
	model := e.useProvider("anthropic", srv.URL)
	o := e.run("run", "--model", model, "hello")
	if o.code != 1 {
		t.Fatalf("run against a 401: exit %d\n%s", o.code, o.stderr)
	}
	id := runID(t, o.stderr)
	asked := len(srv.Requests())
	o = e.run("resume", id)
	if o.code != 1 || !strings.Contains(o.stderr, "failed earlier") || !strings.Contains(o.stderr, "nothing was run again") {
		t.Fatalf("resume of a failed run: exit %d\n%s", o.code, o.stderr)
	}
	if n := len(srv.Requests()); n != asked {
		t.Fatalf("the resume asked the model %d more times", n-asked)
	}
}

// TestResumedRunShowsItsRunningNodes: the plain lines of a resumed run
// show the tool calls of a node that was already running when the run
// was interrupted; before, the view knew only nodes whose state changed
// after the resume, so those calls went unshown.
func TestResumedRunShowsItsRunningNodes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var mu sync.Mutex
	calls := map[string]int{} // a node's model calls so far, by its first message
	stalled := make(chan struct{})
	srv := llmtest.NewServerFunc(func(r llmtest.Request) llmtest.Turn {
		first := r.Messages[0].Text()
		mu.Lock()
		defer mu.Unlock()
		n := calls[first]
		calls[first]++
		switch {
		case strings.Contains(first, "root node #1") && n == 0:
			return llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "spawn", Input: map[string]any{"goal": "say hi", "prompt": "run echo hi"}}}}
		case strings.Contains(first, "root node #1"):
			return llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "complete", Input: map[string]any{"result": "all done"}}}}
		case n == 0: // #2's first call: stalled until the interrupt
			close(stalled)
			return llmtest.Turn{Text: "never finished", Fault: &llmtest.Fault{Kind: llmtest.FaultStall, AfterEvents: 2}}
		case n == 1:
			return llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "shell", Input: map[string]any{"command": "echo hi-from-two"}}}}
		default:
			return llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "complete", Input: map[string]any{"result": "hi"}}}}
		}
	})
	defer srv.Close()
	model := e.useProvider("anthropic", srv.URL)
	id, _ := e.interruptRun(t, func() { <-stalled }, "run", "--plain", "--yes", "--model", model, "greet")
	o := e.run("resume", "--plain", "--yes", id)
	if o.code != 0 {
		t.Fatalf("resume: %d\n%s", o.code, o.stderr)
	}
	if !strings.Contains(o.stderr, "#2 → shell echo hi-from-two") {
		t.Fatalf("the resumed view does not show #2's call:\n%s", o.stderr)
	}
}
