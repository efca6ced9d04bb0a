package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

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
// on every model call. These structs encode in one pass (BenchmarkBody).
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
	start, err := heads.get(req, defaultMax)
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
	buf := bytes.NewBuffer(make([]byte, 0, len(start)+heads.sizes().Hint()))
	buf.Write(start)
	buf.WriteString(`,"messages":`)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(msgs); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	b[len(b)-1] = '}' // Encode's newline
	heads.sizes().Saw(len(b) - len(start))
	return b, nil
}

// headCache keeps the start of the last body encoded (everything before
// its messages: model, cap, system prompt and tools), with what it was
// encoded from. The tools of a session are the same on every call, and
// their schemas are most of a short session's body: encoding them again
// took 40 µs of the 97 of a call after 20 turns. A request that differs
// is encoded and kept instead. A nil *headCache keeps nothing.
type headCache struct {
	mu   sync.Mutex
	last *head
	size llm.BodySize // the messages' size in the last body, to size the next
}

type head struct {
	model             string
	maxTokens, budget int64
	system            string
	tools             []llm.ToolSpec // copies: the caller may reuse its slices
	start             []byte         // `{"stream":true,…` without the closing brace
}

func (h *head) matches(req *llm.Request, maxTokens int64) bool {
	if h.model != req.Model || h.maxTokens != maxTokens || h.budget != req.ThinkingBudget ||
		h.system != req.System || len(h.tools) != len(req.Tools) {
		return false
	}
	for i, t := range req.Tools {
		if c := h.tools[i]; c.Name != t.Name || c.Description != t.Description || !bytes.Equal(c.InputSchema, t.InputSchema) {
			return false
		}
	}
	return true
}

// get returns the start of req's body, in a slice of its own.
func (c *headCache) get(req *llm.Request, defaultMax int64) ([]byte, error) {
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = defaultMax
	}
	if c != nil {
		c.mu.Lock()
		h := c.last
		c.mu.Unlock()
		if h != nil && h.matches(req, maxTokens) {
			return slices.Clip(h.start), nil // appends copy, never write into the cache
		}
	}
	h, err := encodeHead(req, maxTokens, defaultMax)
	if err != nil {
		return nil, err
	}
	if c != nil {
		c.mu.Lock()
		c.last = h
		c.mu.Unlock()
	}
	return slices.Clip(h.start), nil
}

// sizes is the *llm.BodySize of c, nil for a nil c (which keeps nothing).
func (c *headCache) sizes() *llm.BodySize {
	if c == nil {
		return nil
	}
	return &c.size
}

// encodeHead encodes the start of a body.
func encodeHead(req *llm.Request, maxTokens, defaultMax int64) (*head, error) {
	b, err := headOf(req, maxTokens, defaultMax)
	if err != nil {
		return nil, err
	}
	h := &head{model: req.Model, maxTokens: maxTokens, budget: req.ThinkingBudget, system: req.System}
	h.tools = make([]llm.ToolSpec, 0, len(req.Tools))
	for _, spec := range req.Tools {
		spec.InputSchema = bytes.Clone(spec.InputSchema)
		h.tools = append(h.tools, spec)
	}
	if h.start, err = b.encode(); err != nil {
		return nil, err
	}
	return h, nil
}

// headOf is the body of req without its messages.
func headOf(req *llm.Request, maxTokens, defaultMax int64) (body, error) {
	b := body{Stream: true, Model: req.Model, MaxTokens: maxTokens}
	if req.ThinkingBudget > 0 {
		// The API requires the budget to be below max_tokens and counts
		// thinking against it, so the cap leaves room for the answer.
		if b.MaxTokens <= req.ThinkingBudget {
			b.MaxTokens = req.ThinkingBudget + defaultMax
		}
		b.Thinking = &thinkingConfig{Type: "enabled", BudgetTokens: req.ThinkingBudget}
	}
	if req.System != "" {
		b.System = []textBlock{{Type: "text", Text: req.System}}
	}
	b.Tools = make([]toolDef, 0, len(req.Tools))
	for _, spec := range req.Tools {
		t, err := toolFor(spec)
		if err != nil {
			return body{}, err
		}
		b.Tools = append(b.Tools, t)
	}
	// The stable prefix gets a breakpoint: the system prompt's end, or
	// the tools' when there is no system prompt.
	switch {
	case len(b.System) > 0:
		b.System[len(b.System)-1].CacheControl = ephemeral
	case len(b.Tools) > 0:
		b.Tools[len(b.Tools)-1].CacheControl = ephemeral
	}
	return b, nil
}

// encode writes the body b as JSON without its closing brace, so that its
// messages can follow.
func (b body) encode() ([]byte, error) {
	// The head is encoded a part at a time into one buffer made for it:
	// encoding/json's own buffer then grows to the largest part, not to
	// the whole head, whose doublings left about 65 KB behind on a
	// session's first call, all of it resident until the process first
	// collects. The bytes are those of the whole body encoded at once
	// (TestHeadIsTheBodyEncodedAtOnce); Tools is body's last field.
	buf := bytes.NewBuffer(make([]byte, 0, b.room()))
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	tools := b.Tools
	b.Tools = nil
	if err := enc.Encode(&b); err != nil {
		return nil, err
	}
	buf.Truncate(buf.Len() - len("}\n"))
	if len(tools) > 0 {
		buf.WriteString(`,"tools":[`)
		for i := range tools {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := enc.Encode(&tools[i]); err != nil {
				return nil, err
			}
			buf.Truncate(buf.Len() - len("\n"))
		}
		buf.WriteByte(']')
	}
	return buf.Bytes(), nil
}

// room is the buffer to make for b's encoding: its text and the JSON
// around it, with an eighth more for what escaping adds.
func (b body) room() int {
	n := 256 + len(b.Model)
	for _, t := range b.System {
		n += len(t.Text)
	}
	for _, t := range b.Tools {
		n += 64 + len(t.Name) + len(t.Description) + len(t.InputSchema)
	}
	return n + n/8
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
