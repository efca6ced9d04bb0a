// Package llm holds arbor's provider-neutral model types: messages made of
// typed parts, tool specs, usage and stop reasons, the stream events a
// provider yields, and the Provider seam itself.
//
// Invariants: a Message is plain data that round-trips through JSON without
// loss (the store persists it verbatim); a provider stream ends with exactly
// one *Done event or an error, never both.
package llm

import "encoding/json"

// Role is who authored a message.
type Role string

const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// PartType names the kind of a Part.
type PartType string

const (
	PartText       PartType = "text"
	PartThinking   PartType = "thinking"
	PartToolCall   PartType = "tool_call"
	PartToolResult PartType = "tool_result"
	// PartImage is an image a person sent with a user message.
	PartImage PartType = "image"
)

// Part is one piece of a message. It is a tagged union: Type says which of
// the other fields is meaningful.
type Part struct {
	Type PartType `json:"type"`
	// Text is set for PartText and PartThinking.
	Text string `json:"text,omitempty"`
	// Signature is the provider's opaque signature of a thinking block; it
	// must be sent back unchanged with the block.
	Signature  string      `json:"signature,omitempty"`
	ToolCall   *ToolCall   `json:"tool_call,omitempty"`
	ToolResult *ToolResult `json:"tool_result,omitempty"`
	// Image is set for PartImage.
	Image *Image `json:"image,omitempty"`
}

// ImagePart is a user message's image.
func ImagePart(img Image) Part { return Part{Type: PartImage, Image: &img} }

// HasImages reports whether the message holds an image a person sent.
func (m Message) HasImages() bool {
	for _, p := range m.Parts {
		if p.Type == PartImage {
			return true
		}
	}
	return false
}

// ToolCall is the model asking for one tool run.
type ToolCall struct {
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
	// InvalidInput holds arguments the model sent that are not valid JSON
	// (Input is then {}): the call is not run, and the model is told so in
	// its result, so it can try again.
	InvalidInput string `json:"invalid_input,omitempty"`
}

// ToolResult answers one ToolCall.
type ToolResult struct {
	CallID  string `json:"call_id"`
	Content string `json:"content"`
	IsError bool   `json:"is_error,omitempty"`
	// Images come with the text (an MCP tool's image content). Providers
	// whose tool results hold only text send them in a user message
	// right after the results.
	Images []Image `json:"images,omitempty"`
}

// Image is an inline image.
type Image struct {
	// MediaType is the MIME type ("image/png").
	MediaType string `json:"media_type"`
	// Data is the image, base64-encoded.
	Data string `json:"data"`
}

// Message is one turn of a conversation.
type Message struct {
	Role  Role   `json:"role"`
	Parts []Part `json:"parts"`
}

// TextPart returns a text part.
func TextPart(s string) Part { return Part{Type: PartText, Text: s} }

// UserText returns a user message holding one text part.
func UserText(s string) Message { return Message{Role: RoleUser, Parts: []Part{TextPart(s)}} }

// Text concatenates the message's text parts.
func (m Message) Text() string {
	var s string
	for _, p := range m.Parts {
		if p.Type == PartText {
			s += p.Text
		}
	}
	return s
}

// ToolCalls returns the message's tool calls in order.
func (m Message) ToolCalls() []ToolCall {
	n := 0
	for _, p := range m.Parts {
		if p.Type == PartToolCall && p.ToolCall != nil {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	// Counted first: a step of thousands of spawns grew it a dozen times.
	calls := make([]ToolCall, 0, n)
	for _, p := range m.Parts {
		if p.Type == PartToolCall && p.ToolCall != nil {
			calls = append(calls, *p.ToolCall)
		}
	}
	return calls
}

// ToolSpec describes a tool to the model. InputSchema is a JSON Schema
// object derived from the tool's argument struct.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// StopReason says why the model stopped producing output.
type StopReason string

const (
	StopEndTurn   StopReason = "end_turn"
	StopToolUse   StopReason = "tool_use"
	StopMaxTokens StopReason = "max_tokens"
	StopSequence  StopReason = "stop_sequence"
	StopRefusal   StopReason = "refusal"
	StopOther     StopReason = "other"
)

// Usage counts tokens of one or more model calls.
type Usage struct {
	InputTokens      int64 `json:"input_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
	CacheReadTokens  int64 `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int64 `json:"cache_write_tokens,omitempty"`
}

// Add returns the sum of u and o.
func (u Usage) Add(o Usage) Usage {
	return Usage{
		InputTokens:      u.InputTokens + o.InputTokens,
		OutputTokens:     u.OutputTokens + o.OutputTokens,
		CacheReadTokens:  u.CacheReadTokens + o.CacheReadTokens,
		CacheWriteTokens: u.CacheWriteTokens + o.CacheWriteTokens,
	}
}

// Total is every token counted, input of all kinds plus output.
func (u Usage) Total() int64 {
	return u.InputTokens + u.OutputTokens + u.CacheReadTokens + u.CacheWriteTokens
}
