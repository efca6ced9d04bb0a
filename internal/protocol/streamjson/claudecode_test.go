package streamjson_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
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
