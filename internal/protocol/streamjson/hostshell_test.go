package streamjson_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
)

func TestHostExecutedShell(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(
		llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "shell", Input: map[string]any{"command": "df -h"}}}},
		llmtest.Turn{Text: "disk is fine", Expect: "/dev/sda1 50%"},
		llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "shell", Input: map[string]any{"command": "touch here.txt"}}}},
		llmtest.Turn{Text: "touched", Expect: "done by the host"},
	)
	defer srv.Close()
	b := setup(t, srv, setupOpts{mode: "trust"})
	b.Send(`{"type":"control_request","request_id":"init-1","request":{"subtype":"initialize","capabilities":{"can_execute_shell":true}}}`)
	resp := b.Next(typ("control_response", ""))
	mustContain(t, string(resp.Response.Response), `"can_handle_host_executed_shell_tool_result":true`)

	b.Send(user("check the disk"))
	req := b.Next(typ("control_request", "host_shell"))
	mustContain(t, req.raw, `"command":"df -h"`)
	b.Send(`{"type":"control_response","response":{"subtype":"success","request_id":"` + req.RequestID + `","response":{"stdout":"/dev/sda1 50%\n","stderr":"","exit_code":0}}}`)
	if r := b.Next(typ("result", "")); r.Result != "disk is fine" {
		t.Fatalf("result %s", r.raw)
	}

	// The client may instead answer with a tool_result block.
	b.Send(user("touch a file"))
	req = b.Next(typ("control_request", "host_shell"))
	var useID string
	if i := strings.Index(req.raw, `"tool_use_id":"`); i >= 0 {
		useID = strings.SplitN(req.raw[i+len(`"tool_use_id":"`):], `"`, 2)[0]
	}
	b.Send(`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"` + useID + `","content":"done by the host"}]}}`)
	if r := b.Next(typ("result", "")); r.Result != "touched" {
		t.Fatalf("result %s", r.raw)
	}
	b.Close()
	if _, err := os.Stat(filepath.Join(b.ws, "here.txt")); !os.IsNotExist(err) {
		t.Fatal("arbor ran the command itself")
	}
}
