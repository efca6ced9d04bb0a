package tool

import (
	"encoding/json"
	"strings"
)

// Besides Claude Code's (claudecode.go) and qwen's (qwen.go), models
// trained on Chord's and Codex's tools call them by those names. These
// map onto arbor's tools where the arguments agree (or differ only in
// ways mapped here); a tool whose arguments differ beyond that (Codex's
// update_plan) is left to the "unknown tool" answer, which lists arbor's.
var familyNames = map[string]string{
	// Chord's.
	"read":         "read_file",
	"write":        "write_file",
	"question":     "ask_user",
	"patch":        "apply_patch",
	"spawn_status": "job_output",
	"spawn_stop":   "job_kill",
	// Codex's.
	"list_dir":       "list_directory",
	"local_shell":    "shell",
	"container.exec": "shell",
}

// FromFamily returns the arbor tool name for a Chord or Codex tool name,
// and the name unchanged when it is neither.
func FromFamily(name string) string {
	if n, ok := familyNames[strings.TrimSpace(name)]; ok {
		return n
	}
	return name
}

// familyInput rewrites a call's arguments in Chord's or Codex's names to
// arbor's: Chord's read counts lines from 0 and its question's options
// are objects; Codex's shell takes
// its command as an argv array (["bash", "-lc", "…"]) and its working
// directory as workdir, and its timeout in milliseconds.
func familyInput(arbor string, input json.RawMessage) json.RawMessage {
	return rewriteArgs(input, func(m callArgs) callArgs {
		switch arbor {
		case "shell":
			var argv []string
			if json.Unmarshal(m["command"], &argv) == nil && len(argv) > 0 {
				cmd := shellJoin(argv)
				if len(argv) == 3 && (argv[0] == "bash" || argv[0] == "sh") && (argv[1] == "-lc" || argv[1] == "-c") {
					cmd = argv[2]
				}
				m["command"], _ = json.Marshal(cmd)
			}
			m.cdInto("workdir")
			m.secondsFromMillis("timeout_ms", "timeout")
		case "read_file":
			m.oneBasedOffset() // Chord's offset is 0-based
		case "ask_user":
			// Chord's options are {label, description}; multiple selects many.
			var opts []labelled
			if json.Unmarshal(m["options"], &opts) == nil {
				m.setOptions(opts)
			}
			m.rename("multiple", "multi_select")
		case "job_output", "job_kill":
			m.rename("spawn_id", "id")
		}
		return m
	})
}

// shellJoin quotes words for bash where they need it.
func shellJoin(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		if w != "" && strings.Trim(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == "" {
			q[i] = w
			continue
		}
		q[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}
