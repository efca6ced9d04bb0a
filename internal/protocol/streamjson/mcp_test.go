package streamjson_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/mcpclient/mcptest"
)

// TestMCPServers: the project's MCP server shows in mcp_status (pending
// before the first session, then connected with its serverInfo) and in
// system/init; the model's call of its tool asks the client (can_use_tool)
// and the result comes back.
func TestMCPServers(t *testing.T) {
	t.Parallel()
	mcpSrv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return mcptest.NewServer() }, nil))
	t.Cleanup(mcpSrv.Close) // after the app stops its client: Close waits for its streams
	srv := llmtest.NewServer(
		llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "mcp__test__echo", Input: map[string]any{"text": "over stream-json"}}}},
		llmtest.Turn{Text: "echoed", Expect: "echo: over stream-json"},
	)
	defer srv.Close()
	b := setup(t, srv, setupOpts{project: "mcp_servers:\n  test:\n    type: http\n    url: " + mcpSrv.URL + "\n"})

	b.Send(`{"type":"control_request","request_id":"s-1","request":{"subtype":"mcp_status"}}`)
	st := b.Next(typ("control_response", "success"))
	if got := string(st.Response.Response); got != `{"mcpServers":[{"name":"test","status":"pending","transport":"http","source":"project"}]}` {
		t.Fatalf("mcp_status before a session = %s", got)
	}

	b.Send(user("echo it"))
	req := b.Next(typ("control_request", "can_use_tool"))
	if req.Request.ToolName != "mcp__test__echo" {
		t.Fatalf("can_use_tool %s", req.raw)
	}
	b.Send(`{"type":"control_response","response":{"subtype":"success","request_id":"` + req.RequestID + `","response":{"behavior":"allow"}}}`)
	if res := b.Next(typ("result", "")); res.Result != "echoed" {
		t.Fatalf("result %s", res.raw)
	}
	var init string
	for _, o := range b.All {
		if o.Type == "system" && o.Subtype == "init" {
			init = o.raw
		}
	}
	mustContain(t, init, `"mcp_servers":[{"name":"test","status":"connected","source":"project"}]`)
	mustContain(t, init, `"mcp__test__echo"`)

	b.Send(`{"type":"control_request","request_id":"s-2","request":{"subtype":"mcp_status"}}`)
	st = b.Next(func(o out) bool { return o.Type == "control_response" && o.Response.RequestID == "s-2" })
	if got := string(st.Response.Response); !strings.Contains(got, `{"name":"test","status":"connected","serverInfo":{"name":"testsrv","version":"0.1"},"transport":"http","source":"project","tools":[{"name":"crash"},{"name":"echo"}`) {
		t.Fatalf("mcp_status = %s", got)
	}
}
