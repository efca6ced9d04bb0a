package llmtest

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// anthropic speaks the Messages API.
type anthropic struct{}

func (anthropic) name() string                         { return FormatAnthropic }
func (anthropic) decode(body []byte, r *Request) error { return decodeAnthropic(body, r) }
func (anthropic) resolve(t Turn, r Request) (answer, error) {
	if !r.Stream {
		// A message carries a call's input as JSON; only a stream, whose
		// input_json_delta fragments are text, can carry arguments that
		// are not JSON.
		for i, c := range t.ToolCalls {
			if c.RawInput != "" && !json.Valid([]byte(c.RawInput)) {
				return answer{}, fmt.Errorf("tool call %d (%s): raw_input %.60q is not JSON, which a non-streaming Anthropic message cannot carry (stream the request, or use the OpenAI format)", i+1, c.Name, c.RawInput)
			}
		}
	}
	return resolve(t, r, "msg_", "toolu_")
}

// Wire types, as the Anthropic SDK parses them.

type antMessage struct {
	ID           string     `json:"id"`
	Type         string     `json:"type"`
	Role         string     `json:"role"`
	Model        string     `json:"model"`
	Content      []antBlock `json:"content"`
	StopReason   *string    `json:"stop_reason"`
	StopSequence *string    `json:"stop_sequence"`
	Usage        antUsage   `json:"usage"`
}

type antBlock struct {
	Type      string          `json:"type"`
	Text      *string         `json:"text,omitempty"`
	Thinking  *string         `json:"thinking,omitempty"`
	Signature *string         `json:"signature,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
}

type antUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
}

type antMessageStart struct {
	Type    string     `json:"type"`
	Message antMessage `json:"message"`
}

type antBlockStart struct {
	Type         string   `json:"type"`
	Index        int      `json:"index"`
	ContentBlock antBlock `json:"content_block"`
}

type antBlockDelta struct {
	Type  string   `json:"type"`
	Index int      `json:"index"`
	Delta antDelta `json:"delta"`
}

type antDelta struct {
	Type        string  `json:"type"`
	Text        *string `json:"text,omitempty"`
	Thinking    *string `json:"thinking,omitempty"`
	Signature   *string `json:"signature,omitempty"`
	PartialJSON *string `json:"partial_json,omitempty"`
}

type antIndexed struct {
	Type  string `json:"type"`
	Index int    `json:"index"`
}

type antMessageDelta struct {
	Type  string `json:"type"`
	Delta struct {
		StopReason   string  `json:"stop_reason"`
		StopSequence *string `json:"stop_sequence"`
	} `json:"delta"`
	Usage antUsage `json:"usage"`
}

type antTyped struct {
	Type string `json:"type"`
}

type antError struct {
	Type  string `json:"type"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

func (a answer) antUsage(output int64) antUsage {
	return antUsage{
		InputTokens:              a.Usage.Input,
		CacheCreationInputTokens: a.Usage.CacheWrite,
		CacheReadInputTokens:     a.Usage.CacheRead,
		OutputTokens:             output,
	}
}

func ptr[T any](v T) *T { return &v }

// message is the non-streaming answer.
func (anthropic) message(a answer) []byte {
	m := antMessage{
		ID: a.ID, Type: "message", Role: "assistant", Model: a.Model,
		Content:    []antBlock{},
		StopReason: ptr(a.Stop),
		Usage:      a.antUsage(a.Usage.Output),
	}
	if a.Thinking != "" {
		m.Content = append(m.Content, antBlock{Type: "thinking", Thinking: ptr(a.Thinking), Signature: ptr(a.Signature)})
	}
	if a.Text != "" {
		m.Content = append(m.Content, antBlock{Type: "text", Text: ptr(a.Text)})
	}
	for _, c := range a.Calls {
		m.Content = append(m.Content, antBlock{Type: "tool_use", ID: c.ID, Name: c.Name, Input: json.RawMessage(c.Input)})
	}
	return mustJSON(m)
}

// events is the streamed answer: message_start, ping, one block each for
// thinking, text and every tool call, message_delta, message_stop.
func (anthropic) events(a answer) []sseEvent {
	var evs []sseEvent
	add := func(name string, v any) { evs = append(evs, sseEvent{name: name, data: mustJSON(v)}) }

	start := antMessage{
		ID: a.ID, Type: "message", Role: "assistant", Model: a.Model,
		Content: []antBlock{},
		Usage:   a.antUsage(1),
	}
	add("message_start", antMessageStart{Type: "message_start", Message: start})
	add("ping", antTyped{Type: "ping"})

	index := 0
	block := func(open antBlock, deltas []antDelta) {
		add("content_block_start", antBlockStart{Type: "content_block_start", Index: index, ContentBlock: open})
		for _, d := range deltas {
			add("content_block_delta", antBlockDelta{Type: "content_block_delta", Index: index, Delta: d})
		}
		add("content_block_stop", antIndexed{Type: "content_block_stop", Index: index})
		index++
	}
	if a.Thinking != "" {
		var ds []antDelta
		for _, w := range words(a.Thinking) {
			ds = append(ds, antDelta{Type: "thinking_delta", Thinking: ptr(w)})
		}
		ds = append(ds, antDelta{Type: "signature_delta", Signature: ptr(a.Signature)})
		block(antBlock{Type: "thinking", Thinking: ptr(""), Signature: ptr("")}, ds)
	}
	if a.Text != "" {
		var ds []antDelta
		for _, w := range words(a.Text) {
			ds = append(ds, antDelta{Type: "text_delta", Text: ptr(w)})
		}
		block(antBlock{Type: "text", Text: ptr("")}, ds)
	}
	for _, c := range a.Calls {
		var ds []antDelta
		for _, f := range fragments(c.Input, 3) {
			ds = append(ds, antDelta{Type: "input_json_delta", PartialJSON: ptr(f)})
		}
		block(antBlock{Type: "tool_use", ID: c.ID, Name: c.Name, Input: json.RawMessage(`{}`)}, ds)
	}

	md := antMessageDelta{Type: "message_delta", Usage: a.antUsage(a.Usage.Output)}
	md.Delta.StopReason = a.Stop
	add("message_delta", md)
	add("message_stop", antTyped{Type: "message_stop"})
	return evs
}

func (anthropic) malformed() sseEvent {
	return sseEvent{name: "content_block_delta", data: []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":`)}
}

func (anthropic) errorBody(status int, msg string) []byte {
	var e antError
	e.Type = "error"
	e.Error.Message = msg
	switch {
	case status == http.StatusBadRequest:
		e.Error.Type = "invalid_request_error"
	case status == http.StatusUnauthorized:
		e.Error.Type = "authentication_error"
	case status == http.StatusForbidden:
		e.Error.Type = "permission_error"
	case status == http.StatusNotFound:
		e.Error.Type = "not_found_error"
	case status == http.StatusRequestEntityTooLarge:
		e.Error.Type = "request_too_large"
	case status == http.StatusTooManyRequests:
		e.Error.Type = "rate_limit_error"
	case status == 529:
		e.Error.Type = "overloaded_error"
	case status >= 500:
		e.Error.Type = "api_error"
	default:
		e.Error.Type = "invalid_request_error"
	}
	return mustJSON(e)
}

func (anthropic) requestIDHeader() string { return "request-id" }
