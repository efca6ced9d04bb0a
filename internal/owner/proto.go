// Package owner is the socket of the process that drives a run: the
// holder of the run's lease, which names the socket (store.Lease.Addr).
// Other processes on the machine — `arbor answer`, `arbor mcp --node`,
// `arbor serve` — send it requests, and it acts through its own engine
// and interaction broker, with the same authority and state checks as an
// in-process caller, so the terminal, the web view and `arbor answer`
// never conflict.
//
// The protocol is one JSON line per request and one reply line; a
// subscribe request is followed by event lines until either side closes.
// Requests carry the protocol version; an owner refuses a newer version
// and a kind it does not know with a coded error, and changes nothing.
// Errors carry a Code that the client turns back into the engine's
// sentinel errors (tree.ErrBadState, agent.ErrUnknownInteraction, …).
//
// Invariants:
//   - only the run's owner serves the socket (tree.DriveOptions.Serve);
//   - a failed request has no side effect;
//   - a subscriber never slows the owner: its events queue on its own bus
//     subscription, and a subscriber that takes no bytes for WriteTimeout
//     is dropped (it reconnects and rereads the run from the store).
package owner

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/tool"
	"github.com/arbor-run/arbor/internal/tree"
)

// Version is the protocol version this package speaks. Version 0 (no
// "v") is the answer socket before kinds existed: an answer, or a tool
// call when Tool is set; owners still accept it.
const Version = 1

// Kind is what a request asks the owner to do.
type Kind string

// The request kinds.
const (
	// KindAnswer answers ask node Node with Answer (tree.Engine.Answer).
	KindAnswer Kind = "answer"
	// KindTool runs tree tool Tool of node Node with Args, as the node's
	// own agent would (arbor mcp --node).
	KindTool Kind = "tool"
	// KindControl applies Op (stop, pause, resume) to node Node, with a
	// person's authority over the whole tree (tree.Engine.Control).
	KindControl Kind = "control"
	// KindPending lists the run's pending interactions (approvals and
	// questions of its agents, questions of its ask nodes).
	KindPending Kind = "pending"
	// KindResolve resolves the run's pending interaction Interaction
	// with Response (tree.Engine.Resolve).
	KindResolve Kind = "resolve"
	// KindSubscribe streams the run's events: after the reply, one Event
	// line per event the owner's bus publishes for the run.
	KindSubscribe Kind = "subscribe"
)

// Request is one request line.
type Request struct {
	V    int   `json:"v,omitempty"`
	Kind Kind  `json:"kind,omitempty"`
	Node int64 `json:"node,omitempty"`
	// Answer is a KindAnswer's text.
	Answer string `json:"answer,omitempty"`
	// Tool and Args are a KindTool's call.
	Tool string          `json:"tool,omitempty"`
	Args json.RawMessage `json:"args,omitempty"`
	// Op is a KindControl's operation.
	Op tree.Op `json:"op,omitempty"`
	// Interaction and Resolution are a KindResolve's.
	Interaction string      `json:"interaction,omitempty"`
	Resolution  *Resolution `json:"resolution,omitempty"`

	// Token authenticates a request on a TCP endpoint (ServeTCP).
	Token string `json:"token,omitempty"`
	// Turn names the remote turn a turn kind is about (Turns); a
	// KindTool with Turn set runs the turn's tree tool, CallID being the
	// model's id of the call.
	Turn   string `json:"turn,omitempty"`
	CallID string `json:"call_id,omitempty"`
	// Usage and Cost are a KindGate's estimate or a KindCharge's spend.
	Usage *llm.Usage `json:"usage,omitempty"`
	Cost  float64    `json:"cost,omitempty"`
	// Ask is a KindInteract's approval or question.
	Ask *agent.Interaction `json:"ask,omitempty"`
	// Events are a KindEvents's agent events.
	Events []Event `json:"events,omitempty"`
	// End is a KindTurnEnd's end.
	End *TurnEnd `json:"end,omitempty"`
}

// Resolution is a KindResolve's response: Approval for an approval,
// Answer for a question.
type Resolution struct {
	Approval *Approval `json:"approval,omitempty"`
	Answer   *Answer   `json:"answer,omitempty"`
}

// Approval is an approval's decision (tool.Approval).
type Approval struct {
	Allow bool `json:"allow"`
	// RememberScope ("session", …) allows calls like this one from now on.
	RememberScope string          `json:"remember_scope,omitempty"`
	RulePattern   string          `json:"rule_pattern,omitempty"`
	UpdatedInput  json.RawMessage `json:"updated_input,omitempty"`
	Message       string          `json:"message,omitempty"`
}

// Answer is a question's answer (tool.Answer).
type Answer struct {
	Text     string `json:"text"`
	Declined bool   `json:"declined,omitempty"`
}

// resolution is r on the wire.
func resolution(r agent.Response) *Resolution {
	out := &Resolution{}
	if a := r.Approval; a != nil {
		out.Approval = &Approval{Allow: a.Allow, RememberScope: a.RememberScope, RulePattern: a.RulePattern, UpdatedInput: a.UpdatedInput, Message: a.Message}
	}
	if a := r.Answer; a != nil {
		out.Answer = &Answer{Text: a.Text, Declined: a.Declined}
	}
	return out
}

// response is the broker's response that r carries.
func (r Resolution) response() agent.Response {
	var out agent.Response
	if a := r.Approval; a != nil {
		out.Approval = &tool.Approval{Allow: a.Allow, RememberScope: a.RememberScope, RulePattern: a.RulePattern, UpdatedInput: a.UpdatedInput, Message: a.Message}
	}
	if a := r.Answer; a != nil {
		out.Answer = &tool.Answer{Text: a.Text, Declined: a.Declined}
	}
	return out
}

// kind is the request's kind, reading a version-0 request as an answer
// or a tool call.
func (r Request) kind() Kind {
	if r.V == 0 && r.Kind == "" {
		if r.Tool != "" {
			return KindTool
		}
		return KindAnswer
	}
	return r.Kind
}

// Reply is the one reply line of a request.
type Reply struct {
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
	Code  Code   `json:"code,omitempty"`
	// Content and IsError are a tool call's result.
	Content string `json:"content,omitempty"`
	IsError bool   `json:"is_error,omitempty"`
	// EndTurn is a remote turn's tool result asking its loop to end the
	// turn (the tree's complete).
	EndTurn bool `json:"end_turn,omitempty"`
	// State is the node's state after a control.
	State tree.NodeState `json:"state,omitempty"`
	// Pending are the run's pending interactions, oldest first.
	Pending []agent.Interaction `json:"pending,omitempty"`
	// Seq is the owner's bus sequence number when a subscription began.
	Seq uint64 `json:"seq,omitempty"`
	// Turn is a KindTurn's spec; Resolution a KindInteract's answer.
	Turn       *TurnSpec   `json:"turn,omitempty"`
	Resolution *Resolution `json:"resolution,omitempty"`
}

// Event is one event line of a subscription: exactly one field but Node
// is set. Node is the node whose agent an agent event comes from (0 for
// the question of an ask node, whose session is the run).
type Event struct {
	Node                 int64                       `json:"node,omitempty"`
	NodeChanged          *tree.NodeChanged           `json:"node_changed,omitempty"`
	AgentStarted         *tree.AgentStarted          `json:"agent_started,omitempty"`
	RunFinished          *tree.RunFinished           `json:"run_finished,omitempty"`
	InteractionRequested *agent.InteractionRequested `json:"interaction_requested,omitempty"`
	InteractionResolved  *agent.InteractionResolved  `json:"interaction_resolved,omitempty"`
	ToolCallStarted      *agent.ToolCallStarted      `json:"tool_call_started,omitempty"`
	ToolCallFinished     *agent.ToolCallFinished     `json:"tool_call_finished,omitempty"`
	AssistantMessage     *agent.AssistantMessage     `json:"assistant_message,omitempty"`
	UsageUpdated         *agent.UsageUpdated         `json:"usage_updated,omitempty"`
	HookMessage          *agent.HookMessage          `json:"hook_message,omitempty"`
	// The bounds of a handed-out turn's model calls and of the turn,
	// sent by the worker running it (turnEvent) for the driver's
	// telemetry; subscriptions do not carry them.
	StepStarted *agent.StepStarted `json:"step_started,omitempty"`
	Retrying    *agent.Retrying    `json:"retrying,omitempty"`
	Idle        *agent.Idle        `json:"idle,omitempty"`
	Error       *agent.Error       `json:"error,omitempty"`
}

// turnEvent is wrap for the events a worker sends its run's driver of a
// turn it runs: wrap's and the bounds of the steps and of the turn.
func turnEvent(ev agent.Event) (Event, bool) {
	switch v := ev.(type) {
	case *agent.StepStarted:
		return Event{StepStarted: v}, true
	case *agent.Retrying:
		return Event{Retrying: v}, true
	case *agent.Idle:
		return Event{Idle: v}, true
	case *agent.Error:
		return Event{Error: v}, true
	}
	return wrap(ev, 0)
}

// wrap returns ev as an Event line, or false for an event that is not
// streamed (deltas, compaction, …).
func wrap(ev agent.Event, node int64) (Event, bool) {
	e := Event{Node: node}
	switch v := ev.(type) {
	case *tree.NodeChanged:
		e.NodeChanged = v
	case *tree.AgentStarted:
		e.AgentStarted = v
	case *tree.RunFinished:
		e.RunFinished = v
	case *agent.InteractionRequested:
		e.InteractionRequested = v
	case *agent.InteractionResolved:
		e.InteractionResolved = v
	case *agent.ToolCallStarted:
		e.ToolCallStarted = v
	case *agent.ToolCallFinished:
		e.ToolCallFinished = v
	case *agent.AssistantMessage:
		e.AssistantMessage = v
	case *agent.UsageUpdated:
		e.UsageUpdated = v
	case *agent.HookMessage:
		e.HookMessage = v
	default:
		return Event{}, false
	}
	return e, true
}

// Value is the event the line carries (nil for an empty line).
func (e Event) Value() agent.Event {
	switch {
	case e.NodeChanged != nil:
		return e.NodeChanged
	case e.AgentStarted != nil:
		return e.AgentStarted
	case e.RunFinished != nil:
		return e.RunFinished
	case e.InteractionRequested != nil:
		return e.InteractionRequested
	case e.InteractionResolved != nil:
		return e.InteractionResolved
	case e.ToolCallStarted != nil:
		return e.ToolCallStarted
	case e.ToolCallFinished != nil:
		return e.ToolCallFinished
	case e.AssistantMessage != nil:
		return e.AssistantMessage
	case e.UsageUpdated != nil:
		return e.UsageUpdated
	case e.HookMessage != nil:
		return e.HookMessage
	case e.StepStarted != nil:
		return e.StepStarted
	case e.Retrying != nil:
		return e.Retrying
	case e.Idle != nil:
		return e.Idle
	case e.Error != nil:
		return e.Error
	}
	return nil
}

// Code classifies a failed request.
type Code string

// The error codes.
const (
	CodeUnknownKind        Code = "unknown_kind"        // ErrUnknownKind
	CodeVersion            Code = "unsupported_version" // ErrVersion
	CodeBadRequest         Code = "bad_request"         // ErrBadRequest
	CodeUnknownNode        Code = "unknown_node"        // tree.ErrUnknownNode
	CodeBadState           Code = "bad_state"           // tree.ErrBadState
	CodeNotDriven          Code = "not_driven"          // tree.ErrNotDriven
	CodeUnknownInteraction Code = "unknown_interaction" // agent.ErrUnknownInteraction
	CodeWrongResponse      Code = "wrong_response"      // agent.ErrWrongResponse
	CodeStaleTurn          Code = "stale_turn"          // ErrStaleTurn
	CodeUnauthorized       Code = "unauthorized"        // ErrUnauthorized
	CodeBudget             Code = "budget_exhausted"    // tree.ErrBudgetExhausted
	CodeNodeBudget         Code = "node_budget"         // tree.ErrNodeBudget
	// The model failures a node's turn is retried after (llm.Retryable).
	CodeRateLimited Code = "rate_limited" // llm.ErrRateLimited
	CodeServer      Code = "server_error" // llm.ErrServer
	CodeConnection  Code = "connection"   // llm.ErrConnection
	CodeStalled     Code = "stalled"      // llm.ErrStalled
	CodeBadResponse Code = "bad_response" // llm.ErrBadResponse
	CodeCancelled   Code = "cancelled"    // context.Canceled
	CodeFailed      Code = "failed"       // anything else
)

// Errors of the protocol itself.
var (
	ErrUnknownKind = errors.New("unknown request kind")
	ErrVersion     = errors.New("unsupported protocol version")
	ErrBadRequest  = errors.New("bad request")
	// ErrUnauthorized: a request on a TCP endpoint without its token.
	ErrUnauthorized = errors.New("request not authorized: wrong or missing token")
)

var codes = []struct {
	code Code
	err  error
}{
	{CodeUnknownKind, ErrUnknownKind},
	{CodeVersion, ErrVersion},
	{CodeBadRequest, ErrBadRequest},
	{CodeUnknownNode, tree.ErrUnknownNode},
	{CodeBadState, tree.ErrBadState},
	{CodeNotDriven, tree.ErrNotDriven},
	{CodeUnknownInteraction, agent.ErrUnknownInteraction},
	{CodeWrongResponse, agent.ErrWrongResponse},
	{CodeStaleTurn, ErrStaleTurn},
	{CodeUnauthorized, ErrUnauthorized},
	{CodeBudget, tree.ErrBudgetExhausted},
	{CodeNodeBudget, tree.ErrNodeBudget},
	{CodeRateLimited, llm.ErrRateLimited},
	{CodeServer, llm.ErrServer},
	{CodeConnection, llm.ErrConnection},
	{CodeStalled, llm.ErrStalled},
	{CodeBadResponse, llm.ErrBadResponse},
	{CodeCancelled, context.Canceled},
}

// failure is the reply to a request that failed with err.
func failure(err error) Reply {
	r := Reply{Error: err.Error(), Code: CodeFailed}
	for _, c := range codes {
		if errors.Is(err, c.err) {
			r.Code = c.code
			break
		}
	}
	return r
}

// RemoteError is a request the owner refused; it unwraps to the sentinel
// error of its Code.
type RemoteError struct {
	Code    Code
	Message string
}

func (e *RemoteError) Error() string { return e.Message }

func (e *RemoteError) Unwrap() error {
	for _, c := range codes {
		if c.code == e.Code {
			return c.err
		}
	}
	return nil
}

// err is the reply's error, nil when it succeeded.
func (r Reply) err() error {
	if r.OK {
		return nil
	}
	return &RemoteError{Code: r.Code, Message: r.Error}
}
