package store

import (
	"context"
	"time"
)

// Run is one coordination tree: a goal, its budget and its outcome.
type Run struct {
	ID          string    `json:"id"`
	Goal        string    `json:"goal"`
	Status      RunStatus `json:"status"`
	Model       string    `json:"model"`
	Workspace   string    `json:"workspace"`
	Mode        string    `json:"mode"`
	BudgetUSD   float64   `json:"budget_usd"`      // 0 = none
	MaxTokens   int64     `json:"max_tokens"`      // 0 = none
	MaxParallel int       `json:"max_parallel"`    // running agents at once
	NodeTimeout int64     `json:"node_timeout_ms"` // per-node wall time; 0 = none
	// Queue is the worker queue of a cluster run (arbor run --cluster):
	// any arbor worker serving it drives the run, and another takes it
	// over when that worker dies. "" for a run driven by the process
	// that started it.
	Queue string `json:"queue,omitempty"`
	// TraceParent is the W3C traceparent of the span the run was started
	// under (TRACEPARENT of the process that started it): the run's spans
	// join that trace, on every machine that works on the run. "" (every
	// run made before it was stored) starts a trace of the run's own,
	// named by its id. Set at creation; Commit never changes it.
	TraceParent string    `json:"trace_parent,omitempty"`
	Result      string    `json:"result"`
	Error       string    `json:"error"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// Node is one node of a run's tree. IDs are per run, from 1 (the root).
type Node struct {
	RunID    string   `json:"run_id"`
	ID       int64    `json:"id"`
	ParentID int64    `json:"parent_id"` // 0 for the root
	Kind     NodeKind `json:"kind"`
	Spawn    string   `json:"spawn"` // "spawn" or "fork" for tasks, "" otherwise
	Goal     string   `json:"goal"`
	Prompt   string   `json:"prompt"`
	// BlockedBy lists the nodes whose results this node needs.
	BlockedBy    []int64 `json:"blocked_by"`
	Returns      string  `json:"returns"` // "text", "json", "list", "file"
	ContextQuery string  `json:"context_query"`
	// Question, Options and Default are set for ask nodes.
	Question string   `json:"question"`
	Options  []string `json:"options"`
	Default  string   `json:"default"`

	State  NodeState `json:"state"`
	Result string    `json:"result"`
	Error  string    `json:"error"`
	// Draft is the result the node's agent last passed to complete, kept
	// until the node really completes (after its children and synthesis).
	Draft    string `json:"draft"`
	HasDraft bool   `json:"has_draft"`
	// Context is the text injected into the node's first prompt (dependency
	// and sibling results, distilled when ContextQuery is set).
	Context string `json:"context"`
	// SessionID is the agent transcript of the node ("" until it starts).
	SessionID string `json:"session_id"`
	Attempts  int    `json:"attempts"`
	// Synthesized is how many of the node's children its last synthesis
	// covered; children beyond it call for another synthesis.
	Synthesized int `json:"synthesized"`
	// Notice is a message for the node's agent on its next start (a
	// modification, a resume after pause); cleared when delivered.
	Notice string `json:"notice"`
	// CallID is the tool call of the parent's agent that created the node;
	// it makes spawn, fork and ask idempotent across a crash.
	CallID string `json:"call_id,omitempty"`
	// BudgetUSD and MaxTokens bound what the node and its subtree may
	// spend (0 = no limit of the node's own; the run's still applies).
	BudgetUSD float64 `json:"budget_usd,omitempty"`
	MaxTokens int64   `json:"max_tokens,omitempty"`
	// Model is the provider/name the node's agent runs on; "" for the
	// run's model.
	Model string `json:"model,omitempty"`
	// Runner is the external agent that runs the node ("claude-code");
	// "" for arbor's own agent loop.
	Runner string `json:"runner,omitempty"`

	CreatedAt time.Time  `json:"created_at"`
	UpdatedAt time.Time  `json:"updated_at"`
	StartedAt *time.Time `json:"started_at,omitempty"`
	EndedAt   *time.Time `json:"ended_at,omitempty"`
}

// TreeStore persists runs and their nodes. Every state transition of the
// engine is one Commit: the run row and every changed node in one
// transaction, so a crash leaves either all of a transition or none of it.
type TreeStore interface {
	// CreateRun stores a new run (ErrConflict when its id is taken) and,
	// in the same transaction, its first nodes, upserted as Commit does: a
	// crash leaves the run with its root or nothing.
	CreateRun(ctx context.Context, r Run, nodes ...Node) error
	GetRun(ctx context.Context, id string) (Run, error)
	// ListRuns returns runs newest first; limit <= 0 means all.
	ListRuns(ctx context.Context, limit int) ([]Run, error)
	// Commit writes run (when non-nil) and upserts nodes, atomically.
	// Upserting a node that exists replaces every field but RunID, ID and
	// CreatedAt. A complete run's status is final: changing it fails with
	// ErrConflict and writes nothing.
	Commit(ctx context.Context, run *Run, nodes ...Node) error
	// Nodes returns the run's nodes ordered by id.
	Nodes(ctx context.Context, runID string) ([]Node, error)
	GetNode(ctx context.Context, runID string, id int64) (Node, error)
}
