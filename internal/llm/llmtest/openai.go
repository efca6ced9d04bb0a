package llmtest

import (
	"net/http"
)

// openai speaks Chat Completions, with DeepSeek/Qwen-style
// reasoning_content for thinking.
type openai struct{}

func (openai) name() string                         { return FormatOpenAI }
func (openai) decode(body []byte, r *Request) error { return decodeOpenAI(body, r) }
func (openai) resolve(t Turn, r Request) (answer, error) {
	return resolve(t, r, "chatcmpl-", "call_")
}

// Wire types, as the OpenAI SDK parses them.

type oaChunk struct {
	ID      string          `json:"id"`
	Object  string          `json:"object"`
	Created int64           `json:"created"`
	Model   string          `json:"model"`
	Choices []oaChunkChoice `json:"choices"`
	Usage   *oaUsage        `json:"usage,omitempty"`
}

type oaChunkChoice struct {
	Index        int       `json:"index"`
	Delta        oaDelta   `json:"delta"`
	Logprobs     *struct{} `json:"logprobs"`
	FinishReason *string   `json:"finish_reason"`
}

type oaDelta struct {
	Role             string            `json:"role,omitempty"`
	Content          *string           `json:"content,omitempty"`
	ReasoningContent *string           `json:"reasoning_content,omitempty"`
	ToolCalls        []oaToolCallDelta `json:"tool_calls,omitempty"`
}

type oaToolCallDelta struct {
	Index    int    `json:"index"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type oaToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

type oaUsage struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	TotalTokens         int64 `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens     int64 `json:"cached_tokens"`
		CacheWriteTokens int64 `json:"cache_write_tokens,omitempty"`
	} `json:"prompt_tokens_details"`
}

type oaCompletion struct {
	ID      string     `json:"id"`
	Object  string     `json:"object"`
	Created int64      `json:"created"`
	Model   string     `json:"model"`
	Choices []oaChoice `json:"choices"`
	Usage   oaUsage    `json:"usage"`
}

type oaChoice struct {
	Index        int        `json:"index"`
	Message      oaResponse `json:"message"`
	Logprobs     *struct{}  `json:"logprobs"`
	FinishReason string     `json:"finish_reason"`
}

type oaResponse struct {
	Role             string       `json:"role"`
	Content          *string      `json:"content"`
	ReasoningContent string       `json:"reasoning_content,omitempty"`
	ToolCalls        []oaToolCall `json:"tool_calls,omitempty"`
	Refusal          *string      `json:"refusal"`
}

type oaError struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	} `json:"error"`
}

func (a answer) finishReason() string {
	switch a.Stop {
	case "tool_use":
		return "tool_calls"
	case "max_tokens":
		return "length"
	case "refusal":
		return "content_filter"
	}
	return "stop"
}

func (a answer) oaUsage() *oaUsage {
	u := &oaUsage{
		PromptTokens:     a.Usage.Input + a.Usage.CacheRead + a.Usage.CacheWrite,
		CompletionTokens: a.Usage.Output,
	}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	u.PromptTokensDetails.CachedTokens = a.Usage.CacheRead
	u.PromptTokensDetails.CacheWriteTokens = a.Usage.CacheWrite
	return u
}

// message is the non-streaming answer.
func (openai) message(a answer) []byte {
	msg := oaResponse{Role: "assistant", ReasoningContent: a.Thinking}
	if a.Text != "" || len(a.Calls) == 0 {
		msg.Content = ptr(a.Text)
	}
	for _, c := range a.Calls {
		tc := oaToolCall{ID: c.ID, Type: "function"}
		tc.Function.Name, tc.Function.Arguments = c.Name, c.Input
		msg.ToolCalls = append(msg.ToolCalls, tc)
	}
	return mustJSON(oaCompletion{
		ID: a.ID, Object: "chat.completion", Created: a.Created, Model: a.Model,
		Choices: []oaChoice{{Message: msg, FinishReason: a.finishReason()}},
		Usage:   *a.oaUsage(),
	})
}

// events is the streamed answer: a role chunk, reasoning and content
// deltas, tool call chunks interleaved across calls, a finish chunk, the
// usage chunk when asked for, and [DONE].
func (openai) events(a answer) []sseEvent {
	var evs []sseEvent
	chunk := func(d oaDelta, finish *string) {
		c := oaChunk{ID: a.ID, Object: "chat.completion.chunk", Created: a.Created, Model: a.Model,
			Choices: []oaChunkChoice{{Delta: d, FinishReason: finish}}}
		evs = append(evs, sseEvent{data: mustJSON(c)})
	}
	chunk(oaDelta{Role: "assistant", Content: ptr("")}, nil)
	for _, w := range words(a.Thinking) {
		chunk(oaDelta{ReasoningContent: ptr(w)}, nil)
	}
	for _, w := range words(a.Text) {
		chunk(oaDelta{Content: ptr(w)}, nil)
	}

	// Step 0 of every call is its header (index, id, name); step k its
	// k-th argument fragment. Steps are interleaved across calls, as
	// servers streaming parallel calls do.
	steps := make([][]oaToolCallDelta, len(a.Calls))
	longest := 0
	for i, c := range a.Calls {
		head := oaToolCallDelta{Index: i, ID: c.ID, Type: "function"}
		head.Function.Name = c.Name
		steps[i] = append(steps[i], head)
		for _, f := range fragments(c.Input, 3) {
			d := oaToolCallDelta{Index: i}
			d.Function.Arguments = f
			steps[i] = append(steps[i], d)
		}
		longest = max(longest, len(steps[i]))
	}
	for k := range longest {
		for i := range steps {
			if k < len(steps[i]) {
				chunk(oaDelta{ToolCalls: []oaToolCallDelta{steps[i][k]}}, nil)
			}
		}
	}

	chunk(oaDelta{}, ptr(a.finishReason()))
	if a.IncludeUsage {
		c := oaChunk{ID: a.ID, Object: "chat.completion.chunk", Created: a.Created, Model: a.Model,
			Choices: []oaChunkChoice{}, Usage: a.oaUsage()}
		evs = append(evs, sseEvent{data: mustJSON(c)})
	}
	return append(evs, sseEvent{data: []byte("[DONE]")})
}

func (openai) malformed() sseEvent {
	return sseEvent{data: []byte(`{"id":"chatcmpl-broken","choices":[{"delta":`)}
}

func (openai) errorBody(status int, msg string) []byte {
	var e oaError
	e.Error.Message = msg
	switch {
	case status == http.StatusTooManyRequests:
		e.Error.Type = "requests"
		e.Error.Code = ptr("rate_limit_exceeded")
	case status == http.StatusUnauthorized:
		e.Error.Type = "invalid_request_error"
		e.Error.Code = ptr("invalid_api_key")
	case status >= 500:
		e.Error.Type = "server_error"
	default:
		e.Error.Type = "invalid_request_error"
	}
	return mustJSON(e)
}

func (openai) requestIDHeader() string { return "x-request-id" }
