package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/mcpserver"
)

// TestStdioSkipsBadLines: on stdio a line that is no JSON-RPC message
// (not JSON, not an object, another version, neither request nor
// response, too long) is reported with its line number and skipped, and
// the session goes on to answer the next request. Before, the first such
// line ended arbor mcp and interrupted the run the client hosted.
func TestStdioSkipsBadLines(t *testing.T) {
	t.Parallel()
	b := setup(t, func(llmtest.Request) llmtest.Turn { return llmtest.Turn{Text: "unused"} })
	s, _ := b.rootServer(t, "stdio-bad-lines")
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	diag := &syncBuffer{}
	served := make(chan error, 1)
	go func() {
		served <- mcpserver.ServeStdio(context.Background(), s.MCP(), inR, outW, diag)
		_ = outW.Close()
	}()
	replies := make(chan map[string]any, 16)
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				replies <- m
			}
		}
		close(replies)
	}()
	reply := func(id float64) map[string]any {
		t.Helper()
		for {
			select {
			case m, ok := <-replies:
				if !ok {
					t.Fatalf("output ended before the reply to %v; diagnostics:\n%s", id, diag.String())
				}
				if m["id"] == id {
					return m
				}
			case <-time.After(time.Minute):
				t.Fatalf("no reply to %v", id)
			}
		}
	}
	send := func(lines ...string) {
		t.Helper()
		if _, err := io.WriteString(inW, strings.Join(lines, "\n")+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if m := reply(1); m["result"] == nil {
		t.Fatalf("initialize: %v", m)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		"oops not json", `{"foo":1}`, `[]`, `{"jsonrpc":"1.0","id":9,"method":"tools/list"}`, `{"jsonrpc":"2.0","id":10}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"} trailing`, strings.Repeat("x", 2<<20),
		`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
	if m := reply(3); m["result"] == nil {
		t.Fatalf("tools/list after the bad lines: %v", m)
	}
	d := diag.String()
	for _, want := range []string{"line 3:", "line 4:", "line 5:", "line 6:", "line 7:", "line 8:", "line 9:"} {
		if !strings.Contains(d, "input "+want) && !strings.Contains(d, "input line "+strings.TrimPrefix(want, "line ")) {
			t.Errorf("no report of %s:\n%s", want, d)
		}
	}
	_ = inW.Close()
	select {
	case err := <-served:
		if err != nil && err != io.EOF {
			t.Fatalf("ServeStdio: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("ServeStdio did not end with its input")
	}
}
