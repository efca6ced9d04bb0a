package streamjson_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/mcpclient/mcptest"
	"github.com/arbor-run/arbor/internal/protocol/streamjson"
)

// TestClaudeCodeTools: under Claude Code's argv the tools are Claude
// Code's — offered to the model and listed in init as Bash, Read, Write…,
// asked about in can_use_tool with Claude Code's argument names, listed
// so in permission_denials. A turn whose only tool call failed (an
// unknown tool) is not a clean success: its result's errors name it
// (is_error stays false, as Claude Code's: the model answered).
func TestClaudeCodeTools(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(
		llmtest.Turn{ToolCalls: []llmtest.ToolCall{{ID: "toolu_w", Name: "Write", Input: map[string]any{"file_path": "a.txt", "content": "a"}}}},
		llmtest.Turn{Text: "not written"},
		llmtest.Turn{ToolCalls: []llmtest.ToolCall{{ID: "toolu_u", Name: "NoSuchTool", Input: map[string]any{}}}},
		llmtest.Turn{Text: "sorry"},
	)
	defer srv.Close()
	b := setup(t, srv, setupOpts{opts: streamjson.Options{ClaudeCode: true}})
	b.Send(user("write a"))
	init := b.Next(typ("system", "init"))
	var in struct {
		Tools []string `json:"tools"`
	}
	_ = json.Unmarshal([]byte(init.raw), &in)
	for _, want := range []string{"Bash", "Read", "Write", "Edit", "Glob", "Grep", "TodoWrite"} {
		if !slices.Contains(in.Tools, want) {
			t.Fatalf("init.tools %q lacks %s", in.Tools, want)
		}
	}
	req := b.Next(typ("control_request", "can_use_tool"))
	if req.Request.ToolName != "Write" || !strings.Contains(string(req.Request.ToolInput), `"file_path":"a.txt"`) {
		t.Fatalf("can_use_tool %s; want Write with file_path", req.raw)
	}
	b.Send(`{"type":"control_response","response":{"subtype":"success","request_id":"` + req.RequestID + `","response":{"behavior":"deny","message":"no"}}}`)
	r := b.Next(typ("result", ""))
	var res struct {
		Denials []struct {
			ToolName  string          `json:"tool_name"`
			ToolInput json.RawMessage `json:"tool_input"`
		} `json:"permission_denials"`
	}
	_ = json.Unmarshal([]byte(r.raw), &res)
	if r.IsError || len(res.Denials) != 1 || res.Denials[0].ToolName != "Write" || !strings.Contains(string(res.Denials[0].ToolInput), "file_path") {
		t.Fatalf("result %s; want success listing the denied Write", r.raw)
	}
	b.Send(user("do something"))
	r = b.Next(typ("result", ""))
	if r.IsError || r.Result != "sorry" || !strings.Contains(strings.Join(r.Errors, " "), "unknown tool") {
		t.Fatalf("result %s; want errors naming the unknown tool, is_error false", r.raw)
	}
	b.Close()
	var offered []string
	for _, ts := range srv.Requests()[0].Tools {
		offered = append(offered, ts.Name)
	}
	if !slices.Contains(offered, "Bash") || slices.Contains(offered, "shell") {
		t.Fatalf("the model was offered %q; want Claude Code's names", offered)
	}
}

// TestModelAlias: under Claude Code's argv the aliases sonnet, opus and
// haiku name the newest configured model containing them.
func TestModelAlias(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(llmtest.Turn{Text: "ok"})
	defer srv.Close()
	b := setup(t, srv, setupOpts{opts: streamjson.Options{ClaudeCode: true, Model: "haiku"},
		project: "providers:\n  anthropic:\n    models:\n      claude-haiku-zz:\n        price: {input: 1, output: 1}\n"})
	b.Send(user("hi"))
	if init := b.Next(typ("system", "init")); init.Model != "claude-haiku-zz" {
		t.Fatalf("init %s; want model claude-haiku-zz", init.raw)
	}
	if r := b.Next(typ("result", "")); r.IsError {
		t.Fatalf("result %s", r.raw)
	}
	b.Close()
	if got := srv.Requests()[0].Model; got != "claude-haiku-zz" {
		t.Fatalf("the model server was asked for %q", got)
	}
}

// TestDisallowedToolsLeaveTools: a disallowedTools entry naming a tool
// without a pattern ("Bash") leaves the tool out of init's tools and out
// of the model's tools, as Claude Code does (the golden disallowed-tools,
// recorded with the pinned 2.1.332: init lists no Bash, and a call of it
// is "No such tool available"); the others stay. A rule with a
// pattern ("Bash(rm *)") keeps the tool listed and only denies the calls
// it matches. So it is whether the rules come in argv (Options, as the
// CLI passes them) or in the initialize request, for an MCP server's
// tools, and for arbor's names outside Claude Code's argv.
func TestDisallowedToolsLeaveTools(t *testing.T) {
	t.Parallel()
	mcpSrv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return mcptest.NewServer() }, nil))
	t.Cleanup(mcpSrv.Close) // after the apps stop their clients
	project := "mcp_servers:\n  test:\n    type: http\n    url: " + mcpSrv.URL + "\n"
	claudeCode := []string{"Bash", "Read", "Write", "Edit", "Glob", "Grep", "TodoWrite"}
	for _, c := range []struct {
		name    string
		opts    streamjson.Options
		init    string // the initialize request's disallowedTools, "" = no initialize
		project string
		want    []string // listed
		absent  []string // not listed
	}{
		{name: "argv-bare", opts: streamjson.Options{ClaudeCode: true, DisallowedTools: []string{"Bash"}},
			want: claudeCode[1:], absent: []string{"Bash", "shell"}},
		{name: "argv-pattern", opts: streamjson.Options{ClaudeCode: true, DisallowedTools: []string{"Bash(rm *)"}},
			want: claudeCode},
		{name: "argv-two", opts: streamjson.Options{ClaudeCode: true, DisallowedTools: []string{"Read", "Bash(git:*)", "Write"}},
			want: []string{"Bash", "Edit", "Glob", "Grep", "TodoWrite"}, absent: []string{"Read", "Write"}},
		{name: "initialize-bare", opts: streamjson.Options{ClaudeCode: true}, init: `["Bash"]`,
			want: claudeCode[1:], absent: []string{"Bash"}},
		{name: "initialize-pattern", opts: streamjson.Options{ClaudeCode: true}, init: `["Bash(rm *)"]`,
			want: claudeCode},
		{name: "with-tools", opts: streamjson.Options{ClaudeCode: true, Tools: []string{"Bash", "Read"}, DisallowedTools: []string{"Bash"}},
			want: []string{"Read"}, absent: []string{"Bash"}},
		{name: "mcp-server", opts: streamjson.Options{ClaudeCode: true, DisallowedTools: []string{"mcp__test"}}, project: project,
			want: claudeCode, absent: []string{"mcp__test__echo", "mcp__test__crash"}},
		{name: "mcp-tool", opts: streamjson.Options{ClaudeCode: true, DisallowedTools: []string{"mcp__test__echo"}}, project: project,
			want: append(slices.Clone(claudeCode), "mcp__test__crash", "mcp__test__fail"), absent: []string{"mcp__test__echo"}},
		{name: "cosh-arbor-name", opts: streamjson.Options{DisallowedTools: []string{"shell"}},
			want: []string{"read_file", "write_file", "edit"}, absent: []string{"shell"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.NewServer(llmtest.Turn{Text: "ok"})
			defer srv.Close()
			b := setup(t, srv, setupOpts{opts: c.opts, project: c.project})
			if c.init != "" {
				b.Send(`{"type":"control_request","request_id":"i1","request":{"subtype":"initialize","systemPrompt":[""],"disallowedTools":` + c.init + `}}`)
				b.Next(typ("control_response", "success"))
			}
			b.Send(user("hi"))
			init := b.Next(typ("system", "init"))
			if r := b.Next(typ("result", "")); r.IsError {
				t.Fatalf("result %s", r.raw)
			}
			b.Close()
			var in struct {
				Tools []string `json:"tools"`
			}
			if err := json.Unmarshal([]byte(init.raw), &in); err != nil {
				t.Fatal(err)
			}
			var offered []string
			for _, ts := range srv.Requests()[0].Tools {
				offered = append(offered, ts.Name)
			}
			for what, names := range map[string][]string{"init.tools": in.Tools, "the model's tools": offered} {
				for _, n := range c.want {
					if !slices.Contains(names, n) {
						t.Errorf("%s = %q; want %s", what, names, n)
					}
				}
				for _, n := range c.absent {
					if slices.Contains(names, n) {
						t.Errorf("%s = %q; want no %s", what, names, n)
					}
				}
			}
		})
	}
}
