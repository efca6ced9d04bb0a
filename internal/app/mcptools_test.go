package app_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/mcpclient/mcptest"
	"github.com/arbor-run/arbor/internal/permission"
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
