package streamjson_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/protocol/streamjson"
)

// TestQwenControlMethods: the Qwen Code SDK's control requests answer for
// every client, get_context_usage in both SDKs' shapes at once, and an
// invalid effort names the valid ones.
func TestQwenControlMethods(t *testing.T) {
	t.Parallel()
	for name, opts := range map[string]streamjson.Options{"spec": {}, "claude-code": {ClaudeCode: true}, "qwen": {Qwen: true}} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.NewServer(llmtest.Turn{Text: "ok", Usage: llmtest.Usage{Input: 100, Output: 10}})
			defer srv.Close()
			b := setup(t, srv, setupOpts{opts: opts})
			b.Send(user("hi"))
			b.Next(typ("result", ""))
			for i, sub := range []string{"supported_commands", "mcp_server_status", "get_context_usage", "get_available_models", "get_usage_info", "continue_last_turn"} {
				b.Send(fmt.Sprintf(`{"type":"control_request","request_id":"c-%d","request":{"subtype":%q}}`, i, sub))
				r := b.Next(typ("control_response", ""))
				var body struct {
					Subtype string `json:"subtype"`
				}
				if r.Response.Subtype != "success" || json.Unmarshal(r.Response.Response, &body) != nil || body.Subtype != sub {
					t.Fatalf("%s answered %s", sub, r.raw)
				}
				if sub == "get_context_usage" {
					for _, field := range []string{`"categories"`, `"maxTokens"`, `"modelName"`, `"contextWindowSize"`, `"totalTokens":110`} {
						mustContain(t, string(r.Response.Response), field)
					}
				}
			}
			b.Send(`{"type":"control_request","request_id":"e-1","request":{"subtype":"set_effort","effort":"extreme"}}`)
			if r := b.Next(typ("control_response", "")); r.Response.Subtype != "error" || !strings.Contains(r.Response.Error, `"extreme"`) || !strings.Contains(r.Response.Error, "xhigh") {
				t.Fatalf("set_effort extreme answered %s", r.raw)
			}
			b.Close()
		})
	}
}

// TestFailedCallsNeverSuccessWithError: a turn whose every tool call
// failed is an error result for a spec client, a success without is_error
// for the SDKs' (as their CLIs report it); never success with is_error.
func TestFailedCallsNeverSuccessWithError(t *testing.T) {
	t.Parallel()
	for name, opts := range map[string]streamjson.Options{"spec": {}, "claude-code": {ClaudeCode: true}, "qwen": {Qwen: true}} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.NewServer(
				llmtest.Turn{ToolCalls: []llmtest.ToolCall{{ID: "c1", Name: "read_file", Input: map[string]any{"path": "missing.txt", "file_path": "missing.txt"}}}},
				llmtest.Turn{Text: "could not read it"})
			defer srv.Close()
			b := setup(t, srv, setupOpts{opts: opts})
			b.Send(user("read it"))
			r := b.Next(typ("result", ""))
			if len(r.Errors) == 0 || r.Subtype == "success" && r.IsError {
				t.Fatalf("result %s; want errors, and never success with is_error", r.raw)
			}
			if want := name != "spec"; (r.Subtype == "success") != want || r.IsError == want {
				t.Fatalf("result %s; want success without is_error only for the SDKs' clients", r.raw)
			}
			b.Close()
		})
	}
}

// TestInterruptBeforeTheTurnStarts: an interrupt that arrives while the
// prompt's turn waits behind other work (here the session's creation,
// held by auth_required) ends that turn as interrupted when it starts,
// without a model call; the next prompt runs.
func TestInterruptBeforeTheTurnStarts(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(llmtest.Turn{Text: "second"})
	defer srv.Close()
	b := setup(t, srv, setupOpts{noKey: true})
	b.Send(initialize)
	b.Next(typ("control_response", "success"))
	b.Next(typ("control_request", "auth_required"))
	b.Send(user("one"))
	b.Send(`{"type":"control_request","request_id":"i-1","request":{"subtype":"interrupt"}}`)
	if r := b.Next(typ("control_response", "")); r.Response.RequestID != "i-1" || r.Response.Subtype != "success" {
		t.Fatalf("interrupt answered %s", r.raw)
	}
	b.Send(`{"type":"control_response","response":{"subtype":"auth_response","request_id":"auth-init","response":{"provider_id":"anthropic","values":{"api_key":"sk-1"}}}}`)
	if r := b.Next(typ("result", "")); !r.IsError || r.Subtype != "error_during_execution" || !strings.Contains(strings.Join(r.Errors, " "), "interrupted") {
		t.Fatalf("the interrupted turn's result %s", r.raw)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("model requests = %d, want 0", n)
	}
	b.Send(user("two"))
	if r := b.Next(typ("result", "")); r.IsError || r.Result != "second" {
		t.Fatalf("the next turn's result %s", r.raw)
	}
	b.Close()
}
