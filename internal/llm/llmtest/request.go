package llmtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/arbor-run/arbor/internal/llm"
)

// Wire formats a Request can arrive in.
const (
	FormatAnthropic = "anthropic"
	FormatOpenAI    = "openai"
)

// Request is a recorded request, decoded from either wire format into
// provider-neutral form.
type Request struct {
	Format string // FormatAnthropic or FormatOpenAI
	Path   string
	Header http.Header
	Body   []byte // raw JSON body
	Model  string
	// System is Anthropic's "system" (a string, or text blocks joined by
	// "\n"), or OpenAI's system and developer messages joined by "\n".
	System string
	// Messages are the user and assistant turns. Tool results are parts of
	// user messages; consecutive OpenAI "tool" messages become one user
	// message.
	Messages  []llm.Message
	Tools     []llm.ToolSpec
	Stream    bool
	MaxTokens int64
	// IncludeUsage is OpenAI's stream_options.include_usage.
	IncludeUsage bool
	// ThinkingBudget is Anthropic's thinking.budget_tokens when thinking is
	// enabled.
	ThinkingBudget int64
	// DecodeErr is set when the body could not be decoded; the server
	// answered 400 and consumed no turn.
	DecodeErr error
}

// LastUserText returns the text of the last user message, including tool
// result contents, joined by "\n".
func (r Request) LastUserText() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		m := r.Messages[i]
		if m.Role != llm.RoleUser {
			continue
		}
		var parts []string
		for _, p := range m.Parts {
			switch {
			case p.Type == llm.PartText:
				parts = append(parts, p.Text)
			case p.Type == llm.PartToolResult && p.ToolResult != nil:
				parts = append(parts, p.ToolResult.Content)
			}
		}
		return strings.Join(parts, "\n")
	}
	return ""
}

// --- Anthropic request ---

type antRequest struct {
	Model     string          `json:"model"`
	MaxTokens int64           `json:"max_tokens"`
	System    json.RawMessage `json:"system"`
	Messages  []antInMessage  `json:"messages"`
	Tools     []antTool       `json:"tools"`
	Stream    bool            `json:"stream"`
	Thinking  *struct {
		Type         string `json:"type"`
		BudgetTokens int64  `json:"budget_tokens"`
	} `json:"thinking"`
}

type antInMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type antInBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	Signature string          `json:"signature"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
	Source    *struct {
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
	} `json:"source"`
}

type antTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

func decodeAnthropic(body []byte, r *Request) error {
	var in antRequest
	if err := json.Unmarshal(body, &in); err != nil {
		return err
	}
	r.Model, r.MaxTokens, r.Stream = in.Model, in.MaxTokens, in.Stream
	if in.Thinking != nil && in.Thinking.Type == "enabled" {
		r.ThinkingBudget = in.Thinking.BudgetTokens
	}
	sys, err := antText(in.System)
	if err != nil {
		return fmt.Errorf("system: %w", err)
	}
	r.System = sys
	for _, t := range in.Tools {
		r.Tools = append(r.Tools, llm.ToolSpec{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema})
	}
	for i, m := range in.Messages {
		msg := llm.Message{Role: llm.Role(m.Role)}
		blocks, err := antBlocks(m.Content)
		if err != nil {
			return fmt.Errorf("messages[%d]: %w", i, err)
		}
		for _, b := range blocks {
			part, ok, err := b.part()
			if err != nil {
				return fmt.Errorf("messages[%d]: %w", i, err)
			}
			if ok {
				msg.Parts = append(msg.Parts, part)
			}
		}
		r.Messages = append(r.Messages, msg)
	}
	return nil
}

// part maps a content block to a neutral part; blocks with no neutral form
// (redacted thinking, documents) are skipped.
func (b antInBlock) part() (llm.Part, bool, error) {
	switch b.Type {
	case "text":
		return llm.TextPart(b.Text), true, nil
	case "image":
		if b.Source == nil {
			return llm.Part{}, false, nil
		}
		return llm.ImagePart(llm.Image{MediaType: b.Source.MediaType, Data: b.Source.Data}), true, nil
	case "thinking":
		return llm.Part{Type: llm.PartThinking, Text: b.Thinking, Signature: b.Signature}, true, nil
	case "tool_use":
		input := json.RawMessage(`{}`)
		if len(b.Input) > 0 && !bytes.Equal(b.Input, []byte("null")) {
			input = append(json.RawMessage(nil), b.Input...)
		}
		return llm.Part{Type: llm.PartToolCall, ToolCall: &llm.ToolCall{ID: b.ID, Name: b.Name, Input: input}}, true, nil
	case "tool_result":
		content, err := antText(b.Content)
		if err != nil {
			return llm.Part{}, false, fmt.Errorf("tool_result content: %w", err)
		}
		res := &llm.ToolResult{CallID: b.ToolUseID, Content: content, IsError: b.IsError}
		inner, _ := antBlocks(b.Content) // antText decoded them already
		for _, ib := range inner {
			if ib.Type == "image" && ib.Source != nil {
				res.Images = append(res.Images, llm.Image{MediaType: ib.Source.MediaType, Data: ib.Source.Data})
			}
		}
		return llm.Part{Type: llm.PartToolResult, ToolResult: res}, true, nil
	}
	return llm.Part{}, false, nil
}

// antBlocks decodes Anthropic content: a string or a list of blocks.
func antBlocks(raw json.RawMessage) ([]antInBlock, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return []antInBlock{{Type: "text", Text: s}}, nil
	}
	var blocks []antInBlock
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, err
	}
	return blocks, nil
}

// antText decodes a string or a list of blocks into their text joined by
// "\n".
func antText(raw json.RawMessage) (string, error) {
	blocks, err := antBlocks(raw)
	if err != nil {
		return "", err
	}
	var texts []string
	for _, b := range blocks {
		if b.Type == "text" {
			texts = append(texts, b.Text)
		}
	}
	return strings.Join(texts, "\n"), nil
}

// --- OpenAI request ---

type oaRequest struct {
	Model         string        `json:"model"`
	Messages      []oaInMessage `json:"messages"`
	Tools         []oaTool      `json:"tools"`
	Stream        bool          `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	MaxTokens           int64 `json:"max_tokens"`
	MaxCompletionTokens int64 `json:"max_completion_tokens"`
}

type oaInMessage struct {
	Role             string          `json:"role"`
	Content          json.RawMessage `json:"content"`
	ReasoningContent string          `json:"reasoning_content"`
	ToolCalls        []oaToolCall    `json:"tool_calls"`
	ToolCallID       string          `json:"tool_call_id"`
}

type oaTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

func decodeOpenAI(body []byte, r *Request) error {
	var in oaRequest
	if err := json.Unmarshal(body, &in); err != nil {
		return err
	}
	r.Model, r.Stream = in.Model, in.Stream
	r.MaxTokens = in.MaxCompletionTokens
	if r.MaxTokens == 0 {
		r.MaxTokens = in.MaxTokens
	}
	r.IncludeUsage = in.StreamOptions != nil && in.StreamOptions.IncludeUsage
	for _, t := range in.Tools {
		r.Tools = append(r.Tools, llm.ToolSpec{Name: t.Function.Name, Description: t.Function.Description, InputSchema: t.Function.Parameters})
	}
	var system []string
	for i, m := range in.Messages {
		text, err := oaText(m.Content)
		if err != nil {
			return fmt.Errorf("messages[%d] content: %w", i, err)
		}
		switch m.Role {
		case "system", "developer":
			system = append(system, text)
		case "user":
			msg := llm.UserText(text)
			for _, img := range oaImages(m.Content) {
				msg.Parts = append(msg.Parts, llm.ImagePart(img))
			}
			r.Messages = append(r.Messages, msg)
		case "tool":
			part := llm.Part{Type: llm.PartToolResult, ToolResult: &llm.ToolResult{CallID: m.ToolCallID, Content: text}}
			if n := len(r.Messages); n > 0 && r.Messages[n-1].Role == llm.RoleUser && onlyToolResults(r.Messages[n-1]) {
				r.Messages[n-1].Parts = append(r.Messages[n-1].Parts, part)
			} else {
				r.Messages = append(r.Messages, llm.Message{Role: llm.RoleUser, Parts: []llm.Part{part}})
			}
		case "assistant":
			r.Messages = append(r.Messages, oaAssistant(m, text))
		default:
			return fmt.Errorf("messages[%d]: unknown role %q", i, m.Role)
		}
	}
	r.System = strings.Join(system, "\n")
	return nil
}

func oaAssistant(m oaInMessage, text string) llm.Message {
	msg := llm.Message{Role: llm.RoleAssistant}
	if m.ReasoningContent != "" {
		msg.Parts = append(msg.Parts, llm.Part{Type: llm.PartThinking, Text: m.ReasoningContent})
	}
	if text != "" {
		msg.Parts = append(msg.Parts, llm.TextPart(text))
	}
	for _, c := range m.ToolCalls {
		input := json.RawMessage(c.Function.Arguments)
		switch {
		case strings.TrimSpace(c.Function.Arguments) == "":
			input = json.RawMessage(`{}`)
		case !json.Valid(input):
			// Keep what the client sent, as a JSON string, so the
			// message still marshals.
			input, _ = json.Marshal(c.Function.Arguments)
		}
		msg.Parts = append(msg.Parts, llm.Part{Type: llm.PartToolCall, ToolCall: &llm.ToolCall{ID: c.ID, Name: c.Function.Name, Input: input}})
	}
	return msg
}

// oaImages decodes the data-URL images of OpenAI content parts
// ({"type":"image_url","image_url":{"url":"data:image/png;base64,…"}}).
func oaImages(raw json.RawMessage) []llm.Image {
	var parts []struct {
		Type     string `json:"type"`
		ImageURL struct {
			URL string `json:"url"`
		} `json:"image_url"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return nil
	}
	var out []llm.Image
	for _, p := range parts {
		rest, ok := strings.CutPrefix(p.ImageURL.URL, "data:")
		media, data, found := strings.Cut(rest, ";base64,")
		if p.Type == "image_url" && ok && found {
			out = append(out, llm.Image{MediaType: media, Data: data})
		}
	}
	return out
}

func onlyToolResults(m llm.Message) bool {
	for _, p := range m.Parts {
		if p.Type != llm.PartToolResult {
			return false
		}
	}
	return len(m.Parts) > 0
}

// oaText decodes OpenAI content: null, a string, or a list of parts whose
// text parts are joined by "\n".
func oaText(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", err
	}
	var texts []string
	for _, p := range parts {
		if p.Type == "text" {
			texts = append(texts, p.Text)
		}
	}
	return strings.Join(texts, "\n"), nil
}
