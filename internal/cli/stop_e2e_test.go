package cli_test

import (
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/store"
)

// TestStopOfARunNobodyDrives: `arbor stop RUN` of an interrupted run,
// which no process drives, cancels it in the store: it is listed
// cancelled, and resume says it is over. Before, stop refused with the
// error of a socket nobody listened on, and the run stayed resumable for
// good.
func TestStopOfARunNobodyDrives(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv := llmtest.NewServer(llmtest.Turn{Text: "never finished", Fault: &llmtest.Fault{Kind: llmtest.FaultStall, AfterEvents: 2}})
	defer srv.Close()
	model := e.useProvider("anthropic", srv.URL)
	id, _ := e.interruptRun(t, func() { srv.WaitRequests(1) }, "run", "--model", model, "hello")

	if o := e.run("stop", id, "#2"); o.code != 1 || !strings.Contains(o.stderr, "stop #2 of "+id+": not found") {
		t.Fatalf("stop of a node the run does not have: exit %d\n%s", o.code, o.stderr)
	}
	if o := e.run("stop", id); o.code != 0 || !strings.Contains(o.stdout, "cancelled "+id) {
		t.Fatalf("stop: exit %d\n%s%s", o.code, o.stdout, o.stderr)
	}
	if o := e.run("runs"); !strings.Contains(o.stdout, id+"  cancelled") {
		t.Fatalf("runs after the stop:\n%s", o.stdout)
	}
	if o := e.run("stop", id); o.code != 1 || !strings.Contains(o.stderr, "already cancelled") {
		t.Fatalf("a second stop: exit %d\n%s", o.code, o.stderr)
	}
	if o := e.run("resume", id); o.code != 1 || !strings.Contains(o.stderr, "cancelled earlier") {
		t.Fatalf("resume of the stopped run: exit %d\n%s", o.code, o.stderr)
	}
	if n := len(srv.Requests()); n != 1 {
		t.Fatalf("the model was asked %d times, want 1", n)
	}
}

// TestStopOfANodeOfARunNobodyDrives: arbor stop RUN '#N' of an
// interrupted run cancels #N in the store and leaves the run resumable;
// the resumed run never asks the model for #N again, and its parent goes
// on with the stop as it would have heard of it live. Before, the stop
// was refused ("resume it to stop #2").
func TestStopOfANodeOfARunNobodyDrives(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var mu sync.Mutex
	calls := map[string]int{} // model calls so far, by a node's first message
	var rootSaw string
	stalled := make(chan struct{}, 2)
	srv := llmtest.NewServerFunc(func(r llmtest.Request) llmtest.Turn {
		first := r.Messages[0].Text()
		mu.Lock()
		defer mu.Unlock()
		n := calls[first]
		calls[first]++
		switch {
		case strings.Contains(first, "root node #1") && n == 0:
			return llmtest.Turn{ToolCalls: []llmtest.ToolCall{
				{Name: "spawn", Input: map[string]any{"goal": "count sheep", "prompt": "count them"}},
				{Name: "spawn", Input: map[string]any{"goal": "count cows", "prompt": "count them"}},
			}}
		case strings.Contains(first, "root node #1"):
			var b strings.Builder
			for _, m := range r.Messages {
				b.WriteString(m.Text())
			}
			rootSaw = b.String()
			return llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "complete", Input: map[string]any{"result": "counted"}}}}
		case n == 0: // each child's first call: stalled until the interrupt
			stalled <- struct{}{}
			return llmtest.Turn{Text: "never finished", Fault: &llmtest.Fault{Kind: llmtest.FaultStall, AfterEvents: 2}}
		default:
			return llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "complete", Input: map[string]any{"result": "12 cows"}}}}
		}
	})
	defer srv.Close()
	model := e.useProvider("anthropic", srv.URL)
	id, _ := e.interruptRun(t, func() { <-stalled; <-stalled }, "run", "--plain", "--yes", "--model", model, "count")

	if o := e.run("stop", id, "#2"); o.code != 0 || !strings.Contains(o.stdout, "stopped #2 of "+id) {
		t.Fatalf("stop #2: exit %d\n%s%s", o.code, o.stdout, o.stderr)
	}
	if o := e.run("tree", id); !strings.Contains(o.stdout, "["+string(store.RunInterrupted)+"]") || !regexp.MustCompile(`#2 .*cancelled.*count sheep`).MatchString(o.stdout) || strings.Count(o.stdout, "cancelled") != 1 {
		t.Fatalf("tree after the stop of #2:\n%s", o.stdout)
	}
	if o := e.run("stop", id, "#2"); o.code != 1 || !strings.Contains(o.stderr, "already cancelled") {
		t.Fatalf("a second stop of #2: exit %d\n%s", o.code, o.stderr)
	}
	if o := e.run("resume", "--plain", "--yes", id); o.code != 0 {
		t.Fatalf("resume: exit %d\n%s", o.code, o.stderr)
	}
	if o := e.run("runs"); !strings.Contains(o.stdout, id+"  complete") {
		t.Fatalf("runs after the resume:\n%s", o.stdout)
	}
	mu.Lock()
	defer mu.Unlock()
	for first, n := range calls {
		if strings.Contains(first, "count sheep") && n != 1 {
			t.Fatalf("the stopped #2 was asked %d times, want 1 (before the stop)", n)
		}
	}
	if !strings.Contains(rootSaw, "12 cows") || !strings.Contains(rootSaw, "cancelled") {
		t.Fatalf("the root did not hear of #3's result and #2's stop:\n%s", rootSaw)
	}
}
