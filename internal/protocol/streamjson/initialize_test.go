package streamjson_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/protocol/streamjson"
)

// TestInitializeFields: an initialize request's disallowedTools are deny
// rules and its answer confirms them (disallowed_tools_applied); under
// Claude Code's argv, fields arbor does not act on (the SDK's agents,
// title, …) refuse the request and every turn, never ignored; mcpServers
// are refused unless the CLI took them at launch. A cosh client's extra
// field is noted on stderr.
func TestInitializeFields(t *testing.T) {
	t.Parallel()

	t.Run("disallowedTools", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer(
			llmtest.Turn{ToolCalls: []llmtest.ToolCall{{ID: "toolu_x", Name: "Bash", Input: map[string]any{"command": "echo x > ran.txt"}}}},
			llmtest.Turn{Text: "refused"})
		defer srv.Close()
		b := setup(t, srv, setupOpts{mode: "bypassPermissions", opts: streamjson.Options{ClaudeCode: true}})
		b.Send(`{"type":"control_request","request_id":"i1","request":{"subtype":"initialize","systemPrompt":[""],"disallowedTools":["Bash"]}}`)
		resp := b.Next(typ("control_response", "success"))
		var body struct {
			Applied *bool `json:"disallowed_tools_applied"`
			MCP     *bool `json:"mcp_servers_applied"`
		}
		if err := json.Unmarshal(resp.Response.Response, &body); err != nil || body.Applied == nil || !*body.Applied || body.MCP != nil {
			t.Fatalf("initialize answer %s; want disallowed_tools_applied: true and no mcp_servers_applied", resp.raw)
		}
		b.Send(user("run it"))
		tr := b.Next(func(o out) bool {
			return o.Type == "user" && len(o.Message.Content) == 1 && o.Message.Content[0].Type == "tool_result"
		})
		if !tr.Message.Content[0].IsError {
			t.Fatalf("tool result %s; want the denied Bash refused even in bypassPermissions", tr.raw)
		}
		b.Next(typ("result", ""))
		b.Close()
	})

	t.Run("cosh-extra-field", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer(llmtest.Turn{Text: "hello"})
		defer srv.Close()
		b := setup(t, srv, setupOpts{})
		b.Send(`{"type":"control_request","request_id":"i1","request":{"subtype":"initialize","client":"a-shell"}}`)
		b.Next(typ("control_response", "success"))
		b.Send(user("hi"))
		if r := b.Next(typ("result", "")); r.IsError || r.Result != "hello" {
			t.Fatalf("result %s; want the turn run", r.raw)
		}
		b.Close()
		mustContain(t, b.Diag.String(), "client")
	})

	for name, req := range map[string]string{
		"agents":     `"agents":{"rev":{"description":"r","prompt":"p"}}`,
		"mcpServers": `"mcpServers":{"x":{"command":"true"}}`,
	} {
		t.Run("refused-"+name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.NewServer(llmtest.Turn{Text: "never"})
			defer srv.Close()
			b := setup(t, srv, setupOpts{opts: streamjson.Options{ClaudeCode: true}})
			b.Send(`{"type":"control_request","request_id":"i1","request":{"subtype":"initialize","systemPrompt":[""],"promptSuggestions":false,` + req + `}}`)
			resp := b.Next(typ("control_response", "error"))
			mustContain(t, resp.Response.Error, name)
			b.Send(user("hi"))
			r := b.Next(typ("result", ""))
			if !r.IsError || !strings.Contains(strings.Join(r.Errors, " "), name) {
				t.Fatalf("result %s; want an error naming %s", r.raw, name)
			}
			if n := len(srv.Requests()); n != 0 {
				t.Fatalf("model requests = %d, want 0", n)
			}
			// As Claude Code exits with status 1 after an error result.
			b.CloseInput()
			for _, ok := b.Recv(); ok; _, ok = b.Recv() {
			}
			if err := b.Wait(); !errors.Is(err, streamjson.ErrErrorResult) {
				t.Fatalf("Serve returned %v, want ErrErrorResult", err)
			}
		})
	}
}
