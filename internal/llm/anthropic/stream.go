package anthropic

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/arbor-run/arbor/internal/llm"
)

var (
	errNoStart      = errors.New("event before message_start")
	errUnknownBlock = errors.New("event for a content block that was not started")
)

// event is one event of a Messages stream: the fields of every event type
// that arbor reads, in one plain struct. The SDK's MessageStreamEventUnion
// decodes the same JSON through its reflection-driven decoder, which kept
// metadata for every field of every event and was a quarter of a
// headless turn's CPU; TestEventMatchesTheSDK checks that both read the
// same values.
//
// The SDK coerces a field of the wrong JSON type; arbor refuses it as a
// bad response, except for numbers (index and token counts), which it
// reads as the SDK does when a server sends them as strings or floats
// (llm.Count).
type event struct {
	Type         string       `json:"type"`
	Index        llm.Count    `json:"index"`
	Message      eventMessage `json:"message"`
	ContentBlock eventBlock   `json:"content_block"`
	Delta        eventDelta   `json:"delta"`
	Usage        eventUsage   `json:"usage"`
}

// eventMessage is message_start's message.
type eventMessage struct {
	ID    string     `json:"id"`
	Model string     `json:"model"`
	Usage eventUsage `json:"usage"`
}

// eventUsage is a usage object: message_start's (absolute) or
// message_delta's (cumulative).
type eventUsage struct {
	InputTokens              llm.Count `json:"input_tokens"`
	OutputTokens             llm.Count `json:"output_tokens"`
	CacheReadInputTokens     llm.Count `json:"cache_read_input_tokens"`
	CacheCreationInputTokens llm.Count `json:"cache_creation_input_tokens"`
}

func (u eventUsage) usage() llm.Usage {
	return llm.Usage{
		InputTokens:      int64(u.InputTokens),
		OutputTokens:     int64(u.OutputTokens),
		CacheReadTokens:  int64(u.CacheReadInputTokens),
		CacheWriteTokens: int64(u.CacheCreationInputTokens),
	}
}

// eventBlock is content_block_start's block, of any type.
type eventBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	Signature string          `json:"signature"`
	Data      string          `json:"data"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
}

// eventDelta is content_block_delta's delta or message_delta's.
type eventDelta struct {
	Type        string         `json:"type"`
	Text        string         `json:"text"`
	Thinking    string         `json:"thinking"`
	Signature   string         `json:"signature"`
	PartialJSON string         `json:"partial_json"`
	StopReason  sdk.StopReason `json:"stop_reason"`
}

// block is a content block being streamed.
type block struct {
	part *llm.Part
	text strings.Builder
	sig  strings.Builder
	// tool is the block's tool call number, -1 for other blocks.
	tool int
	// input is the streamed JSON of a tool call; startInput the input the
	// block started with, used when no delta follows.
	input      strings.Builder
	startInput string
	finished   bool
}

// assembler turns the stream's events into llm events and assembles
// the final response. It is used by one goroutine.
type assembler struct {
	started bool
	done    bool
	id      string
	model   string
	stop    llm.StopReason
	usage   llm.Usage
	// blocks is indexed by the API's content block index; parts keeps the
	// message's parts in order, skipping blocks arbor does not keep.
	blocks map[llm.Count]*block
	parts  []*llm.Part
	tools  int
}

func newAssembler() *assembler {
	return &assembler{blocks: make(map[llm.Count]*block)}
}

// add consumes one event and returns the llm events it produces.
func (a *assembler) add(ev *event) ([]llm.Event, error) {
	if !a.started && ev.Type != "message_start" {
		return nil, fmt.Errorf("%w: %q", errNoStart, ev.Type)
	}
	switch ev.Type {
	case "message_start":
		a.started = true
		a.id, a.model = ev.Message.ID, ev.Message.Model
		a.usage = ev.Message.Usage.usage()
	case "content_block_start":
		return a.start(ev)
	case "content_block_delta":
		return a.delta(ev)
	case "content_block_stop":
		return a.stopBlock(ev.Index)
	case "message_delta":
		a.stop = stopReason(ev.Delta.StopReason)
		// message_delta usage is cumulative; input counts are only
		// present when the server revises them.
		u := ev.Usage.usage()
		a.usage.OutputTokens = u.OutputTokens
		if u.InputTokens > 0 {
			a.usage.InputTokens = u.InputTokens
		}
		if u.CacheReadTokens > 0 {
			a.usage.CacheReadTokens = u.CacheReadTokens
		}
		if u.CacheWriteTokens > 0 {
			a.usage.CacheWriteTokens = u.CacheWriteTokens
		}
	case "message_stop":
		a.done = true
	}
	// Unknown event types are skipped: the API may add new ones.
	return nil, nil
}

func (a *assembler) start(ev *event) ([]llm.Event, error) {
	cb := ev.ContentBlock
	b := &block{tool: -1}
	switch cb.Type {
	case "text":
		b.part = &llm.Part{Type: llm.PartText}
		b.text.WriteString(cb.Text)
	case "thinking":
		b.part = &llm.Part{Type: llm.PartThinking}
		b.text.WriteString(cb.Thinking)
		b.sig.WriteString(cb.Signature)
	case "redacted_thinking":
		b.part = &llm.Part{Type: llm.PartThinking}
		b.sig.WriteString(cb.Data)
	case "tool_use":
		b.tool = a.tools
		a.tools++
		b.part = &llm.Part{Type: llm.PartToolCall, ToolCall: &llm.ToolCall{ID: cb.ID, Name: cb.Name}}
		b.startInput = string(cb.Input)
	}
	// Server-side tool blocks and other kinds are tracked but not kept.
	a.blocks[ev.Index] = b
	if b.part != nil {
		a.parts = append(a.parts, b.part)
	}
	var out []llm.Event
	switch {
	case b.tool >= 0:
		out = append(out, llm.ToolCallBegin{Index: b.tool, ID: cb.ID, Name: cb.Name})
	case cb.Type == "text" && cb.Text != "":
		out = append(out, llm.TextDelta{Text: cb.Text})
	case cb.Type == "thinking" && cb.Thinking != "":
		out = append(out, llm.ThinkingDelta{Text: cb.Thinking})
	}
	return out, nil
}

func (a *assembler) delta(ev *event) ([]llm.Event, error) {
	b, ok := a.blocks[ev.Index]
	if !ok {
		return nil, fmt.Errorf("%w: delta for block %d", errUnknownBlock, ev.Index)
	}
	d := ev.Delta
	switch d.Type {
	case "text_delta":
		b.text.WriteString(d.Text)
		if b.part != nil && b.part.Type == llm.PartText && d.Text != "" {
			return []llm.Event{llm.TextDelta{Text: d.Text}}, nil
		}
	case "thinking_delta":
		b.text.WriteString(d.Thinking)
		if b.part != nil && b.part.Type == llm.PartThinking && d.Thinking != "" {
			return []llm.Event{llm.ThinkingDelta{Text: d.Thinking}}, nil
		}
	case "signature_delta":
		b.sig.WriteString(d.Signature)
	case "input_json_delta":
		b.input.WriteString(d.PartialJSON)
		if b.tool >= 0 && d.PartialJSON != "" {
			return []llm.Event{llm.ToolCallDelta{Index: b.tool, JSON: d.PartialJSON}}, nil
		}
	}
	return nil, nil
}

func (a *assembler) stopBlock(index llm.Count) ([]llm.Event, error) {
	b, ok := a.blocks[index]
	if !ok {
		return nil, fmt.Errorf("%w: stop for block %d", errUnknownBlock, index)
	}
	if err := b.finish(); err != nil {
		return nil, err
	}
	if b.tool >= 0 {
		return []llm.Event{llm.ToolCallEnd{Index: b.tool}}, nil
	}
	return nil, nil
}

// finish completes the block's part from what was streamed; it is
// idempotent.
func (b *block) finish() error {
	if b.part == nil || b.finished {
		return nil
	}
	b.finished = true
	switch b.part.Type {
	case llm.PartText, llm.PartThinking:
		b.part.Text = b.text.String()
		b.part.Signature = b.sig.String()
	case llm.PartToolCall:
		input, err := toolInput(b.input.String(), b.startInput)
		if err != nil {
			return fmt.Errorf("tool call %q: %w", b.part.ToolCall.ID, err)
		}
		b.part.ToolCall.Input = input
	}
	return nil
}

// toolInput is the call's complete input: the streamed JSON, else the input
// the block started with, else {}.
func toolInput(streamed, start string) (json.RawMessage, error) {
	s := strings.TrimSpace(streamed)
	if s == "" {
		s = strings.TrimSpace(start)
	}
	if s == "" || s == "null" {
		return json.RawMessage(`{}`), nil
	}
	if !json.Valid([]byte(s)) {
		return nil, fmt.Errorf("input is not valid JSON: %.200q", s)
	}
	return json.RawMessage(s), nil
}

// response returns the assembled response; call it after message_stop.
// Blocks the server never stopped are finished as they are.
func (a *assembler) response() (*llm.Response, error) {
	for _, b := range a.blocks {
		if err := b.finish(); err != nil {
			return nil, err
		}
	}
	msg := llm.Message{Role: llm.RoleAssistant, Parts: make([]llm.Part, 0, len(a.parts))}
	for _, p := range a.parts {
		msg.Parts = append(msg.Parts, *p)
	}
	stop := a.stop
	if stop == "" {
		stop = llm.StopEndTurn
	}
	return &llm.Response{ID: a.id, Model: a.model, Message: msg, StopReason: stop, Usage: a.usage}, nil
}

func stopReason(r sdk.StopReason) llm.StopReason {
	switch r {
	case sdk.StopReasonEndTurn:
		return llm.StopEndTurn
	case sdk.StopReasonToolUse:
		return llm.StopToolUse
	case sdk.StopReasonMaxTokens, sdk.StopReasonModelContextWindowExceeded:
		return llm.StopMaxTokens
	case sdk.StopReasonStopSequence:
		return llm.StopSequence
	case sdk.StopReasonRefusal:
		return llm.StopRefusal
	case "":
		return ""
	default:
		return llm.StopOther
	}
}
