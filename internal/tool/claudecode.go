package tool

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
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
	"WebFetch":        "web_fetch",
	"BashOutput":      "job_output",
	"KillShell":       "job_kill",
	"Skill":           "skill",
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

// ClaudeCodeTools are the Claude Code tool names FromClaudeCode maps,
// sorted.
func ClaudeCodeTools() []string { return slices.Sorted(maps.Keys(claudeCodeNames)) }

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
	return rewriteArgs(input, func(m callArgs) callArgs {
		m.rename("file_path", "path")
		switch arbor {
		case "job_output":
			m.rename("bash_id", "id")
		case "job_kill":
			m.rename("shell_id", "id")
		case "shell":
			m.secondsFromMillis("timeout", "timeout") // Claude Code's Bash timeout is in milliseconds
		case "grep":
			m.rename("glob", "include")
			m.rename("-i", "ignore_case")
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
		return m
	})
}

// ClaudeCodeInput rewrites the arguments of a call made with Claude
// Code's argument names and units to those of arbor's tool arbor.
func ClaudeCodeInput(arbor string, input json.RawMessage) json.RawMessage {
	return claudeCodeInput(arbor, input)
}

// ToClaudeCodeInput rewrites arguments in arbor's names for tool arbor to
// Claude Code's, as a Claude Agent SDK client reads them (canUseTool's
// input, a hook's tool_input).
func ToClaudeCodeInput(arbor string, input json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(input, &m) != nil {
		return input
	}
	for from, to := range claudeCodeArgs[arbor] {
		if v, ok := m[from]; ok {
			m[to] = v
			delete(m, from)
		}
	}
	if arbor == "shell" {
		if s, ok := m["timeout"]; ok {
			if n, err := strconv.Atoi(string(s)); err == nil {
				m["timeout"] = json.RawMessage(strconv.Itoa(n * 1000))
			}
		}
	}
	if arbor == "todo_write" {
		var todos []map[string]json.RawMessage
		if json.Unmarshal(m["todos"], &todos) == nil {
			for _, td := range todos {
				if v, ok := td["active_form"]; ok {
					td["activeForm"] = v
					delete(td, "active_form")
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

// claudeCodeArgs are, by arbor tool, its argument names that Claude Code
// names otherwise.
var claudeCodeArgs = map[string]map[string]string{
	"read_file":  {"path": "file_path"},
	"write_file": {"path": "file_path"},
	"edit":       {"path": "file_path"},
	"grep":       {"include": "glob", "ignore_case": "-i"},
	"todo_write": {"active_form": "activeForm"},
	"job_output": {"id": "bash_id"},
	"job_kill":   {"id": "shell_id"},
}

// AsClaudeCode presents t under Claude Code's tool name and argument
// names (Bash, Read with file_path, …), for a model and a client that
// expect Claude Code's tools; calls are rewritten to t's arguments. A tool
// Claude Code has no counterpart for (or whose arguments differ beyond
// names, ask_user) is returned unchanged.
func AsClaudeCode(t Tool) Tool {
	arbor := Name(t)
	cc := ClaudeCodeName(arbor)
	if cc == "" || arbor == "ask_user" {
		return t
	}
	info := t.Info()
	info.Name = cc
	info.Schema = claudeCodeSchema(arbor, info.Schema)
	return &claudeCodeTool{Tool: t, arbor: arbor, info: info}
}

type claudeCodeTool struct {
	Tool
	arbor string
	info  Info
}

func (c *claudeCodeTool) Info() Info { return c.info }

func (c *claudeCodeTool) Target(input json.RawMessage) (Target, error) {
	return c.Tool.Target(claudeCodeInput(c.arbor, input))
}

func (c *claudeCodeTool) Run(ctx context.Context, call Call) Result {
	call.Input = claudeCodeInput(c.arbor, call.Input)
	return c.Tool.Run(ctx, call)
}

// claudeCodeSchema renames the properties (and required entries) of an
// arbor tool's argument schema to Claude Code's names; TodoWrite's items
// need no id (arbor numbers them), Bash's timeout is in milliseconds.
func claudeCodeSchema(arbor string, schema json.RawMessage) json.RawMessage {
	var root any
	if json.Unmarshal(schema, &root) != nil {
		return schema
	}
	renames := claudeCodeArgs[arbor]
	var walk func(v any)
	walk = func(v any) {
		obj, ok := v.(map[string]any)
		if !ok {
			return
		}
		if props, ok := obj["properties"].(map[string]any); ok {
			for from, to := range renames {
				if p, ok := props[from]; ok {
					props[to] = p
					delete(props, from)
				}
			}
			if p, ok := props["timeout"].(map[string]any); ok && arbor == "shell" {
				p["description"] = "Timeout in milliseconds (at most 600000)."
			}
			for _, p := range props {
				walk(p)
			}
		}
		if req, ok := obj["required"].([]any); ok {
			out := req[:0]
			for _, r := range req {
				name, _ := r.(string)
				if to, ok := renames[name]; ok {
					name = to
				}
				if arbor == "todo_write" && name == "id" {
					continue
				}
				out = append(out, name)
			}
			obj["required"] = out
		}
		walk(obj["items"])
	}
	walk(root)
	out, err := json.Marshal(root)
	if err != nil {
		return schema
	}
	return out
}
