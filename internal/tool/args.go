package tool

import (
	"encoding/json"
	"strconv"
)

// callArgs is a call's arguments as a JSON object while another tool
// family's names and units are rewritten to arbor's (claudecode.go,
// qwen.go, families.go).
type callArgs map[string]json.RawMessage

// rewriteArgs decodes input, has fn rewrite it (fn may return a new
// object), and encodes the result; input that is not a JSON object is
// returned unchanged, for the tool to report.
func rewriteArgs(input json.RawMessage, fn func(m callArgs) callArgs) json.RawMessage {
	var m callArgs
	if json.Unmarshal(input, &m) != nil || m == nil {
		return input
	}
	out, err := json.Marshal(fn(m))
	if err != nil {
		return input
	}
	return out
}

// rename moves from to to, unless to is given already; from goes either way.
func (m callArgs) rename(from, to string) {
	if v, ok := m[from]; ok {
		if _, taken := m[to]; !taken {
			m[to] = v
		}
		delete(m, from)
	}
}

// secondsFromMillis sets to from a positive whole number of milliseconds
// under from, in arbor's seconds (rounded up); from goes when it is
// another key.
func (m callArgs) secondsFromMillis(from, to string) {
	if n, err := strconv.Atoi(string(m[from])); err == nil && n > 0 {
		m[to] = json.RawMessage(strconv.Itoa((n + 999) / 1000))
	}
	if from != to {
		delete(m, from)
	}
}

// oneBasedOffset turns a 0-based line offset into arbor's 1-based one.
func (m callArgs) oneBasedOffset() {
	if n, err := strconv.Atoi(string(m["offset"])); err == nil && n >= 0 {
		m["offset"] = json.RawMessage(strconv.Itoa(n + 1))
	}
}

// cdInto makes the shell command run in the directory given under key
// (qwen's directory, Codex's workdir), and drops key.
func (m callArgs) cdInto(key string) {
	var dir, cmd string
	if json.Unmarshal(m[key], &dir) == nil && dir != "" && json.Unmarshal(m["command"], &cmd) == nil {
		m["command"], _ = json.Marshal("cd " + shellQuote(dir) + " && " + cmd)
	}
	delete(m, key)
}

// labelled is a choice as Chord's question and qwen's ask_user_question
// give it.
type labelled struct {
	Label       string `json:"label"`
	Description string `json:"description"`
}

// setOptions gives ask_user the choices as its options and
// option_descriptions.
func (m callArgs) setOptions(opts []labelled) {
	if len(opts) == 0 {
		return
	}
	labels, descs := make([]string, len(opts)), make([]string, len(opts))
	for i, o := range opts {
		labels[i], descs[i] = o.Label, o.Description
	}
	m["options"], _ = json.Marshal(labels)
	m["option_descriptions"], _ = json.Marshal(descs)
}
