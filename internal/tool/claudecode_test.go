package tool_test

import (
	"testing"

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
