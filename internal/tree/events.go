package tree

import (
	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/store"
)

// Node states and kinds are the store's types, with their methods; they
// are re-exported here so the engine and front ends read as tree code.
// See docs/tree.md for the diagram.
type (
	NodeState = store.NodeState
	NodeKind  = store.NodeKind
)

// Node states and kinds.
const (
	StatePending      = store.StatePending
	StateActive       = store.StateActive
	StateWaiting      = store.StateWaiting
	StateSynthesizing = store.StateSynthesizing
	StateComplete     = store.StateComplete
	StatePaused       = store.StatePaused
	StateFailed       = store.StateFailed
	StateCancelled    = store.StateCancelled

	KindGoal = store.KindGoal
	KindHost = store.KindHost
	KindTask = store.KindTask
	KindAsk  = store.KindAsk
)

// NodeView is a node as front ends see it.
type NodeView struct {
	ID        int64     `json:"id"`
	ParentID  int64     `json:"parent_id"`
	Kind      NodeKind  `json:"kind"`
	Spawn     string    `json:"spawn,omitempty"`
	Goal      string    `json:"goal"`
	State     NodeState `json:"state"`
	BlockedBy []int64   `json:"blocked_by,omitempty"`
	Result    string    `json:"result,omitempty"`
	Error     string    `json:"error,omitempty"`
	Question  string    `json:"question,omitempty"`
	Options   []string  `json:"options,omitempty"`
	SessionID string    `json:"session_id,omitempty"`
	// Model is the node's model (provider/name); "" for the run's.
	Model string `json:"model,omitempty"`
	// Runner is the external agent that runs the node ("claude-code");
	// "" for arbor's own.
	Runner string `json:"runner,omitempty"`
}

// NodeChanged is published after every committed transition of a node,
// including its creation (From is "" then).
type NodeChanged struct {
	agent.Meta
	RunID  string    `json:"run_id"`
	From   NodeState `json:"from"`
	Node   NodeView  `json:"node"`
	Reason string    `json:"reason,omitempty"`
}

// RunFinished is published once when a run ends.
type RunFinished struct {
	agent.Meta
	RunID   string          `json:"run_id"`
	Outcome store.RunStatus `json:"outcome"`
	Result  string          `json:"result,omitempty"`
	Error   string          `json:"error,omitempty"`
}

// View is what events show of stored node n: a reader following a run
// driven elsewhere (arbor run --cluster) makes its NodeChanged events
// from the rows it reads.
func View(n store.Node) NodeView { return view(n) }
