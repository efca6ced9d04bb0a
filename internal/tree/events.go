package tree

import (
	"github.com/arbor-run/arbor/internal/agent"
)

// Node states. See docs/tree.md for the diagram.
const (
	StatePending      = "pending"      // created; waits for blocked_by or a free slot
	StateActive       = "active"       // its agent runs (an ask node: waits for its answer)
	StateWaiting      = "waiting"      // its agent finished a turn; children still run
	StateSynthesizing = "synthesizing" // children done; its agent continues with their results
	StateComplete     = "complete"
	StatePaused       = "paused"
	StateFailed       = "failed"
	StateCancelled    = "cancelled"
)

// Terminal reports whether a node in state s will never change again.
func Terminal(s string) bool {
	return s == StateComplete || s == StateFailed || s == StateCancelled
}

// Node kinds.
const (
	KindGoal = "goal"
	KindTask = "task"
	KindAsk  = "ask"
)

// NodeView is a node as front ends see it.
type NodeView struct {
	ID        int64    `json:"id"`
	ParentID  int64    `json:"parent_id"`
	Kind      string   `json:"kind"`
	Spawn     string   `json:"spawn,omitempty"`
	Goal      string   `json:"goal"`
	State     string   `json:"state"`
	BlockedBy []int64  `json:"blocked_by,omitempty"`
	Result    string   `json:"result,omitempty"`
	Error     string   `json:"error,omitempty"`
	Question  string   `json:"question,omitempty"`
	Options   []string `json:"options,omitempty"`
	SessionID string   `json:"session_id,omitempty"`
}

// NodeChanged is published after every committed transition of a node,
// including its creation (From is "" then).
type NodeChanged struct {
	agent.Meta
	RunID  string   `json:"run_id"`
	From   string   `json:"from"`
	Node   NodeView `json:"node"`
	Reason string   `json:"reason,omitempty"`
}

// RunFinished is published once when a run ends.
type RunFinished struct {
	agent.Meta
	RunID   string `json:"run_id"`
	Outcome string `json:"outcome"` // a store.Run* status
	Result  string `json:"result,omitempty"`
	Error   string `json:"error,omitempty"`
}
