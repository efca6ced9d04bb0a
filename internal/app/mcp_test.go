package app_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/mcpclient"
	"github.com/arbor-run/arbor/internal/mcpclient/mcptest"
	"github.com/arbor-run/arbor/internal/permission"
)

// TestMCPToolsThroughAgentLoop: a scripted model calls an MCP server's
// tools (from the project's .mcp.json) through the real agent loop; the
// image reaches the model inside the tool result and the server's tool
// error comes back as a tool error.
func TestMCPToolsThroughAgentLoop(t *testing.T) {
	t.Parallel()
	mcpSrv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return mcptest.NewServer() }, nil))
	t.Cleanup(mcpSrv.Close)
	model := llmtest.NewServer(
		llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "mcp__test__image"}}},
		llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "mcp__test__fail"}}, Expect: "a picture"},
		llmtest.Turn{Text: "done", Expect: "the widget is broken"},
	)
	t.Cleanup(model.Close)

	home := t.TempDir()
	ws := filepath.Join(home, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, ".mcp.json"), []byte(`{"mcpServers": {"test": {"type": "http", "url": "`+mcpSrv.URL+`"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"HOME": home, "XDG_CONFIG_HOME": filepath.Join(home, "config"), "XDG_STATE_HOME": filepath.Join(home, "state"),
		"ANTHROPIC_API_KEY": "sk-test-0123456789", "ANTHROPIC_BASE_URL": model.URL}
	b := setupIn(t, ws, env)

	rule, err := permission.ParseRule("mcp__test__*", permission.Allow, permission.ScopeSession)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.app.Permissions.AddRule(rule); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := b.app.NewSession(ctx, app.SessionOptions{Model: "anthropic/claude-sonnet-4-5"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(s.Tools.Names(), "mcp__test__echo") {
		t.Fatalf("tools = %v", s.Tools.Names())
	}
	res := s.Agent.Send(ctx, llm.UserText("use the tools"))
	if res.Outcome != agent.OutcomeCompleted || res.Text != "done" {
		t.Fatalf("result = %+v", res)
	}
	reqs := model.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests", len(reqs))
	}
	if !slices.ContainsFunc(reqs[0].Tools, func(s llm.ToolSpec) bool {
		return s.Name == "mcp__test__echo" && strings.Contains(string(s.InputSchema), `"text"`)
	}) {
		t.Fatalf("the model was not offered mcp__test__echo with its schema: %+v", reqs[0].Tools)
	}
	img := lastResult(t, reqs[1])
	if len(img.Images) != 1 || img.Images[0].MediaType != "image/png" || img.IsError {
		t.Fatalf("image result = %+v", img)
	}
	if fail := lastResult(t, reqs[2]); !fail.IsError || !strings.Contains(fail.Content, "the widget is broken") {
		t.Fatalf("error result = %+v", fail)
	}
	st := b.app.MCPStatus()
	if len(st) != 1 || st[0].State != mcpclient.StateConnected {
		t.Fatalf("status = %+v", st)
	}
}

func lastResult(t *testing.T, r llmtest.Request) llm.ToolResult {
	t.Helper()
	m := r.Messages[len(r.Messages)-1]
	for _, p := range m.Parts {
		if p.Type == llm.PartToolResult {
			return *p.ToolResult
		}
	}
	t.Fatalf("no tool result in %+v", m)
	return llm.ToolResult{}
}
