package tool

import (
	"encoding/json"
	"strconv"
	"strings"
)

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

// claudeCodeInput renames the arguments of a call made with Claude Code's
// argument names (file_path, Grep's glob and -i, TodoWrite's activeForm)
// to arbor's; input that does not decode is returned unchanged, for the
// tool to report.
func claudeCodeInput(arbor string, input json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(input, &m) != nil {
		return input
	}
	rename := func(from, to string) {
		if v, ok := m[from]; ok {
			if _, taken := m[to]; !taken {
				m[to] = v
			}
			delete(m, from)
		}
	}
	rename("file_path", "path")
	switch arbor {
	case "grep":
		rename("glob", "include")
		rename("-i", "ignore_case")
	case "todo_write":
		var todos []map[string]json.RawMessage
		if json.Unmarshal(m["todos"], &todos) == nil {
			for i, td := range todos {
				if v, ok := td["activeForm"]; ok {
					td["active_form"] = v
					delete(td, "activeForm")
				}
				if _, ok := td["id"]; !ok {
					td["id"] = json.RawMessage(strconv.Quote(strconv.Itoa(i + 1)))
				}
			}
			m["todos"], _ = json.Marshal(todos)
		}
	}
	out, err := json.Marshal(m)
	if err != nil {
		return input
	}
	return out
}
