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
	"github.com/arbor-run/arbor/internal/llm/anthropic"
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
// rule of another kind does not. So does one naming a built-in whole, by
// arbor's name or Claude Code's, at the session's start.
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
  - {rule: WebFetch, action: deny}
  - {rule: todo_write, action: deny}
  - {rule: "shell(rm *)", action: deny}
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
		{"mcp__test__echo": true, "mcp__test__image": true, "mcp__test__fail": false, "mcp__other__echo": false, "read_file": true,
			"web_fetch": false, "todo_write": false, "shell": true},
		{"mcp__test__echo": true, "mcp__test__image": false, "mcp__test__fail": false, "mcp__other__echo": false, "read_file": true,
			"web_fetch": false, "todo_write": false, "shell": true},
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

// TestImagesPastTheProvidersLimit: a conversation holding more images
// than Anthropic takes in a request (100; the scripted server refuses
// more as the API does) sends the newest 100, each older one replaced
// by a note saying why, while the stored transcript keeps them all.
func TestImagesPastTheProvidersLimit(t *testing.T) {
	t.Parallel()
	url := mcpServer(t, mcptest.NewServer)
	const shots = anthropic.MaxImages + 3
	var calls []llmtest.ToolCall
	for i := range shots { // an echo between the images, so no call repeats in a row
		calls = append(calls, llmtest.ToolCall{ID: fmt.Sprintf("i%d", i), Name: "mcp__test__image"},
			llmtest.ToolCall{ID: fmt.Sprintf("e%d", i), Name: "mcp__test__echo", Input: map[string]any{"text": fmt.Sprint(i)}})
	}
	model := llmtest.NewServer(llmtest.Turn{ToolCalls: calls}, llmtest.Turn{Text: "seen"}, llmtest.Turn{Text: "still"})
	t.Cleanup(model.Close)
	home := t.TempDir()
	ws := filepath.Join(home, "ws")
	writeTestFile(t, filepath.Join(ws, ".mcp.json"), `{"mcpServers": {"test": {"url": "`+url+`"}}}`)
	writeTestFile(t, filepath.Join(ws, ".arbor", "permissions.yaml"), "rules: [{rule: mcp__test, action: allow}]\n")
	a := openIn(t, home, ws, model.URL, app.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := a.NewSession(ctx, app.SessionOptions{Model: "anthropic/claude-sonnet-4-5"})
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"seen", "still"} {
		if res := s.Agent.Send(ctx, llm.UserText("look at them")); res.Outcome != agent.OutcomeCompleted || res.Text != text {
			t.Fatalf("result = %+v", res)
		}
	}
	reqs := model.Requests()
	for _, r := range reqs[1:] {
		if n := llmtest.Images(r.Messages); n != anthropic.MaxImages {
			t.Fatalf("a request holds %d images", n)
		}
		var results []*llm.ToolResult
		for _, m := range r.Messages {
			for _, p := range m.Parts {
				if p.ToolResult != nil && !strings.HasPrefix(p.ToolResult.Content, "echo: ") {
					results = append(results, p.ToolResult)
				}
			}
		}
		if len(results) != shots {
			t.Fatalf("%d tool results", len(results))
		}
		for i, res := range results {
			dropped := strings.Contains(res.Content, "left out here: the provider takes at most 100 images in one request")
			if dropped != (i < shots-anthropic.MaxImages) || dropped == (len(res.Images) == 1) || !strings.HasPrefix(res.Content, "a picture") {
				t.Fatalf("result %d: %q with %d images", i, res.Content, len(res.Images))
			}
		}
	}
	recs, err := a.Store.Messages(ctx, s.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	var msgs []llm.Message
	for _, r := range recs {
		msgs = append(msgs, r.Message)
	}
	if n := llmtest.Images(msgs); n != shots {
		t.Fatalf("the transcript holds %d images, want all %d", n, shots)
	}
}
