package tool

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
)

// qwenNames maps the qwen CLI's tool names to the built-ins that do the
// same job, so that tool lists and rules written for qwen (the Qwen Code
// SDK's coreTools, excludeTools, allowedTools, canUseTool) and a model
// trained on qwen's tools name arbor's. read_file, write_file, edit,
// glob, list_directory and todo_write have the same names in both; their
// arguments differ (qwenInput).
var qwenNames = map[string]string{
	"run_shell_command": "shell",
	"grep_search":       "grep",
	"ask_user_question": "ask_user",
	"read_file":         "read_file",
	"write_file":        "write_file",
	"edit":              "edit",
	"glob":              "glob",
	"list_directory":    "list_directory",
	"todo_write":        "todo_write",
}

// qwenDisplayNames are the names qwen shows for its tools, which its
// permission rules also take ("Shell(git *)").
var qwenDisplayNames = map[string]string{
	"Shell": "shell", "ReadFile": "read_file", "WriteFile": "write_file", "Edit": "edit",
	"Grep": "grep", "Glob": "glob", "ListFiles": "list_directory", "TodoList": "todo_write",
	"AskUserQuestion": "ask_user",
}

// FromQwen returns the arbor tool name for a qwen tool name (or display
// name), and the name unchanged when it is not one.
func FromQwen(name string) string {
	name = strings.TrimSpace(name)
	if n, ok := qwenNames[name]; ok {
		return n
	}
	if n, ok := qwenDisplayNames[name]; ok {
		return n
	}
	return name
}

// RuleFromQwen rewrites a qwen tool rule ("run_shell_command",
// "Shell(git *)", "run_shell_command(git status)") to name arbor's tool;
// other rules are returned unchanged.
func RuleFromQwen(rule string) string {
	rule = strings.TrimSpace(rule)
	name, rest := rule, ""
	if i := strings.IndexByte(rule, '('); i >= 0 {
		name, rest = rule[:i], rule[i:]
	}
	return FromQwen(name) + rest
}

// QwenName returns qwen's name for an arbor tool, "" when it has none.
func QwenName(arbor string) string {
	for q, a := range qwenNames {
		if a == arbor {
			return q
		}
	}
	return ""
}

// qwenInput rewrites the arguments of a call made with qwen's argument
// names and units (file_path, is_background, a timeout in milliseconds,
// read_file's 0-based offset, grep_search's glob, ask_user_question's
// questions) to those of arbor's tool arbor; input that does not decode
// is returned unchanged, for the tool to report.
func qwenInput(arbor string, input json.RawMessage) json.RawMessage {
	return rewriteArgs(input, func(m callArgs) callArgs {
		m.rename("file_path", "path")
		m.rename("absolute_path", "path")
		switch arbor {
		case "shell":
			m.rename("is_background", "run_in_background")
			m.secondsFromMillis("timeout", "timeout")
			m.cdInto("directory")
		case "read_file":
			m.oneBasedOffset()
			for _, k := range []string{"offset", "limit", "pages"} {
				if string(m[k]) == "null" {
					delete(m, k)
				}
			}
		case "grep":
			m.rename("glob", "include")
			delete(m, "limit")
		case "todo_write":
			var todos []map[string]json.RawMessage
			if json.Unmarshal(m["todos"], &todos) == nil {
				for i, td := range todos {
					if _, ok := td["id"]; !ok {
						td["id"] = json.RawMessage(strconv.Quote(strconv.Itoa(i + 1)))
					}
					if _, ok := td["active_form"]; !ok {
						td["active_form"] = td["content"]
					}
				}
				m["todos"], _ = json.Marshal(todos)
			}
		case "ask_user":
			var qs []struct {
				Question    string     `json:"question"`
				Header      string     `json:"header"`
				MultiSelect bool       `json:"multiSelect"`
				Options     []labelled `json:"options"`
			}
			if json.Unmarshal(m["questions"], &qs) == nil && len(qs) > 0 {
				q := qs[0]
				m = callArgs{}
				m["question"], _ = json.Marshal(q.Question)
				if q.Header != "" {
					m["header"], _ = json.Marshal(q.Header)
				}
				if q.MultiSelect {
					m["multi_select"] = json.RawMessage("true")
				}
				m.setOptions(q.Options)
			}
		}
		return m
	})
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// qwenArgs are, by arbor tool, its argument names that qwen names
// otherwise.
var qwenArgs = map[string]map[string]string{
	"read_file":  {"path": "file_path"},
	"write_file": {"path": "file_path"},
	"edit":       {"path": "file_path"},
	"grep":       {"include": "glob"},
	"shell":      {"run_in_background": "is_background"},
}

// ToQwenInput rewrites arguments in arbor's names for tool arbor to
// qwen's, as a Qwen Code SDK client reads them (canUseTool's input).
func ToQwenInput(arbor string, input json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(input, &m) != nil {
		return input
	}
	for from, to := range qwenArgs[arbor] {
		if v, ok := m[from]; ok {
			m[to] = v
			delete(m, from)
		}
	}
	switch arbor {
	case "shell":
		if n, err := strconv.Atoi(string(m["timeout"])); err == nil {
			m["timeout"] = json.RawMessage(strconv.Itoa(n * 1000))
		}
	case "read_file":
		if n, err := strconv.Atoi(string(m["offset"])); err == nil && n > 0 {
			m["offset"] = json.RawMessage(strconv.Itoa(n - 1))
		}
	}
	out, err := json.Marshal(m)
	if err != nil {
		return input
	}
	return out
}

// QwenInput rewrites the arguments of a call made with qwen's names and
// units to those of arbor's tool arbor (a client's updatedInput).
func QwenInput(arbor string, input json.RawMessage) json.RawMessage {
	return qwenInput(arbor, input)
}

// AsQwen presents t under qwen's tool name and argument names
// (run_shell_command with is_background, read_file with file_path, …),
// for a model and a client that expect qwen's tools; calls are rewritten
// to t's arguments. ask_user keeps its own arguments (qwen's questions
// array is read too, when a model sends it); a tool qwen has no
// counterpart for is returned unchanged.
func AsQwen(t Tool) Tool {
	arbor := Name(t)
	q := QwenName(arbor)
	if q == "" {
		return t
	}
	info := t.Info()
	info.Name = q
	if arbor != "ask_user" {
		info.Schema = qwenSchema(arbor, info.Schema)
	}
	return &presentedTool{Tool: t, info: info, in: func(in json.RawMessage) json.RawMessage { return qwenInput(arbor, in) }}
}

// presentedTool is a tool under another CLI's name and arguments.
type presentedTool struct {
	Tool
	info Info
	in   func(json.RawMessage) json.RawMessage
}

func (p *presentedTool) Info() Info { return p.info }

func (p *presentedTool) Target(input json.RawMessage) (Target, error) {
	return p.Tool.Target(p.in(input))
}

func (p *presentedTool) Run(ctx context.Context, call Call) Result {
	call.Input = p.in(call.Input)
	return p.Tool.Run(ctx, call)
}

// qwenSchema renames the properties (and required entries) of an arbor
// tool's schema to qwen's names; todo items need neither id nor
// active_form, shell's timeout is in milliseconds, read_file's offset
// counts from 0.
func qwenSchema(arbor string, schema json.RawMessage) json.RawMessage {
	var root map[string]any
	if json.Unmarshal(schema, &root) != nil {
		return schema
	}
	renameSchema(root, qwenArgs[arbor], func(name string) bool {
		return arbor == "todo_write" && (name == "id" || name == "active_form")
	})
	if props, ok := root["properties"].(map[string]any); ok {
		if p, ok := props["timeout"].(map[string]any); ok && arbor == "shell" {
			p["description"] = "Timeout in milliseconds (at most 600000)."
		}
		if p, ok := props["offset"].(map[string]any); ok && arbor == "read_file" {
			p["description"] = "Line number to start at, counting from 0."
		}
	}
	out, err := json.Marshal(root)
	if err != nil {
		return schema
	}
	return out
}

// renameSchema renames the properties and required entries of a schema
// object (and of its nested objects and items), dropping the required
// entries drop names.
func renameSchema(v any, renames map[string]string, drop func(string) bool) {
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
		for _, p := range props {
			renameSchema(p, renames, drop)
		}
	}
	if req, ok := obj["required"].([]any); ok {
		out := req[:0]
		for _, r := range req {
			name, _ := r.(string)
			if to, ok := renames[name]; ok {
				name = to
			}
			if drop(name) {
				continue
			}
			out = append(out, name)
		}
		obj["required"] = out
	}
	renameSchema(obj["items"], renames, drop)
}
