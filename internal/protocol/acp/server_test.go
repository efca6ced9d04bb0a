package acp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/config"
	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/protocol/acp"
	"github.com/arbor-run/arbor/internal/testutil"
)

// out is one output line of the server.
type out struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Params struct {
		SessionID string `json:"sessionId"`
		Update    struct {
			SessionUpdate string `json:"sessionUpdate"`
		} `json:"update"`
	} `json:"params"`
	raw string
}

// bundle is a server on a real App (SQLite in a temp dir, llmtest) driven
// in-process over pipes.
type bundle struct {
	*testutil.Conn[out]
	srv *llmtest.Server
	ws  string
}

func setup(t *testing.T, turns ...llmtest.Turn) *bundle {
	t.Helper()
	return setupWith(t, acp.Options{}, turns...)
}

func setupWith(t *testing.T, o acp.Options, turns ...llmtest.Turn) *bundle {
	t.Helper()
	srv := llmtest.NewServer(turns...)
	t.Cleanup(srv.Close)
	home := t.TempDir()
	env := map[string]string{"ANTHROPIC_BASE_URL": srv.URL, "ANTHROPIC_API_KEY": "test-key",
		"XDG_CONFIG_HOME": filepath.Join(home, "config"), "XDG_STATE_HOME": filepath.Join(home, "state"), "HOME": home}
	a, err := app.Open(context.Background(), app.Options{Workspace: home, Getenv: func(k string) string { return env[k] },
		Overrides: config.Overrides{Model: "anthropic/claude-test", Mode: "default"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	serve := func(in io.Reader, w, diag io.Writer) error {
		return acp.Serve(context.Background(), a, in, w, diag, o)
	}
	decode := func(line string) (out, error) {
		var o out
		err := json.Unmarshal([]byte(line), &o)
		o.raw = line
		return o, err
	}
	return &bundle{Conn: testutil.Serve(t, serve, decode), srv: srv, ws: home}
}

// newSession initializes the connection (id 1) and opens a session in
// the bundle's workspace (id 2); it returns the session's id.
func (b *bundle) newSession(t *testing.T) string {
	t.Helper()
	b.Send(initialize)
	b.Next(id(1))
	b.Send(fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":%q,"mcpServers":[]}}`, b.ws))
	var sess struct {
		SessionID string `json:"sessionId"`
	}
	if o := b.Next(id(2)); o.Error != nil || json.Unmarshal(o.Result, &sess) != nil || sess.SessionID == "" {
		t.Fatalf("session/new answered %s", o.raw)
	}
	return sess.SessionID
}

// promptLine is request n: a session/prompt of text to session.
func promptLine(n int, session, text string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":%q}]}}`, n, session, text)
}

func id(n int) func(out) bool {
	return func(o out) bool { return string(o.ID) == fmt.Sprint(n) }
}

func wantError(t *testing.T, o out, code int, says string) {
	t.Helper()
	if o.Error == nil || o.Error.Code != code || !strings.Contains(o.Error.Message, says) {
		t.Fatalf("answer %s; want error %d saying %q", o.raw, code, says)
	}
}

const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`

func TestBadInput(t *testing.T) {
	t.Parallel()
	b := setup(t)

	b.Send(`{"jsonrpc":"2.0","id":7,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}`)
	wantError(t, b.Next(id(7)), -32600, "before initialize")

	b.Send(initialize)
	if o := b.Next(id(1)); o.Error != nil || !strings.Contains(string(o.Result), `"loadSession":true`) {
		t.Fatalf("initialize answered %s; want capabilities with loadSession", o.raw)
	}

	b.Send(`this is not JSON`)
	o := b.Next(func(out) bool { return true })
	if string(o.ID) != "null" {
		t.Fatalf("a line that is not JSON was answered %s; want id null", o.raw)
	}
	wantError(t, o, -32700, "invalid JSON")

	b.Send(`[1,2,3]`)
	wantError(t, b.Next(func(out) bool { return true }), -32600, "not a JSON object")

	b.Send(`{"jsonrpc":"1.0","id":2,"method":"initialize"}`)
	wantError(t, b.Next(id(2)), -32600, `"jsonrpc" must be "2.0"`)

	b.Send(`{"jsonrpc":"2.0","id":3,"method":"no/such"}`)
	wantError(t, b.Next(id(3)), -32601, `"no/such"`)

	b.Send(`{"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"sessionId":"nope","prompt":[{"type":"text","text":"hi"}]}}`)
	wantError(t, b.Next(id(4)), -32002, `"nope"`)

	b.Send(`{"jsonrpc":"2.0","id":5,"method":"session/new","params":{"cwd":"relative/dir","mcpServers":[]}}`)
	wantError(t, b.Next(id(5)), -32602, "not an absolute path")

	b.Send(`{"jsonrpc":"2.0","id":6,"method":"session/prompt"}`)
	wantError(t, b.Next(id(6)), -32602, "params are missing")

	// A notification nobody knows, and an answer to no request of
	// arbor's, get no answer: the next request's answer comes next.
	b.Send(`{"jsonrpc":"2.0","method":"no/such/notification","params":{}}`, `{"jsonrpc":"2.0","id":99,"result":{}}`,
		`{"jsonrpc":"2.0","id":8,"method":"no/such"}`)
	if o, _ := b.Recv(); string(o.ID) != "8" {
		t.Fatalf("next line %s; want the answer to id 8", o.raw)
	}
	b.CloseInput()
	if err := b.Wait(); err != nil {
		t.Fatalf("Serve = %v; want nil at the end of input", err)
	}
}

// TestFlood sends many requests at once from several writers: every one
// is answered exactly once, each answer a whole line, while the reader
// keeps reading (run with -race).
func TestFlood(t *testing.T) {
	t.Parallel()
	b := setup(t)
	b.Send(initialize)
	b.Next(id(1))
	const writers, each = 8, 250
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				n := 1000 + w*each + i
				line := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"no/such"}`+"\n", n)
				if i%2 == 1 {
					line = fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"session/set_mode","params":{"sessionId":"s%d","modeId":"trust"}}`+"\n", n, n)
				}
				if _, err := io.WriteString(b.Input(), line); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	seen := map[string]bool{}
	for len(seen) < writers*each {
		o, ok := b.Recv()
		if !ok {
			t.Fatalf("output ended after %d answers", len(seen))
		}
		if o.Error == nil || seen[string(o.ID)] {
			t.Fatalf("answer %s: want one error answer per request", o.raw)
		}
		seen[string(o.ID)] = true
	}
	wg.Wait()
	b.CloseInput()
	if err := b.Wait(); err != nil {
		t.Fatal(err)
	}
}

// TestPromptInProcess runs a prompt whose write asks for permission, then
// one cancelled while it waits on the model, on the server in this process
// (so -race sees the reader, the runner, the bus subscriber and the
// permission goroutine together).
func TestPromptInProcess(t *testing.T) {
	t.Parallel()
	b := setup(t,
		llmtest.Turn{ToolCalls: []llmtest.ToolCall{{ID: "call_w", Name: "write_file", Input: map[string]any{"path": "a.txt", "content": "hi"}}}},
		llmtest.Turn{Text: "Written."},
		llmtest.Turn{Text: "a long answer that never ends", Fault: &llmtest.Fault{Kind: llmtest.FaultStall, AfterEvents: 2}},
	)
	sessionID := b.newSession(t)
	prompt := func(n int, text string) string { return promptLine(n, sessionID, text) }
	b.Send(prompt(3, "write a.txt"))
	ask := b.Next(func(o out) bool { return o.Method == "session/request_permission" })
	b.Send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}`, ask.ID))
	if o := b.Next(id(3)); o.Error != nil || !strings.Contains(string(o.Result), `"end_turn"`) {
		t.Fatalf("prompt answered %s; want end_turn", o.raw)
	}
	b.Send(prompt(4, "tell a story"))
	b.srv.WaitRequests(3) // the turn waits on the stalled model
	b.Send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":%q}}`, sessionID))
	if o := b.Next(id(4)); o.Error != nil || !strings.Contains(string(o.Result), `"cancelled"`) {
		t.Fatalf("cancelled prompt answered %s; want cancelled", o.raw)
	}
	b.CloseInput()
	if err := b.Wait(); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(b.ws, "a.txt")); err != nil || string(got) != "hi" {
		t.Fatalf("a.txt = %q, %v; want the allowed write", got, err)
	}
}
