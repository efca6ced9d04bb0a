package streamjson

import (
	"encoding/json"
	"strings"

	"github.com/arbor-run/arbor/internal/agent"
)

// rawStream turns the agent's streaming events into Anthropic's raw
// Messages stream events (message_start, content_block_start,
// content_block_delta, content_block_stop, message_delta, message_stop),
// which Claude Code puts in its stream_event lines. It is the subscriber's
// own state: only translate uses it.
type rawStream struct {
	started bool
	index   int    // the open block's index, -1 when none
	open    string // the open block's type: text, thinking, tool_use
	next    int
}

// rawEvent is one of Anthropic's stream events.
type rawEvent struct {
	Type         string          `json:"type"`
	Message      *apiMessage     `json:"message,omitempty"`
	Index        *int            `json:"index,omitempty"`
	ContentBlock *rawBlock       `json:"content_block,omitempty"`
	Delta        json.RawMessage `json:"delta,omitempty"`
	Usage        *apiUsage       `json:"usage,omitempty"`
}

type rawBlock struct {
	Type     string          `json:"type"`
	Text     *string         `json:"text,omitempty"`
	Thinking *string         `json:"thinking,omitempty"`
	ID       string          `json:"id,omitempty"`
	Name     string          `json:"name,omitempty"`
	Input    json.RawMessage `json:"input,omitempty"`
}

func (r *rawStream) events(e agent.Event, model string) []rawEvent {
	var out []rawEvent
	start := func() {
		if !r.started {
			r.started, r.index, r.next = true, -1, 0
			out = append(out, rawEvent{Type: "message_start", Message: &apiMessage{
				ID: "msg_" + strings.ReplaceAll(newUUID(), "-", ""), Type: "message", Role: "assistant", Model: model,
				Content: []apiBlock{}, Usage: &apiUsage{}}})
		}
	}
	closeBlock := func() {
		if r.index >= 0 {
			i := r.index
			out = append(out, rawEvent{Type: "content_block_stop", Index: &i})
			r.index, r.open = -1, ""
		}
	}
	openBlock := func(kind string, b rawBlock) {
		if r.open == kind && kind != "tool_use" {
			return
		}
		closeBlock()
		r.index, r.open = r.next, kind
		r.next++
		i := r.index
		out = append(out, rawEvent{Type: "content_block_start", Index: &i, ContentBlock: &b})
	}
	delta := func(v any) {
		b, _ := json.Marshal(v)
		i := r.index
		out = append(out, rawEvent{Type: "content_block_delta", Index: &i, Delta: b})
	}
	empty := ""
	switch e := e.(type) {
	case *agent.TextDelta:
		start()
		openBlock("text", rawBlock{Type: "text", Text: &empty})
		delta(map[string]string{"type": "text_delta", "text": e.Text})
	case *agent.ThinkingDelta:
		start()
		openBlock("thinking", rawBlock{Type: "thinking", Thinking: &empty})
		delta(map[string]string{"type": "thinking_delta", "thinking": e.Text})
	case *agent.ToolInputStarted:
		start()
		openBlock("tool_use", rawBlock{Type: "tool_use", ID: e.CallID, Name: e.Tool, Input: json.RawMessage("{}")})
	case *agent.ToolInputDelta:
		start()
		delta(map[string]string{"type": "input_json_delta", "partial_json": e.JSON})
	case *agent.ToolInputFinished:
		closeBlock()
	case *agent.AssistantMessage:
		if !r.started {
			return nil
		}
		closeBlock()
		d, _ := json.Marshal(map[string]any{"stop_reason": string(e.StopReason), "stop_sequence": nil})
		out = append(out, rawEvent{Type: "message_delta", Delta: d, Usage: &apiUsage{}}, rawEvent{Type: "message_stop"})
		r.started = false
	}
	return out
}
