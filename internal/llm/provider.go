package llm

import (
	"context"
	"iter"
)

// Provider is one model backend: a name plus one streaming call.
//
// Stream yields deltas as they arrive and ends with exactly one *Done, or
// stops with a non-nil error (a *APIError or another error wrapping one of
// this package's sentinels where it applies). Cancelling ctx must abort the
// underlying HTTP stream at once; the iterator then yields ctx.Err().
type Provider interface {
	Name() string
	Stream(ctx context.Context, req *Request) iter.Seq2[Event, error]
}

// Request is one model call.
type Request struct {
	// Model is the provider's own model name ("claude-sonnet-4-5", "gpt-5").
	Model    string     `json:"model"`
	System   string     `json:"system,omitempty"`
	Messages []Message  `json:"messages"`
	Tools    []ToolSpec `json:"tools,omitempty"`
	// MaxTokens caps the output; 0 means the provider's default.
	MaxTokens int64 `json:"max_tokens,omitempty"`
	// ThinkingBudget enables extended thinking with this many tokens where
	// the provider supports it; 0 disables it.
	ThinkingBudget int64 `json:"thinking_budget,omitempty"`
}

// Event is one item of a provider stream. The set is closed: TextDelta,
// ThinkingDelta, ToolCallBegin, ToolCallDelta, ToolCallEnd and Done.
type Event interface{ isEvent() }

// TextDelta is a fragment of assistant text.
type TextDelta struct{ Text string }

// ThinkingDelta is a fragment of the model's visible reasoning.
type ThinkingDelta struct{ Text string }

// ToolCallBegin opens tool call number Index of this response.
type ToolCallBegin struct {
	Index int
	ID    string
	Name  string
}

// ToolCallDelta is a fragment of the JSON arguments of call Index.
type ToolCallDelta struct {
	Index int
	JSON  string
}

// ToolCallEnd closes call Index; its arguments are complete.
type ToolCallEnd struct{ Index int }

// Done ends a stream successfully with the whole response.
type Done struct{ Response *Response }

func (TextDelta) isEvent()     {}
func (ThinkingDelta) isEvent() {}
func (ToolCallBegin) isEvent() {}
func (ToolCallDelta) isEvent() {}
func (ToolCallEnd) isEvent()   {}
func (Done) isEvent()          {}

// Response is a finished model call.
type Response struct {
	// ID is the provider's message id, when it sends one.
	ID         string     `json:"id,omitempty"`
	Model      string     `json:"model,omitempty"`
	Message    Message    `json:"message"`
	StopReason StopReason `json:"stop_reason"`
	Usage      Usage      `json:"usage"`
}

// Collect drains a stream and returns its final response.
func Collect(seq iter.Seq2[Event, error]) (*Response, error) {
	var resp *Response
	for ev, err := range seq {
		if err != nil {
			return nil, err
		}
		if d, ok := ev.(Done); ok {
			resp = d.Response
		}
	}
	if resp == nil {
		return nil, ErrNoResponse
	}
	return resp, nil
}
