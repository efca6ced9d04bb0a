// Local commands in stream-json: a "/name args" prompt that Claude Code
// answers itself, without the model (/compact, /rename), writes its
// answer as a synthetic assistant line that says which command ran.

package streamjson

import (
	"encoding/json"
	"strings"
)

// writeLocalCommandText writes the assistant line in which Claude Code
// answers a local command (/compact, /rename) with text, not with the
// model. Its source is the text as the command's output reads in the
// transcript: its stderr when the command failed (outcome "failed"), else
// its stdout (and no outcome, as Claude Code writes none for a command
// that did what it was asked).
func (s *Server) writeLocalCommandText(sid, text string, run localCommandRun, failed bool) {
	end, _ := json.Marshal("end_turn")
	l := localCommandLine{Type: "assistant", SessionID: sid, UUID: newUUID(), Message: apiMessage{
		ID: "msg_" + strings.ReplaceAll(newUUID(), "-", ""), Type: "message", Role: "assistant", Model: "<synthetic>",
		Content: []apiBlock{{Type: "text", Text: text}}, StopReason: end, Usage: &apiUsage{}},
		Source: "<local-command-stdout>" + text + "</local-command-stdout>", Run: run}
	if failed {
		l.Source = "<local-command-stderr>" + text + "</local-command-stderr>"
		l.Outcome = &localCommandOutcome{Kind: "failed"}
	}
	s.write(l)
}

// localCommandLine is an assistant line a local command wrote.
type localCommandLine struct {
	Type            string               `json:"type"` // "assistant"
	Message         apiMessage           `json:"message"`
	SessionID       string               `json:"session_id"`
	ParentToolUseID *string              `json:"parent_tool_use_id"`
	UUID            string               `json:"uuid"`
	Source          string               `json:"local_command_source"`
	Run             localCommandRun      `json:"local_command_run"`
	Outcome         *localCommandOutcome `json:"local_command_outcome,omitempty"`
}

type localCommandRun struct {
	Command string `json:"command"`
	Args    string `json:"args"`
}

type localCommandOutcome struct {
	Kind string `json:"kind"` // "failed"
}
