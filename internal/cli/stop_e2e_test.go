package cli_test

import (
	"bytes"
	"context"
	"strings"
	"syscall"
	"testing"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
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
	c := e.cmd(context.Background(), "run", "--model", model, "hello")
	var errb bytes.Buffer
	c.Stderr = &errb
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	srv.WaitRequests(1)
	if err := c.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	_ = c.Wait()
	id := runID(t, errb.String())

	if o := e.run("stop", id, "#2"); o.code != 1 || !strings.Contains(o.stderr, "stop the whole run") {
		t.Fatalf("stop of a node of a run nobody drives: exit %d\n%s", o.code, o.stderr)
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
