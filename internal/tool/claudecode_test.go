package tool_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/llm"

	"github.com/arbor-run/arbor/internal/tool"
)

func TestRuleFromClaudeCode(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"Bash":         "shell",
		"Bash(git *)":  "shell(git *)",
		"Bash(npm:*)":  "shell(npm *)",
		"Read(src/**)": "read_file(src/**)",
		"TodoWrite":    "todo_write",
		"write_file":   "write_file",
		"shell(ls *)":  "shell(ls *)",
		"mcp__x__y":    "mcp__x__y",
	} {
		if got := tool.RuleFromClaudeCode(in); got != want {
			t.Errorf("RuleFromClaudeCode(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRegistryRunsClaudeCodeNames(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	reg := tool.NewRegistry(tool.Builtins(tool.BuiltinOptions{Workspace: dir})...)
	res := reg.Run(context.Background(), llm.ToolCall{ID: "t1", Name: "Write", Input: json.RawMessage(`{"file_path":"a.txt","content":"hi"}`)})
	if res.IsError {
		t.Fatalf("Write: %s", res.Content)
	}
	res = reg.Run(context.Background(), llm.ToolCall{ID: "t2", Name: "Read", Input: json.RawMessage(`{"file_path":"a.txt"}`)})
	if res.IsError || !strings.Contains(res.Content, "hi") {
		t.Fatalf("Read: %+v", res)
	}
	res = reg.Run(context.Background(), llm.ToolCall{ID: "t3", Name: "NoSuchTool", Input: json.RawMessage(`{}`)})
	if !res.IsError {
		t.Fatalf("an unknown tool ran: %+v", res)
	}
}

// TestAsClaudeCode: a built-in presented as Claude Code's tool has Claude
// Code's name and argument names in its schema, runs calls made with them
// (Bash's timeout in milliseconds), and ToClaudeCodeInput turns arbor's
// arguments back.
func TestAsClaudeCode(t *testing.T) {
	ws := t.TempDir()
	byName := map[string]tool.Tool{}
	for _, b := range tool.Builtins(tool.BuiltinOptions{Workspace: ws}) {
		byName[b.Info().Name] = b
	}
	w := tool.AsClaudeCode(byName["write_file"])
	if w.Info().Name != "Write" {
		t.Fatalf("name %q, want Write", w.Info().Name)
	}
	var schema struct {
		Properties map[string]any `json:"properties"`
		Required   []string       `json:"required"`
	}
	if err := json.Unmarshal(w.Info().Schema, &schema); err != nil {
		t.Fatal(err)
	}
	if _, ok := schema.Properties["file_path"]; !ok || strings.Join(schema.Required, ",") != "file_path,content" {
		t.Fatalf("Write schema %s; want file_path and content required", w.Info().Schema)
	}
	if res := w.Run(context.Background(), tool.Call{ID: "1", Input: json.RawMessage(`{"file_path":"a.txt","content":"hi"}`)}); res.IsError {
		t.Fatalf("Write: %s", res.Content)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "a.txt")); err != nil || string(b) != "hi" {
		t.Fatalf("a.txt = %q, %v", b, err)
	}
	if got := string(tool.ToClaudeCodeInput("write_file", json.RawMessage(`{"path":"a.txt","content":"hi"}`))); got != `{"content":"hi","file_path":"a.txt"}` {
		t.Fatalf("ToClaudeCodeInput = %s", got)
	}
	if got := string(tool.ClaudeCodeInput("shell", json.RawMessage(`{"command":"true","timeout":1500}`))); got != `{"command":"true","timeout":2}` {
		t.Fatalf("Bash timeout 1500 ms became %s; want 2 s", got)
	}
	td := tool.AsClaudeCode(byName["todo_write"])
	if td.Info().Name != "TodoWrite" || strings.Contains(string(td.Info().Schema), `"active_form":`) || !strings.Contains(string(td.Info().Schema), "activeForm") {
		t.Fatalf("TodoWrite schema %s", td.Info().Schema)
	}
	if res := td.Run(context.Background(), tool.Call{ID: "2", Input: json.RawMessage(`{"todos":[{"content":"Run it","status":"pending","activeForm":"Running it"}]}`)}); res.IsError {
		t.Fatalf("TodoWrite: %s", res.Content)
	}
	if a := tool.AsClaudeCode(byName["ask_user"]); a.Info().Name != "ask_user" {
		t.Fatalf("ask_user presented as %q; its arguments are not Claude Code's", a.Info().Name)
	}
}
