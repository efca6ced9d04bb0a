package agent

import (
	"context"
	"encoding/json"
	"time"

	"github.com/arbor-run/arbor/internal/llm"
)

// Meta is carried by every event. Seq is assigned by the Bus: strictly
// increasing per process, in publication order.
type Meta struct {
	Seq       uint64    `json:"seq"`
	SessionID string    `json:"session_id"`
	At        time.Time `json:"at"`
}

func (m *Meta) meta() *Meta { return m }

// Event is one thing that happened in an agent. The set is closed: the
// types below. Front ends translate events into their wire formats.
type Event interface{ meta() *Meta }

// MetaOf returns the event's metadata.
func MetaOf(e Event) Meta { return *e.meta() }

type sessionKey struct{}

// WithSession marks ctx as the context of session id's model calls, so
// that what a shared provider reports (a retry) names its session.
func WithSession(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, sessionKey{}, id)
}

// SessionOf returns the session WithSession put into ctx, "" if none.
func SessionOf(ctx context.Context) string {
	id, _ := ctx.Value(sessionKey{}).(string)
	return id
}

// StepStarted opens step Step (1-based within one Send): one model call
// plus the tools it asks for.
type StepStarted struct {
	Meta
	Step  int    `json:"step"`
	Model string `json:"model"`
	// Provider is the name of the model's provider ("anthropic", or the
	// name the config gives an OpenAI-compatible server).
	Provider string `json:"provider,omitempty"`
}

// TextDelta is a fragment of assistant text as it streams.
type TextDelta struct {
	Meta
	Text string `json:"text"`
}

// ThinkingDelta is a fragment of the model's reasoning as it streams.
type ThinkingDelta struct {
	Meta
	Text string `json:"text"`
}

// ToolInputStarted opens the streaming of a tool call's arguments, as the
// model writes them (before the call is complete or run).
type ToolInputStarted struct {
	Meta
	Index  int    `json:"index"`
	CallID string `json:"call_id"`
	Tool   string `json:"tool"`
}

// ToolInputDelta is a fragment of a tool call's JSON arguments.
type ToolInputDelta struct {
	Meta
	Index int    `json:"index"`
	JSON  string `json:"json"`
}

// ToolInputFinished closes the streaming of call Index's arguments.
type ToolInputFinished struct {
	Meta
	Index int `json:"index"`
}

// ToolCallStarted is emitted before a tool runs (after its intent is stored).
type ToolCallStarted struct {
	Meta
	CallID string          `json:"call_id"`
	Tool   string          `json:"tool"`
	Input  json.RawMessage `json:"input"`
}

// ToolCallFinished carries a tool's result.
type ToolCallFinished struct {
	Meta
	CallID   string        `json:"call_id"`
	Tool     string        `json:"tool"`
	Result   string        `json:"result"`
	IsError  bool          `json:"is_error"`
	Duration time.Duration `json:"duration"`
	// Blocked says what the OS sandbox refused during the call (a path,
	// a host), one line each; front ends show it to people.
	Blocked []string `json:"blocked,omitempty"`
}

// AssistantMessage is a complete assistant message, after it is stored.
type AssistantMessage struct {
	Meta
	Message    llm.Message    `json:"message"`
	StopReason llm.StopReason `json:"stop_reason"`
	Model      string         `json:"model"`
	ResponseID string         `json:"response_id,omitempty"`
}

// UsageUpdated reports one model call's usage and the session totals.
type UsageUpdated struct {
	Meta
	Model     string    `json:"model"`
	Call      llm.Usage `json:"call"`
	CallCost  float64   `json:"call_cost_usd"`
	Total     llm.Usage `json:"total"`
	TotalCost float64   `json:"total_cost_usd"`
	// CostKnown is false once any call used a model without a price.
	CostKnown bool `json:"cost_known"`
}

// Retrying says a model call failed transiently and will be retried.
type Retrying struct {
	Meta
	Attempt int           `json:"attempt"`
	Delay   time.Duration `json:"delay"`
	Error   string        `json:"error"`
}

// InteractionRequested says the agent waits on a person or client.
type InteractionRequested struct {
	Meta
	Interaction Interaction `json:"interaction"`
}

// InteractionResolved says a pending interaction ended.
type InteractionResolved struct {
	Meta
	ID   string          `json:"id"`
	Kind InteractionKind `json:"kind"`
	// Resolution says how: "answered", "timeout", "cancelled" (someone
	// stopped the work), "error" (it ended because something failed).
	Resolution string   `json:"resolution"`
	Response   Response `json:"response"`
}

// CompactionStarted and CompactionFinished bracket a context compaction.
type CompactionStarted struct {
	Meta
	EstimatedTokens int64  `json:"estimated_tokens"`
	Window          int64  `json:"window"`
	Trigger         string `json:"trigger"` // "manual" or "auto"
}

// CompactionFinished reports a compaction's outcome; Err is set when it
// failed (the loop goes on with the uncompacted context).
type CompactionFinished struct {
	Meta
	UpToSeq      int64  `json:"up_to_seq"`
	TokensBefore int64  `json:"tokens_before"`
	TokensAfter  int64  `json:"tokens_after"`
	Trigger      string `json:"trigger"` // "manual" or "auto"
	// Summary is the message that stands for the compacted turns in
	// the model's context from now on ("" when the compaction failed).
	Summary string `json:"summary,omitempty"`
	Err     string `json:"error,omitempty"`
	// Refused: the compaction did not run, for the reason in Err
	// (TurnHooks.Compacting refused it); nothing was summarized.
	Refused bool `json:"refused,omitempty"`
}

// ContextPressure warns, once per context, that the context approaches
// the size at which it will be compacted.
type ContextPressure struct {
	Meta
	EstimatedTokens int64 `json:"estimated_tokens"`
	Window          int64 `json:"window"`
}

// HookMessage is what a hook said for the person, never for the model
// (its systemMessage), as Claude Code shows it: "Stop says: …",
// "PreToolUse:Bash says: …".
type HookMessage struct {
	Meta
	Text string `json:"text"`
	// Event is the hook event whose hook said it ("PreCompact"), "" when
	// not known.
	Event string `json:"event,omitempty"`
	// Level is Claude Code's: "notice".
	Level string `json:"level"`
}

// LevelNotice is a HookMessage's level.
const LevelNotice = "notice"

// LoopWarning says the model repeated the same call Count times in a row.
type LoopWarning struct {
	Meta
	Tool  string `json:"tool"`
	Count int    `json:"count"`
}

// Error reports a failure that ended a Send.
type Error struct {
	Meta
	Message string `json:"message"`
}

// Idle says the agent finished a Send and waits for input.
type Idle struct {
	Meta
	Outcome Outcome `json:"outcome"`
	Result  string  `json:"result,omitempty"`
}
