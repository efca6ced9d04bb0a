package tool

import "strings"

// claudeCodeNames maps Claude Code's tool names to the built-ins that do
// the same job, so that rules and tool lists written for Claude Code (the
// Claude Agent SDK's allowedTools, disallowedTools, tools, canUseTool)
// name arbor's tools. The argument schemas stay arbor's.
var claudeCodeNames = map[string]string{
	"Bash":            "shell",
	"Read":            "read_file",
	"Write":           "write_file",
	"Edit":            "edit",
	"MultiEdit":       "edit",
	"Glob":            "glob",
	"Grep":            "grep",
	"LS":              "list_directory",
	"TodoWrite":       "todo_write",
	"AskUserQuestion": "ask_user",
}

// FromClaudeCode returns the arbor tool name for a Claude Code tool name,
// and the name unchanged when it is not one.
func FromClaudeCode(name string) string {
	if n, ok := claudeCodeNames[strings.TrimSpace(name)]; ok {
		return n
	}
	return name
}

// RuleFromClaudeCode rewrites a Claude Code permission rule ("Bash",
// "Bash(git *)", "Read(src/**)") to name arbor's tool; other rules are
// returned unchanged. Claude Code's "Bash(git:*)" prefix form becomes the
// glob "git *".
func RuleFromClaudeCode(rule string) string {
	rule = strings.TrimSpace(rule)
	name, rest := rule, ""
	if i := strings.IndexByte(rule, '('); i >= 0 {
		name, rest = rule[:i], rule[i:]
	}
	arbor := FromClaudeCode(name)
	if arbor == name {
		return rule
	}
	if arbor == "shell" && strings.HasSuffix(rest, ":*)") {
		rest = strings.TrimSuffix(rest, ":*)") + " *)"
	}
	return arbor + rest
}

// ClaudeCodeName returns Claude Code's name for an arbor tool, "" when it
// has none.
func ClaudeCodeName(arbor string) string {
	for cc, a := range claudeCodeNames {
		if a == arbor && cc != "MultiEdit" {
			return cc
		}
	}
	return ""
}
