package cli_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/testutil"
)

// TestAcpSandboxDefault: `arbor acp` runs agents, so its sandbox default is
// auto, as headless's: in default mode a shell command runs confined
// without a permission request, and its write in the workspace happens.
// The client is raw JSON-RPC on the binary's stdin/stdout (the SDK's
// end-to-end tests are internal/protocol/acp's).
func TestAcpSandboxDefault(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.sandboxDefault()
	srv := llmtest.NewServer(
		llmtest.Turn{ToolCalls: []llmtest.ToolCall{{ID: "call_sh", Name: "shell", Input: map[string]any{"command": "echo confined > inside.txt"}}}},
		llmtest.Turn{Text: "Wrote it."},
	)
	defer srv.Close()
	model := e.useProvider("anthropic", srv.URL)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // bounds a hang; times nothing
	defer cancel()
	c := e.cmd(ctx, "acp", "--model", model, "--mode", "default")
	c.Stdin = nil
	in, err := c.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr testutil.SyncBuffer
	c.Stderr = &stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	lines.Buffer(make([]byte, 0, 64<<10), 4<<20)
	type msg struct {
		ID     *int            `json:"id"`
		Method string          `json:"method"`
		Result json.RawMessage `json:"result"`
		Error  json.RawMessage `json:"error"`
	}
	// answer reads lines until the answer to id; a permission request
	// fails the test.
	answer := func(id int) json.RawMessage {
		t.Helper()
		for lines.Scan() {
			var m msg
			if err := json.Unmarshal(lines.Bytes(), &m); err != nil {
				t.Fatalf("output line %q: %v", lines.Text(), err)
			}
			if m.Method == "session/request_permission" {
				t.Fatalf("arbor asked for permission: %s\nstderr:\n%s", lines.Text(), stderr.String())
			}
			if m.Method == "" && m.ID != nil && *m.ID == id {
				if m.Error != nil {
					t.Fatalf("request %d failed: %s\nstderr:\n%s", id, m.Error, stderr.String())
				}
				return m.Result
			}
		}
		t.Fatalf("output ended before the answer to %d\nstderr:\n%s", id, stderr.String())
		return nil
	}
	send := func(s string) {
		if _, err := io.WriteString(in, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`)
	answer(1)
	send(fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":%q,"mcpServers":[]}}`, e.workspace))
	var sess struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal(answer(2), &sess); err != nil || sess.SessionID == "" {
		t.Fatalf("session/new: %v", err)
	}
	send(fmt.Sprintf(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":%q,"prompt":[{"type":"text","text":"write it"}]}}`, sess.SessionID))
	var res struct {
		StopReason string `json:"stopReason"`
	}
	if err := json.Unmarshal(answer(3), &res); err != nil || res.StopReason != "end_turn" {
		t.Fatalf("session/prompt answered %+v, %v; want end_turn", res, err)
	}
	in.Close()
	if err := c.Wait(); err != nil {
		t.Fatalf("arbor acp exited with %v\nstderr:\n%s", err, stderr.String())
	}
	if b, err := os.ReadFile(filepath.Join(e.workspace, "inside.txt")); err != nil || string(b) != "confined\n" {
		t.Fatalf("inside.txt = %q, %v; want the confined command's write\nstderr:\n%s", b, err, stderr.String())
	}
}
