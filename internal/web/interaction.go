package web

import (
	"encoding/json"
	"time"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/tool"
)

// Interaction is a pending approval or question as the API and the
// interaction frames show it: agent.Interaction with snake_case names and
// the tool's kind by name. It is the web's own: the owner socket and the
// cluster's pending_interactions table carry agent.Interaction as it is,
// since processes of other versions read them.
type Interaction struct {
	ID string `json:"id"`
	// Kind is approval or question; Approval or Question is set.
	Kind      agent.InteractionKind `json:"kind"`
	SessionID string                `json:"session_id"`
	Approval  *Approval             `json:"approval,omitempty"`
	Question  *tool.Question        `json:"question,omitempty"`
	Created   time.Time             `json:"created"`
	// Deadline is absent when the interaction waits forever.
	Deadline time.Time `json:"deadline,omitzero"`
}

// Approval is the call an approval asks about.
type Approval struct {
	CallID string `json:"call_id"`
	Tool   string `json:"tool"`
	// Kind is what the tool does: read, write, execute, interact or
	// network.
	Kind   string          `json:"kind"`
	Input  json.RawMessage `json:"input"`
	Target Target          `json:"target"`
	// Reason says why approval is needed; SuggestedRule is the rule that
	// would allow calls like this one ("shell(go test *)"), if any.
	Reason        string `json:"reason,omitempty"`
	SuggestedRule string `json:"suggested_rule,omitempty"`
}

// Target is what a call touches: paths as given, a command, a host.
type Target struct {
	Paths   []string `json:"paths,omitempty"`
	Command string   `json:"command,omitempty"`
	// Sandboxed: the command runs confined by the OS sandbox (or the host
	// is on its allow-list).
	Sandboxed bool   `json:"sandboxed,omitempty"`
	Host      string `json:"host,omitempty"`
	// Private: the host is a loopback, private or link-local address.
	Private bool `json:"private,omitempty"`
}

// interaction is in as the API shows it.
func interaction(in agent.Interaction) Interaction {
	out := Interaction{ID: in.ID, Kind: in.Kind, SessionID: in.SessionID, Question: in.Question, Created: in.Created, Deadline: in.Deadline}
	if a := in.Approval; a != nil {
		tg := a.Target
		out.Approval = &Approval{CallID: a.CallID, Tool: a.Tool, Kind: a.Kind.String(), Input: a.Input, Reason: a.Reason, SuggestedRule: a.SuggestedRule,
			Target: Target{Paths: tg.Paths, Command: tg.Command, Sandboxed: tg.Sandboxed, Host: tg.Host, Private: tg.Private}}
	}
	return out
}
