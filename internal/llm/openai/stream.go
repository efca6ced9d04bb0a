package openai

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/arbor-run/arbor/internal/llm"
)

// chunk is one chunk of a Chat Completions stream: the fields arbor reads,
// in plain structs. The SDK's ChatCompletionChunk decodes the same JSON
// through its reflection-driven decoder, which keeps metadata for every
// field; TestChunkMatchesTheSDK checks that both read the same values.
// Numbers (indexes, token counts) are read as the SDK reads them, also
// from strings and floats (llm.Count); text or structure of the wrong
// JSON type, which the SDK coerced, is a bad response.
type chunk struct {
	ID      string        `json:"id"`
	Model   string        `json:"model"`
	Choices []chunkChoice `json:"choices"`
	// Usage is nil when the chunk has none (or null).
	Usage *chunkUsage `json:"usage"`
}

type chunkChoice struct {
	Index        llm.Count  `json:"index"`
	Delta        chunkDelta `json:"delta"`
	FinishReason string     `json:"finish_reason"`
}

type chunkDelta struct {
	Content   string          `json:"content"`
	Refusal   string          `json:"refusal"`
	ToolCalls []chunkToolCall `json:"tool_calls"`
	// ReasoningContent and Reasoning are not part of OpenAI's schema:
	// DeepSeek, Qwen and vLLM send reasoning_content, Ollama and
	// OpenRouter reasoning. They are kept raw, as the SDK keeps extra
	// fields, and read by reasoningOf.
	ReasoningContent json.RawMessage `json:"reasoning_content"`
	Reasoning        json.RawMessage `json:"reasoning"`
}

type chunkToolCall struct {
	Index    llm.Count `json:"index"`
	ID       string    `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type chunkUsage struct {
	PromptTokens        llm.Count `json:"prompt_tokens"`
	CompletionTokens    llm.Count `json:"completion_tokens"`
	PromptTokensDetails struct {
		CachedTokens     llm.Count `json:"cached_tokens"`
		CacheWriteTokens llm.Count `json:"cache_write_tokens"`
	} `json:"prompt_tokens_details"`
}

// call is a tool call being streamed.
type call struct {
	id, name string
	args     strings.Builder
}

// assembler turns chunks into llm events and assembles the final response.
// It is used by one goroutine.
type assembler struct {
	id, model string
	thinking  strings.Builder
	text      strings.Builder
	refused   bool
	// calls are in the order the model opened them; byIndex maps the wire
	// index of a call to its position.
	calls    []*call
	byIndex  map[llm.Count]int
	finish   string
	finished bool
	usage    llm.Usage
}

func newAssembler() *assembler {
	return &assembler{byIndex: make(map[llm.Count]int)}
}

// add consumes one chunk and returns the llm events it produces.
func (a *assembler) add(c *chunk) ([]llm.Event, error) {
	if a.id == "" {
		a.id = c.ID
	}
	if a.model == "" {
		a.model = c.Model
	}
	if c.Usage != nil {
		a.setUsage(c.Usage)
	}
	var out []llm.Event
	for i := range c.Choices {
		choice := &c.Choices[i]
		if choice.Index != 0 {
			continue // arbor asks for one choice
		}
		evs, err := a.delta(&choice.Delta)
		if err != nil {
			return nil, err
		}
		out = append(out, evs...)
		if choice.FinishReason != "" && !a.finished {
			a.finished, a.finish = true, choice.FinishReason
			for i := range a.calls {
				out = append(out, llm.ToolCallEnd{Index: i})
			}
		}
	}
	return out, nil
}

func (a *assembler) delta(d *chunkDelta) ([]llm.Event, error) {
	var out []llm.Event
	reasoning, err := reasoningOf(d)
	if err != nil {
		return nil, err
	}
	if reasoning != "" {
		a.thinking.WriteString(reasoning)
		out = append(out, llm.ThinkingDelta{Text: reasoning})
	}
	if d.Content != "" {
		a.text.WriteString(d.Content)
		out = append(out, llm.TextDelta{Text: d.Content})
	}
	if d.Refusal != "" {
		a.refused = true
		a.text.WriteString(d.Refusal)
		out = append(out, llm.TextDelta{Text: d.Refusal})
	}
	for i := range d.ToolCalls {
		out = append(out, a.toolDelta(&d.ToolCalls[i])...)
	}
	return out, nil
}

// reasoningOf reads the reasoning text of a delta: reasoning_content, else
// reasoning.
func reasoningOf(d *chunkDelta) (string, error) {
	for _, f := range []struct {
		key string
		raw json.RawMessage
	}{{"reasoning_content", d.ReasoningContent}, {"reasoning", d.Reasoning}} {
		if len(f.raw) == 0 || string(f.raw) == "null" {
			continue
		}
		var s string
		if err := json.Unmarshal(f.raw, &s); err != nil {
			return "", fmt.Errorf("delta %s is not a string: %w", f.key, err)
		}
		if s != "" {
			return s, nil
		}
	}
	return "", nil
}

// toolDelta accumulates one fragment of a tool call. The first fragment of
// an index carries its id and name; a fragment with a new id on an index
// whose call already has arguments opens a new call (some servers reuse
// index 0 for parallel calls).
func (a *assembler) toolDelta(tc *chunkToolCall) []llm.Event {
	var out []llm.Event
	pos, ok := a.byIndex[tc.Index]
	if ok && tc.ID != "" && tc.ID != a.calls[pos].id && a.calls[pos].args.Len() > 0 {
		ok = false
	}
	if !ok {
		id := tc.ID
		if id == "" {
			id = newCallID()
		}
		pos = len(a.calls)
		a.calls = append(a.calls, &call{id: id, name: tc.Function.Name})
		a.byIndex[tc.Index] = pos
		out = append(out, llm.ToolCallBegin{Index: pos, ID: id, Name: tc.Function.Name})
	} else if a.calls[pos].name == "" && tc.Function.Name != "" {
		a.calls[pos].name = tc.Function.Name
	}
	if args := tc.Function.Arguments; args != "" {
		a.calls[pos].args.WriteString(args)
		out = append(out, llm.ToolCallDelta{Index: pos, JSON: args})
	}
	return out
}

// setUsage records a usage report. prompt_tokens includes cached and
// cache-write tokens; InputTokens must not, or cost is counted twice.
func (a *assembler) setUsage(u *chunkUsage) {
	cached := int64(u.PromptTokensDetails.CachedTokens)
	written := int64(u.PromptTokensDetails.CacheWriteTokens)
	a.usage = llm.Usage{
		InputTokens:      max(int64(u.PromptTokens)-cached-written, 0),
		OutputTokens:     int64(u.CompletionTokens),
		CacheReadTokens:  cached,
		CacheWriteTokens: written,
	}
}

// response returns the assembled response; call it once the stream ended
// after a finish_reason.
func (a *assembler) response() (*llm.Response, error) {
	msg := llm.Message{Role: llm.RoleAssistant}
	if a.thinking.Len() > 0 {
		msg.Parts = append(msg.Parts, llm.Part{Type: llm.PartThinking, Text: a.thinking.String()})
	}
	if a.text.Len() > 0 {
		msg.Parts = append(msg.Parts, llm.TextPart(a.text.String()))
	}
	for _, c := range a.calls {
		if c.name == "" {
			return nil, fmt.Errorf("tool call %q has no name", c.id)
		}
		// Arguments that are not valid JSON are the model's mistake, not
		// the call's: they go back to it as a tool error (see
		// llm.ToolCall.InvalidInput).
		input, invalid := toolInput(c.args.String())
		msg.Parts = append(msg.Parts, llm.Part{Type: llm.PartToolCall, ToolCall: &llm.ToolCall{ID: c.id, Name: c.name, Input: input, InvalidInput: invalid}})
	}
	return &llm.Response{
		ID:         a.id,
		Model:      a.model,
		Message:    msg,
		StopReason: a.stopReason(),
		Usage:      a.usage,
	}, nil
}

func (a *assembler) stopReason() llm.StopReason {
	switch a.finish {
	case "stop":
		switch {
		case len(a.calls) > 0:
			// Some compatible servers finish tool calls with "stop".
			return llm.StopToolUse
		case a.refused:
			return llm.StopRefusal
		}
		return llm.StopEndTurn
	case "tool_calls", "function_call":
		return llm.StopToolUse
	case "length":
		return llm.StopMaxTokens
	case "content_filter":
		return llm.StopRefusal
	default:
		return llm.StopOther
	}
}

// toolInput is a call's complete arguments; empty arguments become {}.
// Arguments that are not valid JSON become {} and are returned as invalid.
func toolInput(args string) (input json.RawMessage, invalid string) {
	s := strings.TrimSpace(args)
	if s == "" || s == "null" {
		return json.RawMessage(`{}`), ""
	}
	if !json.Valid([]byte(s)) {
		return json.RawMessage(`{}`), s
	}
	return json.RawMessage(s), ""
}

// newCallID makes an id for a call the server sent without one, so that
// its result can still be matched to it.
func newCallID() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return "call_" + hex.EncodeToString(b[:])
}
