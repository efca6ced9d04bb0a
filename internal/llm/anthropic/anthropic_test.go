package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/llm/anthropic"
	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/llm/providertest"
)

func TestProvider(t *testing.T) {
	t.Parallel()
	providertest.Run(t, func(t *testing.T, baseURL string) llm.Provider {
		return anthropic.New(anthropic.Options{APIKey: "sk-test", BaseURL: baseURL})
	})
}

type bundle struct {
	srv *llmtest.Server
	p   *anthropic.Provider
}

func setup(t *testing.T, o anthropic.Options, turns ...llmtest.Turn) *bundle {
	t.Helper()
	srv := llmtest.NewServer(turns...)
	t.Cleanup(srv.Close)
	o.BaseURL = srv.URL
	return &bundle{srv: srv, p: anthropic.New(o)}
}

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

func TestOptions(t *testing.T) {
	t.Parallel()

	t.Run("Defaults", func(t *testing.T) {
		t.Parallel()
		b := setup(t, anthropic.Options{APIKey: "sk-test"}, llmtest.Turn{Text: "hi"})
		_, rec := b.call(t, &llm.Request{Model: "m", Messages: []llm.Message{llm.UserText("hello")}})
		if b.p.Name() != "anthropic" {
			t.Fatalf("Name() = %q", b.p.Name())
		}
		if rec.MaxTokens != anthropic.DefaultMaxTokens {
			t.Fatalf("max_tokens = %d, want %d", rec.MaxTokens, anthropic.DefaultMaxTokens)
		}
		if rec.Header.Get("Authorization") != "Bearer sk-test" || rec.Header.Get("X-Api-Key") != "sk-test" {
			t.Fatalf("request does not carry the key: %v", rec.Header)
		}
		if rec.Header.Get("Anthropic-Version") == "" {
			t.Fatal("request lacks the anthropic-version header")
		}
		if got := rec.Header.Get("X-Stainless-Retry-Count"); got != "" && got != "0" {
			t.Fatalf("retry count header = %q", got)
		}
	})

	t.Run("NameAndMaxTokens", func(t *testing.T) {
		t.Parallel()
		b := setup(t, anthropic.Options{Name: "claude", MaxTokens: 777}, llmtest.Turn{Text: "hi"})
		_, rec := b.call(t, &llm.Request{Model: "m", Messages: []llm.Message{llm.UserText("hello")}})
		if b.p.Name() != "claude" || rec.MaxTokens != 777 {
			t.Fatalf("name %q max_tokens %d", b.p.Name(), rec.MaxTokens)
		}
	})

	t.Run("ThinkingBudgetRaisesMaxTokens", func(t *testing.T) {
		t.Parallel()
		b := setup(t, anthropic.Options{MaxTokens: 1000}, llmtest.Turn{Thinking: "hm", Text: "hi"})
		_, rec := b.call(t, &llm.Request{Model: "m", ThinkingBudget: 4000, Messages: []llm.Message{llm.UserText("hello")}})
		if rec.ThinkingBudget != 4000 || rec.MaxTokens != 5000 {
			t.Fatalf("budget %d max_tokens %d, want 4000 and 5000", rec.ThinkingBudget, rec.MaxTokens)
		}
	})
}

// wireBody is the part of the request body the cache and block tests read.
type wireBody struct {
	System []struct {
		CacheControl *struct{ Type string } `json:"cache_control"`
	} `json:"system"`
	Tools []struct {
		CacheControl *struct{ Type string } `json:"cache_control"`
	} `json:"tools"`
	Messages []struct {
		Content []struct {
			Type         string                 `json:"type"`
			Data         string                 `json:"data"`
			Content      json.RawMessage        `json:"content"`
			CacheControl *struct{ Type string } `json:"cache_control"`
		} `json:"content"`
	} `json:"messages"`
}

func decodeBody(t *testing.T, rec llmtest.Request) wireBody {
	t.Helper()
	var body wireBody
	if err := json.Unmarshal(rec.Body, &body); err != nil {
		t.Fatalf("request body: %v", err)
	}
	return body
}

func TestCacheBreakpoints(t *testing.T) {
	t.Parallel()
	tools := []llm.ToolSpec{
		{Name: "a", InputSchema: json.RawMessage(`{"type":"object"}`)},
		{Name: "b", InputSchema: json.RawMessage(`{"type":"object"}`)},
	}
	conversation := []llm.Message{
		llm.UserText("first"),
		{Role: llm.RoleAssistant, Parts: []llm.Part{llm.TextPart("ok")}},
		{Role: llm.RoleUser, Parts: []llm.Part{llm.TextPart("second"), llm.TextPart("third")}},
	}

	t.Run("SystemAndLastBlock", func(t *testing.T) {
		t.Parallel()
		b := setup(t, anthropic.Options{}, llmtest.Turn{Text: "hi"})
		_, rec := b.call(t, &llm.Request{Model: "m", System: "sys", Tools: tools, Messages: conversation})
		body := decodeBody(t, rec)
		if len(body.System) != 1 || body.System[0].CacheControl == nil || body.System[0].CacheControl.Type != "ephemeral" {
			t.Fatalf("system = %s, want an ephemeral breakpoint", rec.Body)
		}
		for i, tool := range body.Tools {
			if tool.CacheControl != nil {
				t.Fatalf("tool %d has a breakpoint; the system one covers tools", i)
			}
		}
		last := body.Messages[len(body.Messages)-1].Content
		if last[0].CacheControl != nil || last[1].CacheControl == nil {
			t.Fatalf("last message blocks = %+v, want a breakpoint on the last only", last)
		}
		if body.Messages[0].Content[0].CacheControl != nil {
			t.Fatal("earlier message has a breakpoint")
		}
	})

	t.Run("ToolsWithoutSystem", func(t *testing.T) {
		t.Parallel()
		b := setup(t, anthropic.Options{}, llmtest.Turn{Text: "hi"})
		_, rec := b.call(t, &llm.Request{Model: "m", Tools: tools, Messages: conversation[:1]})
		body := decodeBody(t, rec)
		if body.Tools[0].CacheControl != nil || body.Tools[1].CacheControl == nil {
			t.Fatalf("tools = %s, want a breakpoint on the last tool", rec.Body)
		}
	})
}

func TestBlocks(t *testing.T) {
	t.Parallel()

	t.Run("RedactedThinkingRoundTrips", func(t *testing.T) {
		t.Parallel()
		b := setup(t, anthropic.Options{}, llmtest.Turn{Text: "hi"})
		_, rec := b.call(t, &llm.Request{Model: "m", Messages: []llm.Message{
			llm.UserText("q"),
			{Role: llm.RoleAssistant, Parts: []llm.Part{{Type: llm.PartThinking, Signature: "opaque-data"}, llm.TextPart("a")}},
			llm.UserText("again"),
		}})
		blocks := decodeBody(t, rec).Messages[1].Content
		if blocks[0].Type != "redacted_thinking" || blocks[0].Data != "opaque-data" {
			t.Fatalf("blocks = %+v, want redacted_thinking with the data", blocks)
		}
	})

	t.Run("EmptyTextAndResultsAreValid", func(t *testing.T) {
		t.Parallel()
		b := setup(t, anthropic.Options{}, llmtest.Turn{Text: "hi"})
		_, rec := b.call(t, &llm.Request{Model: "m", Messages: []llm.Message{
			llm.UserText("q"),
			{Role: llm.RoleAssistant, Parts: []llm.Part{
				llm.TextPart(""),
				{Type: llm.PartToolCall, ToolCall: &llm.ToolCall{ID: "t1", Name: "noop"}},
			}},
			{Role: llm.RoleUser, Parts: []llm.Part{{Type: llm.PartToolResult, ToolResult: &llm.ToolResult{CallID: "t1"}}}},
		}})
		body := decodeBody(t, rec)
		if n := len(body.Messages[1].Content); n != 1 {
			t.Fatalf("assistant has %d blocks, want the empty text dropped", n)
		}
		if c := body.Messages[2].Content[0].Content; len(c) != 0 {
			t.Fatalf("empty tool result content = %s, want it omitted", c)
		}
		calls := rec.Messages[1].ToolCalls()
		if len(calls) != 1 || string(calls[0].Input) != "{}" {
			t.Fatalf("tool calls = %+v, want input {}", calls)
		}
	})

	t.Run("ToolResultImages", func(t *testing.T) {
		t.Parallel()
		b := setup(t, anthropic.Options{}, llmtest.Turn{Text: "hi"})
		img := llm.Image{MediaType: "image/png", Data: "iVBORw0KGgo="}
		_, rec := b.call(t, &llm.Request{Model: "m", Messages: []llm.Message{
			llm.UserText("q"),
			{Role: llm.RoleAssistant, Parts: []llm.Part{{Type: llm.PartToolCall, ToolCall: &llm.ToolCall{ID: "t1", Name: "shot"}}}},
			{Role: llm.RoleUser, Parts: []llm.Part{{Type: llm.PartToolResult, ToolResult: &llm.ToolResult{CallID: "t1", Content: "a screenshot", Images: []llm.Image{img}}}}},
		}})
		res := rec.Messages[2].Parts[0].ToolResult
		if res.Content != "a screenshot" || len(res.Images) != 1 || res.Images[0] != img {
			t.Fatalf("tool result = %+v, want the text and the image inside the tool_result", res)
		}
	})

	t.Run("InvalidToolInputIsRejected", func(t *testing.T) {
		t.Parallel()
		b := setup(t, anthropic.Options{}, llmtest.Turn{Text: "never"})
		_, err := llm.Collect(b.p.Stream(context.Background(), &llm.Request{Model: "m", Messages: []llm.Message{
			{Role: llm.RoleAssistant, Parts: []llm.Part{{Type: llm.PartToolCall, ToolCall: &llm.ToolCall{ID: "t", Name: "x", Input: json.RawMessage(`{`)}}}},
		}}))
		if !errors.Is(err, llm.ErrInvalidRequest) || len(b.srv.Requests()) != 0 {
			t.Fatalf("err = %v, requests = %d; want ErrInvalidRequest before sending", err, len(b.srv.Requests()))
		}
	})
}
