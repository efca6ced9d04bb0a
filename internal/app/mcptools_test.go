package app_test

import (
	"context"
	"fmt"
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
	"github.com/arbor-run/arbor/internal/llm/openai"
	"github.com/arbor-run/arbor/internal/mcpclient/mcptest"
	"github.com/arbor-run/arbor/internal/permission"
	"github.com/arbor-run/arbor/internal/testutil"
)

// mcpServer serves srv over streamable HTTP for the test's length.
func mcpServer(t *testing.T, srv func() *mcp.Server) string {
	t.Helper()
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv() }, nil))
	t.Cleanup(hs.Close)
	return hs.URL
}

// writeFile writes body to path, making its directory.
func writeTestFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

func specNames(specs []llm.ToolSpec) []string {
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.Name
	}
	return names
}

// TestDenyRuleHidesMCPTool: a deny rule that names an MCP tool whole (or
// its whole server) leaves the tool out of what the model is offered, as
// Claude Code does, also when the rule comes while the session runs; a
// rule of another kind does not.
func TestDenyRuleHidesMCPTool(t *testing.T) {
	t.Parallel()
	url := mcpServer(t, mcptest.NewServer)
	model := llmtest.NewServer(llmtest.Turn{Text: "one"}, llmtest.Turn{Text: "two"})
	t.Cleanup(model.Close)
	home := t.TempDir()
	ws := filepath.Join(home, "ws")
	writeTestFile(t, filepath.Join(ws, ".mcp.json"), `{"mcpServers": {"test": {"url": "`+url+`"}, "other": {"url": "`+url+`"}}}`)
	writeTestFile(t, filepath.Join(ws, ".arbor", "permissions.yaml"), `rules:
  - {rule: mcp__test__fail, action: deny}
  - {rule: mcp__other, action: deny}
  - {rule: mcp__test__echo, action: allow}
`)
	a := openIn(t, home, ws, model.URL, app.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := a.NewSession(ctx, app.SessionOptions{Model: "anthropic/claude-sonnet-4-5"})
	if err != nil {
		t.Fatal(err)
	}
	s.Agent.Send(ctx, llm.UserText("hi"))
	rule, err := permission.ParseRule("mcp__test__image", permission.Deny, permission.ScopeSession)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Permissions.AddRule(rule); err != nil {
		t.Fatal(err)
	}
	s.Agent.Send(ctx, llm.UserText("again"))
	reqs := model.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests", len(reqs))
	}
	for i, want := range []map[string]bool{
		{"mcp__test__echo": true, "mcp__test__image": true, "mcp__test__fail": false, "mcp__other__echo": false, "read_file": true},
		{"mcp__test__echo": true, "mcp__test__image": false, "mcp__test__fail": false, "mcp__other__echo": false, "read_file": true},
	} {
		names := specNames(reqs[i].Tools)
		for name, offered := range want {
			if slices.Contains(names, name) != offered {
				t.Errorf("request %d: %s offered = %v, want %v (tools %v)", i+1, name, !offered, offered, names)
			}
		}
	}
}

// manyTools is an MCP server with n tools, t000 and on.
func manyTools(n int) func() *mcp.Server {
	return func() *mcp.Server {
		srv := mcp.NewServer(&mcp.Implementation{Name: "many", Version: "0.1"}, nil)
		for i := range n {
			mcp.AddTool(srv, &mcp.Tool{Name: fmt.Sprintf("t%03d", i), Description: "A tool."},
				func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
				})
		}
		return srv
	}
}

// TestToolsPastTheProvidersLimit: with more tools than OpenAI takes in a
// request (128; the scripted server refuses more as OpenAI does), the
// requests keep arbor's own tools and the MCP tools in their order up to
// the limit, and the rest are left out, which a warning says once,
// naming how many, of which servers, and the config that chooses them.
func TestToolsPastTheProvidersLimit(t *testing.T) {
	t.Parallel()
	alpha, beta := mcpServer(t, manyTools(100)), mcpServer(t, manyTools(60))
	model := llmtest.NewServer(llmtest.Turn{Text: "one"}, llmtest.Turn{Text: "two"})
	t.Cleanup(model.Close)
	home := t.TempDir()
	ws := filepath.Join(home, "ws")
	writeTestFile(t, filepath.Join(ws, ".mcp.json"), `{"mcpServers": {"alpha": {"url": "`+alpha+`"}, "beta": {"url": "`+beta+`"}}}`)
	env := map[string]string{"XDG_CONFIG_HOME": filepath.Join(home, "config"), "XDG_STATE_HOME": filepath.Join(home, "state"), "HOME": home,
		"OPENAI_API_KEY": "sk-test-0123456789", "OPENAI_BASE_URL": model.URL + "/v1"}
	var diag testutil.SyncBuffer
	a, err := app.Open(context.Background(), app.Options{Workspace: ws, Getenv: func(k string) string { return env[k] }, Diag: &diag})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := a.NewSession(ctx, app.SessionOptions{Model: "openai/gpt-5"})
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"one", "two"} {
		if res := s.Agent.Send(ctx, llm.UserText("hi")); res.Outcome != agent.OutcomeCompleted || res.Text != text {
			t.Fatalf("result = %+v", res)
		}
	}
	all := s.Tools.Names()
	if len(all) <= openai.MaxTools {
		t.Fatalf("the session has only %d tools", len(all))
	}
	builtins := len(all) - 160
	left := len(all) - openai.MaxTools
	for _, r := range model.Requests() {
		names := specNames(r.Tools)
		if len(names) != openai.MaxTools {
			t.Fatalf("a request offers %d tools", len(names))
		}
		if !slices.Equal(names, all[:openai.MaxTools]) {
			t.Fatalf("the request's tools are not the session's first %d:\n%v", openai.MaxTools, names)
		}
		if !slices.Contains(names, "read_file") || !slices.Contains(names, "mcp__alpha__t099") || slices.Contains(names, "mcp__beta__t059") {
			t.Fatalf("tools = %v", names)
		}
	}
	out := diag.String()
	want := fmt.Sprintf("arbor: warning: openai/gpt-5 takes at most 128 tools in a request, so its requests leave out %d MCP tools, the last ones offered, of the servers beta (%d); choose the tools of a server with enabled_tools or disabled_tools in mcp_servers", left, left)
	if !strings.Contains(out, want) || strings.Count(out, "128 tools") != 1 {
		t.Fatalf("diag (%d built-in tools):\n%s\nwant once:\n%s", builtins, out, want)
	}
}
