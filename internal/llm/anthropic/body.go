package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/arbor-run/arbor/internal/llm"
)

// The request body is encoded here, from plain structs, and handed to the
// SDK's client whole (option.WithRequestBody); the client still sends it,
// with its headers, and stream.go decodes the answer.
//
// Why not the SDK's params: they encode through a MarshalJSON method at
// every level (request, message, block union, block), and encoding/json
// validates and compacts what each method returns again at the level
// above. A headless session's request after 20 turns, with the built-in
// tools, took 340 µs to encode that way (60 MB/s), after 200 turns 3.2 ms,
// on every model call. These structs encode in one pass (BenchmarkBody);
// the start of the body, which a session repeats on every call, is
// written by hand and cached (head.go).
// sdkParams in sdkparams_test.go builds the same request from the SDK's params,
// and TestBodyMatchesTheSDK checks that both encode the same JSON value
// for every kind of part.

// errEmptyToolName rejects a tool spec or tool call without a name.
var errEmptyToolName = errors.New("tool name is empty")

// requestBody encodes req as a Messages API request body that asks for a
// stream. defaultMax applies when req sets no output cap. heads, when not
// nil, keeps the start of the last body, which the next call of a session
// repeats.
func requestBody(req *llm.Request, defaultMax int64, heads *headCache) ([]byte, error) {
	start, err := headStart(heads, req, defaultMax)
	if err != nil {
		return nil, err
	}
	msgs := make([]message, 0, len(req.Messages))
	for i, m := range req.Messages {
		msg, err := messageFor(m)
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
		if len(msg.Content) > 0 {
			msgs = append(msgs, msg)
		}
	}
	if len(msgs) == 0 { // as the SDK: no messages, no field
		return append(start, '}'), nil
	}
	setLastBreakpoint(msgs)
	buf := bytes.NewBuffer(make([]byte, 0, len(start)+heads.Sizes().Hint()))
	buf.Write(start)
	buf.WriteString(`,"messages":`)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(msgs); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	b[len(b)-1] = '}' // Encode's newline
	heads.Sizes().Saw(len(b) - len(start))
	return b, nil
}

// body is the start of the request; its messages follow (requestBody).
type body struct {
	Stream    bool            `json:"stream"`
	MaxTokens int64           `json:"max_tokens"`
	Model     string          `json:"model"`
	System    []textBlock     `json:"system,omitempty"`
	Thinking  *thinkingConfig `json:"thinking,omitempty"`
	Tools     []toolDef       `json:"tools,omitempty"`
}

type thinkingConfig struct {
	Type         string `json:"type"`
	BudgetTokens int64  `json:"budget_tokens"`
}

// cacheControl marks a prompt-caching breakpoint.
type cacheControl struct {
	Type string `json:"type"`
}

var ephemeral = &cacheControl{Type: "ephemeral"}

type toolDef struct {
	Name         string          `json:"name"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"input_schema"`
	CacheControl *cacheControl   `json:"cache_control,omitempty"`
}

type message struct {
	Role    llm.Role       `json:"role"`
	Content []contentBlock `json:"content"`
}

// contentBlock is one content block of a message: *textBlock, *thinkingBlock,
// *redactedThinkingBlock, *toolUseBlock or *toolResultBlock.
type contentBlock interface {
	// cache returns where the block's breakpoint goes; nil for blocks
	// that cannot carry one (thinking).
	cache() **cacheControl
}

type textBlock struct {
	Type         string        `json:"type"` // "text"
	Text         string        `json:"text"`
	CacheControl *cacheControl `json:"cache_control,omitempty"`
}

type thinkingBlock struct {
	Type      string `json:"type"` // "thinking"
	Thinking  string `json:"thinking"`
	Signature string `json:"signature"`
}

type redactedThinkingBlock struct {
	Type string `json:"type"` // "redacted_thinking"
	Data string `json:"data"`
}

type toolUseBlock struct {
	Type         string          `json:"type"` // "tool_use"
	ID           string          `json:"id"`
	Name         string          `json:"name"`
	Input        json.RawMessage `json:"input"`
	CacheControl *cacheControl   `json:"cache_control,omitempty"`
}

type toolResultBlock struct {
	Type         string        `json:"type"` // "tool_result"
	ToolUseID    string        `json:"tool_use_id"`
	IsError      bool          `json:"is_error,omitempty"`
	Content      []any         `json:"content,omitempty"` // textBlock, imageBlock
	CacheControl *cacheControl `json:"cache_control,omitempty"`
}

type imageBlock struct {
	Type         string        `json:"type"` // "image"
	Source       imageSource   `json:"source"`
	CacheControl *cacheControl `json:"cache_control,omitempty"`
}

type imageSource struct {
	Type      string `json:"type"` // "base64"
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
}

func (b *textBlock) cache() **cacheControl           { return &b.CacheControl }
func (b *toolUseBlock) cache() **cacheControl        { return &b.CacheControl }
func (b *toolResultBlock) cache() **cacheControl     { return &b.CacheControl }
func (b *imageBlock) cache() **cacheControl          { return &b.CacheControl }
func (*thinkingBlock) cache() **cacheControl         { return nil }
func (*redactedThinkingBlock) cache() **cacheControl { return nil }

func toolFor(spec llm.ToolSpec) (toolDef, error) {
	if spec.Name == "" {
		return toolDef{}, errEmptyToolName
	}
	schema := spec.InputSchema
	if len(schema) == 0 {
		schema = json.RawMessage(`{"type":"object"}`)
	}
	if !json.Valid(schema) {
		return toolDef{}, fmt.Errorf("tool %q: input schema is not valid JSON", spec.Name)
	}
	// The schema is derived from the tool's Go struct and sent verbatim.
	return toolDef{Name: spec.Name, Description: spec.Description, InputSchema: schema}, nil
}

func messageFor(m llm.Message) (message, error) {
	if m.Role != llm.RoleUser && m.Role != llm.RoleAssistant {
		return message{}, fmt.Errorf("unknown role %q", m.Role)
	}
	msg := message{Role: m.Role, Content: make([]contentBlock, 0, len(m.Parts))}
	for _, part := range m.Parts {
		b, err := blockFor(part)
		if err != nil {
			return message{}, err
		}
		if b != nil {
			msg.Content = append(msg.Content, b)
		}
	}
	return msg, nil
}

// blockFor translates one part; nil for parts the API would reject and
// that carry nothing (empty text).
func blockFor(part llm.Part) (contentBlock, error) {
	switch part.Type {
	case llm.PartText:
		if part.Text == "" {
			return nil, nil
		}
		return &textBlock{Type: "text", Text: part.Text}, nil
	case llm.PartThinking:
		switch {
		case part.Text == "" && part.Signature != "":
			return &redactedThinkingBlock{Type: "redacted_thinking", Data: part.Signature}, nil
		case part.Text == "":
			return nil, nil
		}
		return &thinkingBlock{Type: "thinking", Thinking: part.Text, Signature: part.Signature}, nil
	case llm.PartToolCall:
		call := part.ToolCall
		if call == nil {
			return nil, errors.New("tool_call part without a call")
		}
		if call.Name == "" {
			return nil, fmt.Errorf("tool call %q: %w", call.ID, errEmptyToolName)
		}
		input := call.Input
		if len(input) == 0 {
			input = json.RawMessage(`{}`)
		}
		if !json.Valid(input) {
			return nil, fmt.Errorf("tool call %q: input is not valid JSON", call.ID)
		}
		return &toolUseBlock{Type: "tool_use", ID: call.ID, Name: call.Name, Input: input}, nil
	case llm.PartImage:
		if part.Image == nil {
			return nil, errors.New("image part without an image")
		}
		return &imageBlock{Type: "image", Source: imageSource{Type: "base64", MediaType: part.Image.MediaType, Data: part.Image.Data}}, nil
	case llm.PartToolResult:
		res := part.ToolResult
		if res == nil {
			return nil, errors.New("tool_result part without a result")
		}
		tr := &toolResultBlock{Type: "tool_result", ToolUseID: res.CallID, IsError: res.IsError}
		// An empty text block is rejected by the API; an empty result is not.
		if res.Content != "" {
			tr.Content = append(tr.Content, &textBlock{Type: "text", Text: res.Content})
		}
		for _, img := range res.Images {
			tr.Content = append(tr.Content, &imageBlock{Type: "image", Source: imageSource{Type: "base64", MediaType: img.MediaType, Data: img.Data}})
		}
		return tr, nil
	default:
		return nil, fmt.Errorf("unknown part type %q", part.Type)
	}
}

// setLastBreakpoint marks the end of the conversation for prompt
// caching, so each step re-reads the previous step's prefix from the
// cache. Thinking blocks cannot carry a breakpoint, so the last block that
// can is used.
func setLastBreakpoint(msgs []message) {
	blocks := msgs[len(msgs)-1].Content
	for i := len(blocks) - 1; i >= 0; i-- {
		if cc := blocks[i].cache(); cc != nil {
			*cc = ephemeral
			return
		}
	}
}
