package web_test

import (
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/tree/treetest"
	"github.com/arbor-run/arbor/internal/web"
)

// fanOut is a script whose root spawns n children in one turn; each
// child completes at once.
func fanOut(n int) func(llmtest.Request) llmtest.Turn {
	spawns := make([]llmtest.ToolCall, n)
	for i := range spawns {
		spawns[i] = call("spawn", map[string]any{"goal": fmt.Sprintf("part %d", i+1), "prompt": "do it"})
	}
	script := treetest.Script{1: {calls(spawns...), complete("draft"), complete("all done")}}
	for i := 2; i <= n+1; i++ {
		script[int64(i)] = []llmtest.Turn{complete(fmt.Sprintf("part %d done", i-1))}
	}
	return treetest.Responder(script)
}

// stalledClient opens an SSE stream and never reads it: its socket
// buffers fill and the server's writes to it block.
func stalledClient(t *testing.T, b *bundle, run string) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(b.http.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.(*net.TCPConn).SetReadBuffer(1024)
	fmt.Fprintf(conn, "GET /api/runs/%s/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", run)
	t.Cleanup(func() { conn.Close() })
	return conn
}

// TestStalledClientDoesNotBlockRun runs a 200-node fan-out while SSE
// clients that never read are connected (one per run, one for all runs)
// with tiny queues: the run completes, and a reading client still sees
// it end. (TestLaggingClientIsResynced pins what a lagging client gets.)
func TestStalledClientDoesNotBlockRun(t *testing.T) {
	t.Parallel()
	const n = 200
	b := setup(t, nil, setupOpts{respond: fanOut(n), queueLen: 4})
	var started web.Started
	b.mustDo("POST", "/api/runs", web.NewRun{Goal: "fan out"}, &started)
	for range 3 {
		stalledClient(t, b, started.ID)
	}
	stalledClient(t, b, "-")
	s := b.stream(started.ID)
	for {
		f := s.next(t)
		if f.Event == "run" {
			break
		}
		if f.Event == "resync" && b.run(started.ID).Status == "complete" {
			break // the run frame was among the frames this client missed
		}
	}
	d := b.run(started.ID)
	if d.Status != "complete" || len(d.Nodes) != n+1 || d.Result != "all done" {
		t.Fatalf("run %s: %d nodes, result %q", d.Status, len(d.Nodes), d.Result)
	}
}
