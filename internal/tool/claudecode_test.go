package tool_test

import (
	"context"
	"encoding/json"
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
