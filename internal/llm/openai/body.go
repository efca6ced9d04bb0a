package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/openai/openai-go/v3/shared"

	"github.com/arbor-run/arbor/internal/llm"
)

// The request body is encoded here, from plain structs, and handed to the
// SDK's client whole (option.WithRequestBody); the client still sends it,
// with its headers, and stream.go decodes the answer.
//
// Why not the SDK's params: they encode through a MarshalJSON method at
// every level (request, message union, message, content union, part), and
// encoding/json validates and compacts what each method returns again at
// the level above. A request after 20 turns with the built-in tools took
// about 330 µs to encode that way, on every model call. These structs
// encode in one pass (BenchmarkBody). sdkParams in sdkparams_test.go
// builds the same request from the SDK's params, and TestBodyMatchesTheSDK
// checks that both encode the same JSON value for every kind of message
// and part, and refuse the same requests with the same errors.

// errEmptyToolName rejects a tool spec or tool call without a name.
var errEmptyToolName = errors.New("tool name is empty")

// requestBody encodes req as a Chat Completions request body that asks
// for a stream. defaultMax applies when req sets no output cap; official
// sends the cap as max_completion_tokens (see Provider.official). heads,
// when not nil, keeps the start of the last body, which the next call of a
// session repeats.
func requestBody(req *llm.Request, defaultMax int64, official bool, heads *headCache) ([]byte, error) {
	// Messages first: a request with a bad message and a bad tool is
	// refused for the message, as the SDK's params were built.
	msgs, err := messagesFor(req)
	if err != nil {
		return nil, err
	}
	tokens := req.MaxTokens
	if tokens <= 0 {
		tokens = defaultMax
	}
	limit := outputCap{tokens: tokens, completion: official}
	start, err := heads.Get(headKey{model: req.Model, limit: limit}, req.Tools, func() ([]byte, error) { return encodeHead(req, limit) })
	if err != nil {
		return nil, err
	}
	if len(msgs) == 0 { // as the SDK: no messages, no field
		return append(start, '}'), nil
	}
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

// outputCap is the output cap of a request and the field it is sent in:
// max_completion_tokens when completion, else max_tokens.
type outputCap struct {
	tokens     int64
	completion bool
}

// headKey is what the start of a body is encoded from, besides its tools.
type headKey struct {
	model string
	limit outputCap
}

// headCache keeps the start of the last body encoded (model, output cap,
// stream options and tools). The system prompt is a message in this API,
// so it is not part of the start. While the next request repeats the
// tools, decoding them to check them as the SDK did is skipped too.
type headCache = llm.HeadCache[headKey]

// encodeHead encodes the start of a body.
func encodeHead(req *llm.Request, limit outputCap) ([]byte, error) {
	b := bodyStart{Stream: true, Model: req.Model, StreamOptions: streamOptions{IncludeUsage: true}}
	if limit.completion {
		b.MaxCompletionTokens = &limit.tokens
	} else {
		b.MaxTokens = &limit.tokens
	}
	b.Tools = make([]toolDef, 0, len(req.Tools))
	for _, spec := range req.Tools {
		t, err := toolFor(spec)
		if err != nil {
			return nil, err
		}
		b.Tools = append(b.Tools, t)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&b); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(bytes.TrimSuffix(buf.Bytes(), []byte("\n")), []byte("}")), nil
}

// bodyStart is the start of the request; its messages follow
// (requestBody). One of the two caps is set.
type bodyStart struct {
	Stream              bool          `json:"stream"`
	Model               string        `json:"model"`
	MaxTokens           *int64        `json:"max_tokens,omitempty"`
	MaxCompletionTokens *int64        `json:"max_completion_tokens,omitempty"`
	StreamOptions       streamOptions `json:"stream_options"`
	Tools               []toolDef     `json:"tools,omitempty"`
}

// streamOptions asks for a last chunk with the usage.
type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type toolDef struct {
	Type     string      `json:"type"` // "function"
	Function functionDef `json:"function"`
}

type functionDef struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Parameters is the tool's schema as its spec has it (only compacted);
	// nil when the schema is JSON null, which the SDK left out too.
	Parameters json.RawMessage `json:"parameters,omitempty"`
}

// emptySchema is the schema of a tool whose spec has none.
var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

func toolFor(spec llm.ToolSpec) (toolDef, error) {
	if spec.Name == "" {
		return toolDef{}, errEmptyToolName
	}
	fn := functionDef{Name: spec.Name, Description: spec.Description, Parameters: emptySchema}
	if len(spec.InputSchema) > 0 {
		// Decoded only to accept what the SDK's FunctionParameters
		// accepted, with its errors: an object or null, numbers within a
		// float64. json.Valid would let arrays and 1e400 through. This
		// runs when the start of the body is encoded, not on every call.
		var schema shared.FunctionParameters
		if err := json.Unmarshal(spec.InputSchema, &schema); err != nil {
			return toolDef{}, fmt.Errorf("tool %q: input schema: %w", spec.Name, err)
		}
		fn.Parameters = spec.InputSchema
		if schema == nil {
			fn.Parameters = nil
		}
	}
	return toolDef{Type: "function", Function: fn}, nil
}

// message is one message of the conversation: systemMessage, userMessage,
// assistantMessage or toolMessage.
type message interface{ isMessage() }

type systemMessage struct {
	Role    string `json:"role"` // "system"
	Content string `json:"content"`
}

type userMessage struct {
	Role    string      `json:"role"` // "user"
	Content userContent `json:"content"`
}

// assistantMessage carries text, tool calls or both.
type assistantMessage struct {
	Role      string     `json:"role"` // "assistant"
	Content   string     `json:"content,omitempty"`
	ToolCalls []toolCall `json:"tool_calls,omitempty"`
}

// toolMessage is the result of one tool call. Its content is sent also
// when empty.
type toolMessage struct {
	Role       string `json:"role"` // "tool"
	Content    string `json:"content"`
	ToolCallID string `json:"tool_call_id"`
}

func (systemMessage) isMessage()    {}
func (userMessage) isMessage()      {}
func (assistantMessage) isMessage() {}
func (toolMessage) isMessage()      {}

// userContent is a user message's content: textContent (a JSON string)
// or partsContent (an array of parts, for images).
type userContent interface{ isUserContent() }

type textContent string

type partsContent []contentPart

func (textContent) isUserContent()  {}
func (partsContent) isUserContent() {}

// contentPart is one part of a user message: textPart or imagePart.
type contentPart interface{ isContentPart() }

type textPart struct {
	Type string `json:"type"` // "text"
	Text string `json:"text"`
}

type imagePart struct {
	Type     string   `json:"type"` // "image_url"
	ImageURL imageURL `json:"image_url"`
}

// imageURL holds an image inline, as a data: URL.
type imageURL struct {
	URL string `json:"url"`
}

func (textPart) isContentPart()  {}
func (imagePart) isContentPart() {}

type toolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"` // "function"
	Function functionCall `json:"function"`
}

// functionCall holds the call's arguments as a string, as the API has it.
type functionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// messagesFor translates the system prompt and the conversation.
func messagesFor(req *llm.Request) ([]message, error) {
	msgs := make([]message, 0, len(req.Messages)+1)
	if req.System != "" {
		msgs = append(msgs, systemMessage{Role: "system", Content: req.System})
	}
	var err error
	for i, m := range req.Messages {
		switch m.Role {
		case llm.RoleUser:
			msgs, err = appendUser(msgs, m)
		case llm.RoleAssistant:
			msgs, err = appendAssistant(msgs, m)
		default:
			err = fmt.Errorf("unknown role %q", m.Role)
		}
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", i, err)
		}
	}
	return msgs, nil
}

// appendUser appends a user message's tool results as tool messages
// (which must directly follow the assistant's tool calls) and then its
// text, if any. Tool messages hold only text: the images of tool results
// follow them in the user message, before its text.
func appendUser(msgs []message, m llm.Message) ([]message, error) {
	var texts []string
	var images, sent partsContent // the tool results' images; the person's
	for _, part := range m.Parts {
		switch part.Type {
		case llm.PartText:
			if part.Text != "" {
				texts = append(texts, part.Text)
			}
		case llm.PartImage:
			if part.Image == nil {
				return nil, errors.New("image part without an image")
			}
			sent = append(sent, imagePart{Type: "image_url", ImageURL: imageURL{URL: "data:" + part.Image.MediaType + ";base64," + part.Image.Data}})
		case llm.PartToolResult:
			res := part.ToolResult
			if res == nil {
				return nil, errors.New("tool_result part without a result")
			}
			msgs = append(msgs, toolMessage{Role: "tool", Content: toolResultText(*res), ToolCallID: res.CallID})
			for i, img := range res.Images {
				if i == 0 {
					images = append(images, textPart{Type: "text", Text: "Images returned by tool call " + res.CallID + ":"})
				}
				images = append(images, imagePart{Type: "image_url", ImageURL: imageURL{URL: "data:" + img.MediaType + ";base64," + img.Data}})
			}
		case llm.PartThinking, llm.PartToolCall:
			return nil, fmt.Errorf("a user message cannot hold a %s part", part.Type)
		default:
			return nil, fmt.Errorf("unknown part type %q", part.Type)
		}
	}
	images = append(images, sent...)
	switch {
	case len(images) > 0 && len(texts) > 0:
		msgs = append(msgs, userMessage{Role: "user", Content: append(images, textPart{Type: "text", Text: strings.Join(texts, "\n\n")})})
	case len(images) > 0:
		msgs = append(msgs, userMessage{Role: "user", Content: images})
	case len(texts) > 0:
		msgs = append(msgs, userMessage{Role: "user", Content: textContent(strings.Join(texts, "\n\n"))})
	}
	return msgs, nil
}

// toolResultText is the content of a tool message; see the package doc
// for the error prefix.
func toolResultText(res llm.ToolResult) string {
	if res.IsError && !strings.HasPrefix(strings.ToLower(res.Content), "error") {
		return "Error: " + res.Content
	}
	return res.Content
}

// appendAssistant appends an assistant message, unless nothing is left to
// send (a message of thinking only).
func appendAssistant(msgs []message, m llm.Message) ([]message, error) {
	asst := assistantMessage{Role: "assistant"}
	var texts []string
	for _, part := range m.Parts {
		switch part.Type {
		case llm.PartText:
			if part.Text != "" {
				texts = append(texts, part.Text)
			}
		case llm.PartThinking:
			// Not sent back; see the package doc.
		case llm.PartToolCall:
			call := part.ToolCall
			if call == nil {
				return nil, errors.New("tool_call part without a call")
			}
			if call.Name == "" {
				return nil, fmt.Errorf("tool call %q: %w", call.ID, errEmptyToolName)
			}
			// Arguments are the model's own string and are not checked.
			args := strings.TrimSpace(string(call.Input))
			if args == "" || args == "null" {
				args = "{}"
			}
			asst.ToolCalls = append(asst.ToolCalls, toolCall{ID: call.ID, Type: "function", Function: functionCall{Name: call.Name, Arguments: args}})
		case llm.PartToolResult:
			return nil, errors.New("an assistant message cannot hold a tool_result part")
		default:
			return nil, fmt.Errorf("unknown part type %q", part.Type)
		}
	}
	asst.Content = strings.Join(texts, "\n\n")
	if asst.Content == "" && len(asst.ToolCalls) == 0 {
		return msgs, nil
	}
	return append(msgs, asst), nil
}
