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

func TestRuleFromQwen(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"run_shell_command":             "shell",
		"run_shell_command(git status)": "shell(git status)",
		"Shell(git *)":                  "shell(git *)",
		"grep_search":                   "grep",
		"ask_user_question":             "ask_user",
		"read_file":                     "read_file",
		"mcp__github":                   "mcp__github",
	} {
		if got := tool.RuleFromQwen(in); got != want {
			t.Errorf("RuleFromQwen(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestRegistryRunsQwenNames: a model trained on qwen's tools calls them by
// qwen's names and arguments; the registry runs arbor's.
func TestRegistryRunsQwenNames(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	reg := tool.NewRegistry(tool.Builtins(tool.BuiltinOptions{Workspace: dir})...)
	run := func(name, input string) tool.Result {
		t.Helper()
		return reg.Run(context.Background(), llm.ToolCall{ID: "q", Name: name, Input: json.RawMessage(input)})
	}
	if res := run("run_shell_command", `{"command":"printf 'one\ntwo\n' > a.txt","is_background":false,"timeout":5000}`); res.IsError {
		t.Fatalf("run_shell_command: %s", res.Content)
	}
	if res := run("grep_search", `{"pattern":"two","glob":"*.txt","limit":3}`); res.IsError || !strings.Contains(res.Content, "a.txt:2:two") {
		t.Fatalf("grep_search: %+v", res)
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if res := run("run_shell_command", `{"command":"pwd","directory":"`+sub+`"}`); res.IsError || !strings.Contains(res.Content, sub) {
		t.Fatalf("run_shell_command in directory: %+v", res)
	}
}

// TestAsQwen: a built-in presented as qwen's tool has qwen's name and
// argument names, runs calls made with them (read_file's offset from 0),
// and ToQwenInput turns arbor's arguments back.
func TestAsQwen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f.txt"), []byte("l1\nl2\nl3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	byName := map[string]tool.Tool{}
	for _, b := range tool.Builtins(tool.BuiltinOptions{Workspace: dir}) {
		q := tool.AsQwen(b)
		byName[q.Info().Name] = q
	}
	for _, name := range []string{"run_shell_command", "grep_search", "read_file", "write_file", "edit", "glob", "list_directory", "todo_write", "ask_user_question"} {
		if byName[name] == nil {
			t.Fatalf("no tool presented as %s", name)
		}
	}
	var schema struct {
		Properties map[string]any `json:"properties"`
		Required   []string       `json:"required"`
	}
	if err := json.Unmarshal(byName["run_shell_command"].Info().Schema, &schema); err != nil || schema.Properties["is_background"] == nil || schema.Properties["run_in_background"] != nil {
		t.Fatalf("run_shell_command schema %s: want is_background, not run_in_background", byName["run_shell_command"].Info().Schema)
	}
	res := byName["read_file"].Run(context.Background(), tool.Call{ID: "r", Input: json.RawMessage(`{"file_path":"f.txt","offset":1,"limit":1}`)})
	if res.IsError || !strings.Contains(res.Content, "l2") || strings.Contains(res.Content, "l1") {
		t.Fatalf("read_file from offset 1 (0-based) = %+v, want line 2 only", res)
	}
	res = byName["todo_write"].Run(context.Background(), tool.Call{ID: "t", Input: json.RawMessage(`{"todos":[{"id":"1","content":"Run tests","status":"pending"}]}`)})
	if res.IsError {
		t.Fatalf("todo_write without active_form: %s", res.Content)
	}
	back := tool.ToQwenInput("shell", json.RawMessage(`{"command":"ls","timeout":3,"run_in_background":true}`))
	if string(back) != `{"command":"ls","is_background":true,"timeout":3000}` {
		t.Fatalf("ToQwenInput(shell) = %s", back)
	}
}
