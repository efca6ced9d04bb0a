package llmtest_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/llm/llmtest"
)

func TestAnthropicRequestRoundTrip(t *testing.T) {
	t.Parallel()
	b := setup(t,
		llmtest.Turn{
			Thinking:  "I should read it.",
			Text:      "Reading.",
			ToolCalls: []llmtest.ToolCall{{ID: "toolu_1", Name: "read_file", Input: map[string]any{"path": "notes.txt"}}},
		},
		llmtest.Turn{Text: "It has 42 lines.", Expect: "42 lines"},
	)
	tool := anthropic.ToolUnionParamOfTool(anthropic.ToolInputSchemaParam{
		Properties: map[string]any{"path": map[string]any{"type": "string"}},
		Required:   []string{"path"},
	}, "read_file")
	tool.OfTool.Description = anthropic.String("Reads a file.")
	p := antParams("read notes.txt")
	p.System = []anthropic.TextBlockParam{{Text: "You are terse."}, {Text: "Use tools."}}
	p.Tools = []anthropic.ToolUnionParam{tool}
	p.Thinking = anthropic.ThinkingConfigParamOfEnabled(2048)

	first := antStream(ctxT(t), t, b.ant, p)
	must(t, first.err)
	p.Messages = append(p.Messages, first.msg.ToParam(),
		anthropic.NewUserMessage(anthropic.NewToolResultBlock("toolu_1", "notes.txt: 42 lines", false)))
	second := antStream(ctxT(t), t, b.ant, p)
	must(t, second.err)
	equal(t, "second answer", second.msg.Content[0].Text, "It has 42 lines.")

	reqs := b.srv.Requests()
	equal(t, "requests", len(reqs), 2)
	r := reqs[1]
	equal(t, "format", r.Format, llmtest.FormatAnthropic)
	equal(t, "path", r.Path, "/v1/messages")
	equal(t, "auth header", r.Header.Get("Authorization"), "Bearer test")
	if r.Header.Get("Anthropic-Version") == "" {
		t.Fatal("anthropic-version header not recorded")
	}
	equal(t, "model", r.Model, "claude-test")
	equal(t, "system", r.System, "You are terse.\nUse tools.")
	equal(t, "stream", r.Stream, true)
	equal(t, "max tokens", r.MaxTokens, int64(1024))
	equal(t, "thinking budget", r.ThinkingBudget, int64(2048))
	equal(t, "tools", len(r.Tools), 1)
	equal(t, "tool name", r.Tools[0].Name, "read_file")
	equal(t, "tool description", r.Tools[0].Description, "Reads a file.")
	jsonEqual(t, "tool schema", r.Tools[0].InputSchema, `{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)
	if !json.Valid(r.Body) {
		t.Fatalf("raw body is not JSON: %s", r.Body)
	}

	equal(t, "messages", len(r.Messages), 3)
	equal(t, "user", r.Messages[0], llm.UserText("read notes.txt"))
	asst := r.Messages[1]
	equal(t, "assistant role", asst.Role, llm.RoleAssistant)
	equal(t, "assistant parts", len(asst.Parts), 3)
	equal(t, "thinking round trip", asst.Parts[0], llm.Part{Type: llm.PartThinking, Text: "I should read it.", Signature: llmtest.ThinkingSignature("I should read it.")})
	equal(t, "text", asst.Parts[1], llm.TextPart("Reading."))
	call := asst.Parts[2].ToolCall
	equal(t, "tool call", [2]string{call.ID, call.Name}, [2]string{"toolu_1", "read_file"})
	jsonEqual(t, "tool call input", call.Input, `{"path":"notes.txt"}`)
	equal(t, "tool result", r.Messages[2], llm.Message{Role: llm.RoleUser, Parts: []llm.Part{
		{Type: llm.PartToolResult, ToolResult: &llm.ToolResult{CallID: "toolu_1", Content: "notes.txt: 42 lines"}},
	}})
	equal(t, "last user text", r.LastUserText(), "notes.txt: 42 lines")
}

func TestOpenAIRequestRoundTrip(t *testing.T) {
	t.Parallel()
	b := setup(t,
		llmtest.Turn{ToolCalls: []llmtest.ToolCall{
			{ID: "call_a", Name: "read_file", Input: map[string]any{"path": "a"}},
			{ID: "call_b", Name: "read_file", Input: map[string]any{"path": "b"}},
		}},
		llmtest.Turn{Text: "Both read.", Expect: "contents of b"},
	)
	p := oaParams("read a and b")
	p.Messages = append([]openai.ChatCompletionMessageParamUnion{openai.SystemMessage("Be terse."), openai.DeveloperMessage("Prefer tools.")}, p.Messages...)
	p.Tools = []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
		Name:        "read_file",
		Description: openai.String("Reads a file."),
		Parameters:  shared.FunctionParameters{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}},
	})}
	p.MaxCompletionTokens = openai.Int(500)

	first := oaStream(ctxT(t), t, b.oa, p)
	must(t, first.err)
	p.Messages = append(p.Messages, first.acc.Choices[0].Message.ToParam(),
		openai.ToolMessage("contents of a", "call_a"),
		openai.ToolMessage("contents of b", "call_b"))
	second := oaStream(ctxT(t), t, b.oa, p)
	must(t, second.err)

	r := b.srv.Requests()[1]
	equal(t, "format", r.Format, llmtest.FormatOpenAI)
	equal(t, "path", r.Path, "/v1/chat/completions")
	equal(t, "auth header", r.Header.Get("Authorization"), "Bearer test")
	equal(t, "system", r.System, "Be terse.\nPrefer tools.")
	equal(t, "max tokens", r.MaxTokens, int64(500))
	equal(t, "include usage", r.IncludeUsage, true)
	equal(t, "tool", [2]string{r.Tools[0].Name, r.Tools[0].Description}, [2]string{"read_file", "Reads a file."})
	jsonEqual(t, "tool schema", r.Tools[0].InputSchema, `{"type":"object","properties":{"path":{"type":"string"}}}`)

	equal(t, "messages", len(r.Messages), 3)
	calls := r.Messages[1].ToolCalls()
	equal(t, "assistant calls", len(calls), 2)
	equal(t, "call ids", [2]string{calls[0].ID, calls[1].ID}, [2]string{"call_a", "call_b"})
	jsonEqual(t, "call input", calls[1].Input, `{"path":"b"}`)
	equal(t, "tool results merged into one user message", r.Messages[2], llm.Message{Role: llm.RoleUser, Parts: []llm.Part{
		{Type: llm.PartToolResult, ToolResult: &llm.ToolResult{CallID: "call_a", Content: "contents of a"}},
		{Type: llm.PartToolResult, ToolResult: &llm.ToolResult{CallID: "call_b", Content: "contents of b"}},
	}})
}

func TestExpect(t *testing.T) {
	t.Parallel()
	b := setup(t, llmtest.Turn{Text: "ok", Expect: "banana"})
	_, err := b.oa.Chat.Completions.New(ctxT(t), oaParams("an apple"))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) {
		t.Fatalf("want *openai.Error, got %v", err)
	}
	equal(t, "status", apiErr.StatusCode, 400)
	equal(t, "message", apiErr.Message, `llmtest: request 1: expected the last user message to contain "banana", but it was "an apple"`)
}

func TestScriptExhausted(t *testing.T) {
	t.Parallel()
	b := setup(t, llmtest.Turn{Text: "only one"})
	must(t, antStream(ctxT(t), t, b.ant, antParams("1")).err)
	_, err := b.ant.Messages.New(ctxT(t), antParams("2"))
	var apiErr *anthropic.Error
	if !errors.As(err, &apiErr) {
		t.Fatalf("want *anthropic.Error, got %v", err)
	}
	equal(t, "status", apiErr.StatusCode, 500)
	equal(t, "message", apiErr.Message, "llmtest: script exhausted after 1 requests")
	equal(t, "remaining", b.srv.Remaining(), 0)
	equal(t, "recorded", len(b.srv.Requests()), 2)
}

func TestPushAndRemaining(t *testing.T) {
	t.Parallel()
	b := setup(t)
	equal(t, "empty", b.srv.Remaining(), 0)
	b.srv.Push(llmtest.Turn{Text: "one"}, llmtest.Turn{Text: "two"})
	equal(t, "after push", b.srv.Remaining(), 2)
	r := oaStream(ctxT(t), t, b.oa, oaParams("x"))
	must(t, r.err)
	equal(t, "first", r.acc.Choices[0].Message.Content, "one")
	equal(t, "after one request", b.srv.Remaining(), 1)
}

func TestNewServerFunc(t *testing.T) {
	t.Parallel()
	b := clients(t, llmtest.NewServerFunc(func(req llmtest.Request) llmtest.Turn {
		return llmtest.Turn{Text: "echo: " + req.LastUserText()}
	}))
	b.srv.Push(llmtest.Turn{Text: "scripted first"})

	r := antStream(ctxT(t), t, b.ant, antParams("hello"))
	must(t, r.err)
	equal(t, "pushed turn first", r.msg.Content[0].Text, "scripted first")
	r = antStream(ctxT(t), t, b.ant, antParams("hello"))
	must(t, r.err)
	equal(t, "then the function", r.msg.Content[0].Text, "echo: hello")
}

func TestConcurrentRequestsEachConsumeOneTurn(t *testing.T) {
	t.Parallel()
	const n = 16
	var turns []llmtest.Turn
	for i := range n {
		turns = append(turns, llmtest.Turn{Text: fmt.Sprintf("turn %d", i)})
	}
	b := setup(t, turns...)
	ctx := ctxT(t)

	var wg sync.WaitGroup
	texts := make([]string, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			if i%2 == 0 {
				msg, err := b.ant.Messages.New(ctx, antParams("hi"))
				if err == nil {
					texts[i] = msg.Content[0].Text
				}
				errs[i] = err
				return
			}
			c, err := b.oa.Chat.Completions.New(ctx, oaParams("hi"))
			if err == nil {
				texts[i] = c.Choices[0].Message.Content
			}
			errs[i] = err
		})
	}
	wg.Wait()
	seen := map[string]bool{}
	for i := range n {
		must(t, errs[i])
		if seen[texts[i]] {
			t.Fatalf("turn %q served twice", texts[i])
		}
		seen[texts[i]] = true
	}
	equal(t, "distinct turns", len(seen), n)
	equal(t, "remaining", b.srv.Remaining(), 0)
	equal(t, "recorded", len(b.srv.Requests()), n)
}

func TestBadRequests(t *testing.T) {
	t.Parallel()

	t.Run("undecodable body is recorded and consumes no turn", func(t *testing.T) {
		t.Parallel()
		b := setup(t, llmtest.Turn{Text: "kept"})
		resp, err := http.Post(b.srv.URL+"/v1/messages", "application/json", strings.NewReader(`{"messages": 7}`))
		must(t, err)
		defer resp.Body.Close()
		equal(t, "status", resp.StatusCode, 400)
		var body struct {
			Type  string `json:"type"`
			Error struct {
				Type string `json:"type"`
			} `json:"error"`
		}
		must(t, json.NewDecoder(resp.Body).Decode(&body))
		equal(t, "error body", [2]string{body.Type, body.Error.Type}, [2]string{"error", "invalid_request_error"})
		equal(t, "remaining", b.srv.Remaining(), 1)
		reqs := b.srv.Requests()
		if len(reqs) != 1 || reqs[0].DecodeErr == nil || !bytes.Equal(reqs[0].Body, []byte(`{"messages": 7}`)) {
			t.Fatalf("want the bad request recorded with its decode error, got %+v", reqs)
		}
	})

	t.Run("invalid scripted turn answers 500", func(t *testing.T) {
		t.Parallel()
		b := setup(t, llmtest.Turn{Fault: &llmtest.Fault{Kind: "explode"}})
		_, err := b.oa.Chat.Completions.New(ctxT(t), oaParams("hi"))
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) {
			t.Fatalf("want *openai.Error, got %v", err)
		}
		equal(t, "status", apiErr.StatusCode, 500)
		if !strings.Contains(apiErr.Message, `unknown fault kind "explode"`) {
			t.Fatalf("message %q does not name the bad fault kind", apiErr.Message)
		}
	})

	t.Run("unknown route answers 404", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		resp, err := http.Post(b.srv.URL+"/v1/embeddings", "application/json", strings.NewReader(`{}`))
		must(t, err)
		resp.Body.Close()
		equal(t, "status", resp.StatusCode, 404)
	})
}
