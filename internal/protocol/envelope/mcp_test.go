package envelope_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/mcpclient/mcptest"
)

// TestMCPServers: an MCP tool call waits for the client's confirm and its
// result reaches the model; status_response lists the server and /mcp
// shows it with its tools.
func TestMCPServers(t *testing.T) {
	t.Parallel()
	mcpSrv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return mcptest.NewServer() }, nil))
	t.Cleanup(mcpSrv.Close) // after the app stops its client: Close waits for its streams
	srv := llmtest.NewServer(
		llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "mcp__test__echo", Input: map[string]any{"text": "over envelope"}}}},
		llmtest.Turn{Text: "echoed", Expect: "echo: over envelope"},
	)
	defer srv.Close()
	b, _ := setupFiles(t, srv, map[string]string{".mcp.json": `{"mcpServers": {"test": {"type": "http", "url": "` + mcpSrv.URL + `"}}}`})

	b.Send(`{"type":"send","content":"echo it"}`)
	req := b.Next(typ("confirm_request"))
	if req.P.ToolName != "mcp__test__echo" {
		t.Fatalf("confirm_request %s", req.raw)
	}
	b.Send(cmd(map[string]any{"type": "confirm", "request_id": req.P.RequestID, "action": "allow"}))
	if idle := b.Next(typ("idle")); idle.P.LastOutcome != "completed" {
		t.Fatalf("idle %s", idle.raw)
	}
	b.Send(`{"type":"status"}`)
	if st := b.Next(typ("status_response")); !strings.Contains(st.raw, `"mcp_servers":[{"name":"test","status":"connected","tools":6}]`) {
		t.Fatalf("status_response %s", st.raw)
	}
	b.Send(sendText("/mcp"))
	info := b.Next(typ("info"))
	if !strings.Contains(info.P.Message, "test: connected (http)") || !strings.Contains(info.P.Message, "\n    mcp__test__echo") {
		t.Fatalf("/mcp: %s", info.raw)
	}
	b.Close()
	b.checkSeq()
}
