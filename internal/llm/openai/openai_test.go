package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/llm/openai"
	"github.com/arbor-run/arbor/internal/llm/providertest"
)

// TestProvider gives the provider the server's bare root URL, so every
// case also exercises the "/v1" default.
func TestProvider(t *testing.T) {
	t.Parallel()
	providertest.Run(t, func(t *testing.T, baseURL string) llm.Provider {
		return openai.New(openai.Options{APIKey: "sk-test", BaseURL: baseURL})
	})
}

type bundle struct {
	srv *llmtest.Server
	p   *openai.Provider
}

// setup starts a server and a provider for it; baseURL maps the server's
// root URL to the one the provider is given.
func setup(t *testing.T, o openai.Options, baseURL func(root string) string, turns ...llmtest.Turn) *bundle {
	t.Helper()
	srv := llmtest.NewServer(turns...)
	t.Cleanup(srv.Close)
	o.BaseURL = baseURL(srv.URL)
	return &bundle{srv: srv, p: openai.New(o)}
}

func root(u string) string { return u }

func (b *bundle) call(t *testing.T, req *llm.Request) (*llm.Response, llmtest.Request) {
	t.Helper()
	resp, err := llm.Collect(b.p.Stream(context.Background(), req))
	if err != nil {
		t.Fatalf("stream: %v", err)
	}
	reqs := b.srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("server saw %d requests", len(reqs))
	}
	return resp, reqs[0]
}

func hello() *llm.Request {
	return &llm.Request{Model: "m", Messages: []llm.Message{llm.UserText("hello")}}
}

func TestOptions(t *testing.T) {
	t.Parallel()

	t.Run("Defaults", func(t *testing.T) {
		t.Parallel()
		b := setup(t, openai.Options{APIKey: "sk-test"}, root, llmtest.Turn{Text: "hi"})
		_, rec := b.call(t, hello())
		if b.p.Name() != "openai" {
			t.Fatalf("Name() = %q", b.p.Name())
		}
		if rec.Path != "/v1/chat/completions" {
			t.Fatalf("path = %q, want /v1/chat/completions", rec.Path)
		}
		if rec.MaxTokens != openai.DefaultMaxTokens {
			t.Fatalf("max_tokens = %d, want %d", rec.MaxTokens, openai.DefaultMaxTokens)
		}
		if got := rec.Header.Get("Authorization"); got != "Bearer sk-test" {
			t.Fatalf("Authorization = %q", got)
		}
		// A compatible server gets max_tokens, which all of them know.
		var body struct {
			MaxTokens           *int64 `json:"max_tokens"`
			MaxCompletionTokens *int64 `json:"max_completion_tokens"`
		}
		if err := json.Unmarshal(rec.Body, &body); err != nil || body.MaxTokens == nil || body.MaxCompletionTokens != nil {
			t.Fatalf("body = %s, want max_tokens only", rec.Body)
		}
	})

	t.Run("BaseURLWithPath", func(t *testing.T) {
		t.Parallel()
		b := setup(t, openai.Options{Name: "ollama", MaxTokens: 99}, func(u string) string { return u + "/v1/" }, llmtest.Turn{Text: "hi"})
		_, rec := b.call(t, hello())
		if rec.Path != "/v1/chat/completions" || rec.MaxTokens != 99 || b.p.Name() != "ollama" {
			t.Fatalf("path %q max_tokens %d name %q", rec.Path, rec.MaxTokens, b.p.Name())
		}
		if got := rec.Header.Get("Authorization"); got != "" {
			t.Fatalf("Authorization = %q, want none without a key", got)
		}
	})

	t.Run("PathIsKept", func(t *testing.T) {
		t.Parallel()
		// DashScope-style compatible-mode path: the server routes
		// /chat/completions too, so the request must arrive there.
		b := setup(t, openai.Options{}, func(u string) string { return u + "/" }, llmtest.Turn{Text: "hi"})
		_, rec := b.call(t, hello())
		if rec.Path != "/v1/chat/completions" {
			t.Fatalf("path = %q; a bare root with a slash must get /v1", rec.Path)
		}
	})
}

func TestMessages(t *testing.T) {
	t.Parallel()

	t.Run("TextsAndResultsOrder", func(t *testing.T) {
		t.Parallel()
		b := setup(t, openai.Options{}, root, llmtest.Turn{Text: "done"})
		_, rec := b.call(t, &llm.Request{Model: "m", Messages: []llm.Message{
			llm.UserText("go"),
			{Role: llm.RoleAssistant, Parts: []llm.Part{{Type: llm.PartToolCall, ToolCall: &llm.ToolCall{ID: "c1", Name: "ls"}}}},
			{Role: llm.RoleUser, Parts: []llm.Part{
				llm.TextPart("also this"),
				{Type: llm.PartToolResult, ToolResult: &llm.ToolResult{CallID: "c1", Content: "a b"}},
			}},
			{Role: llm.RoleAssistant, Parts: []llm.Part{{Type: llm.PartThinking, Text: "only thinking"}}},
		}})
		// The tool message must follow the assistant's call, before the
		// user's text; the thinking-only message is not sent.
		if len(rec.Messages) != 4 {
			t.Fatalf("messages = %+v", rec.Messages)
		}
		if calls := rec.Messages[1].ToolCalls(); len(calls) != 1 || string(calls[0].Input) != "{}" {
			t.Fatalf("assistant calls = %+v, want one with input {}", calls)
		}
		if p := rec.Messages[2].Parts; len(p) != 1 || p[0].Type != llm.PartToolResult {
			t.Fatalf("third message = %+v, want the tool result", rec.Messages[2])
		}
		if rec.Messages[3].Text() != "also this" {
			t.Fatalf("fourth message = %+v, want the user text", rec.Messages[3])
		}
	})

	t.Run("ToolResultImagesFollowAsUserMessage", func(t *testing.T) {
		t.Parallel()
		b := setup(t, openai.Options{}, root, llmtest.Turn{Text: "done"})
		_, rec := b.call(t, &llm.Request{Model: "m", Messages: []llm.Message{
			llm.UserText("go"),
			{Role: llm.RoleAssistant, Parts: []llm.Part{{Type: llm.PartToolCall, ToolCall: &llm.ToolCall{ID: "c1", Name: "shot"}}}},
			{Role: llm.RoleUser, Parts: []llm.Part{
				{Type: llm.PartToolResult, ToolResult: &llm.ToolResult{CallID: "c1", Content: "a screenshot",
					Images: []llm.Image{{MediaType: "image/png", Data: "iVBORw0KGgo="}}}},
			}},
		}})
		var body struct {
			Messages []struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(rec.Body, &body); err != nil {
			t.Fatal(err)
		}
		if n := len(body.Messages); n != 4 || body.Messages[2].Role != "tool" || body.Messages[3].Role != "user" {
			t.Fatalf("messages = %s, want the tool message then a user message", rec.Body)
		}
		var parts []struct {
			Type     string `json:"type"`
			Text     string `json:"text"`
			ImageURL struct {
				URL string `json:"url"`
			} `json:"image_url"`
		}
		if err := json.Unmarshal(body.Messages[3].Content, &parts); err != nil {
			t.Fatal(err)
		}
		if len(parts) != 2 || parts[0].Text != "Images returned by tool call c1:" || parts[1].ImageURL.URL != "data:image/png;base64,iVBORw0KGgo=" {
			t.Fatalf("user message parts = %+v", parts)
		}
	})

	t.Run("InvalidSchemaIsRejected", func(t *testing.T) {
		t.Parallel()
		b := setup(t, openai.Options{}, root, llmtest.Turn{Text: "never"})
		req := hello()
		req.Tools = []llm.ToolSpec{{Name: "x", InputSchema: json.RawMessage(`[`)}}
		_, err := llm.Collect(b.p.Stream(context.Background(), req))
		if !errors.Is(err, llm.ErrInvalidRequest) || len(b.srv.Requests()) != 0 {
			t.Fatalf("err = %v, requests = %d; want ErrInvalidRequest before sending", err, len(b.srv.Requests()))
		}
	})

	t.Run("CancelledBeforeStart", func(t *testing.T) {
		t.Parallel()
		b := setup(t, openai.Options{}, root, llmtest.Turn{Text: "never"})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := llm.Collect(b.p.Stream(ctx, hello()))
		if !errors.Is(err, context.Canceled) || len(b.srv.Requests()) != 0 {
			t.Fatalf("err = %v, requests = %d", err, len(b.srv.Requests()))
		}
	})
}

// TestInvalidToolArguments: arguments that are not valid JSON do not fail
// the call: the tool call carries them as InvalidInput (with input {}),
// so the agent can hand them back to the model as a tool error.
func TestInvalidToolArguments(t *testing.T) {
	t.Parallel()
	raw := `{"path": "a.txt"`
	b := setup(t, openai.Options{APIKey: "sk-test"}, func(u string) string { return u + "/v1" },
		llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "read_file", RawInput: raw}, {Name: "echo", Input: map[string]any{"text": "ok"}}}})
	resp, _ := b.call(t, hello())
	cs := resp.Message.ToolCalls()
	if len(cs) != 2 || cs[0].InvalidInput != raw || string(cs[0].Input) != "{}" || cs[1].InvalidInput != "" || string(cs[1].Input) != `{"text":"ok"}` {
		t.Fatalf("calls %+v", cs)
	}
}
