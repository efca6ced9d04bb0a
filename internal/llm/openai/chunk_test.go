package openai

import (
	"encoding/json"
	"testing"

	sdk "github.com/openai/openai-go/v3"

	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/llm/providertest"
)

// sdkChunk is what the SDK's ChatCompletionChunk decoded from a chunk, in
// arbor's structs: the reference the plain decoding is checked against,
// and the fields Stream read before it decoded chunks itself.
func sdkChunk(c sdk.ChatCompletionChunk) chunk {
	out := chunk{ID: c.ID, Model: c.Model}
	if c.Choices != nil {
		out.Choices = []chunkChoice{}
	}
	for _, ch := range c.Choices {
		d := chunkDelta{Content: ch.Delta.Content, Refusal: ch.Delta.Refusal}
		if raw := ch.Delta.JSON.ExtraFields["reasoning_content"].Raw(); raw != "" {
			d.ReasoningContent = json.RawMessage(raw)
		}
		if raw := ch.Delta.JSON.ExtraFields["reasoning"].Raw(); raw != "" {
			d.Reasoning = json.RawMessage(raw)
		}
		if ch.Delta.ToolCalls != nil {
			d.ToolCalls = []chunkToolCall{}
		}
		for _, tc := range ch.Delta.ToolCalls {
			call := chunkToolCall{Index: llm.Count(tc.Index), ID: tc.ID}
			call.Function.Name, call.Function.Arguments = tc.Function.Name, tc.Function.Arguments
			d.ToolCalls = append(d.ToolCalls, call)
		}
		out.Choices = append(out.Choices, chunkChoice{Index: llm.Count(ch.Index), Delta: d, FinishReason: ch.FinishReason})
	}
	if c.JSON.Usage.Valid() {
		u := &chunkUsage{PromptTokens: llm.Count(c.Usage.PromptTokens), CompletionTokens: llm.Count(c.Usage.CompletionTokens)}
		u.PromptTokensDetails.CachedTokens = llm.Count(c.Usage.PromptTokensDetails.CachedTokens)
		u.PromptTokensDetails.CacheWriteTokens = llm.Count(c.Usage.PromptTokensDetails.CacheWriteTokens)
		out.Usage = u
	}
	return out
}

// TestChunkMatchesTheSDK: for every chunk the scripted server sends, and
// for shapes of compatible servers it does not (nulls, reasoning fields,
// several choices, numbers as strings or floats, fields arbor does not
// know), decoding into chunk reads what the SDK's ChatCompletionChunk
// reads; and a chunk either refuses, both refuse.
func TestChunkMatchesTheSDK(t *testing.T) {
	t.Parallel()
	payloads := providertest.ScriptedData(t, "/v1/chat/completions",
		`{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`,
		llmtest.Turn{Text: "Reply, short and instant."},
		llmtest.Turn{Thinking: "Let me think it over.", Text: "Done: \"quoted\" <tags> & ünïcode \u2028."},
		llmtest.Turn{Text: "Two calls.", ToolCalls: []llmtest.ToolCall{
			{Name: "read_file", Input: map[string]any{"path": "README.md", "limit": 40}},
			{Name: "bash", Input: map[string]any{"command": "ls -la", "nested": map[string]any{"a": []any{1, "x", nil}}}},
		}},
		llmtest.Turn{Text: "Capped", StopReason: "max_tokens", Usage: llmtest.Usage{Input: 9, Output: 8, CacheRead: 7, CacheWrite: 1}},
		llmtest.Turn{Text: "No.", StopReason: "refusal"},
	)
	for _, p := range []string{
		`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","system_fingerprint":"fp","choices":[{"index":0,"delta":{"role":"assistant","content":null,"refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}`,
		`{"id":"c1","model":"m","choices":[{"index":0,"delta":{"reasoning_content":"think","content":""}}]}`,
		`{"id":"c1","model":"m","choices":[{"index":0,"delta":{"reasoning":"think","reasoning_details":[{"type":"reasoning.text"}]}}]}`,
		`{"id":"c1","model":"m","choices":[{"index":0,"delta":{"reasoning_content":null,"reasoning":7}}]}`,
		`{"id":"c1","model":"m","choices":[{"index":0,"delta":{"refusal":"I can't."},"finish_reason":"stop"}]}`,
		`{"id":"c1","model":"m","choices":[{"index":1,"delta":{"content":"second choice"}},{"index":0,"delta":{"content":"first"}}]}`,
		`{"id":"c1","model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"bash","arguments":""}},{"index":1,"function":{"arguments":"{\"a\""}}]}}]}`,
		`{"id":"c1","model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":null,"arguments":null}}]}}]}`,
		`{"id":"c1","model":"m","choices":[],"usage":{"prompt_tokens":20,"completion_tokens":5,"total_tokens":25,"prompt_tokens_details":{"cached_tokens":8,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":2}}}`,
		`{"id":"c1","model":"m","choices":[],"usage":{"prompt_tokens":20,"completion_tokens":5,"prompt_tokens_details":null}}`,
		`{"id":"c1","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"content_filter"}],"usage":{"prompt_tokens":"20","completion_tokens":5.0}}`,
		`{"id":"c1","model":"m","choices":[{"index":"0","delta":{"tool_calls":[{"index":"2","id":"x","function":{"name":"n"}}]}}]}`,
		`{"id":"c1","model":"m","choices":null}`,
		`{"id":"c1","model":"m","choices":[{"index":0,"delta":null}]}`,
		`{}`,
	} {
		payloads = append(payloads, []byte(p))
	}
	if len(payloads) < 50 {
		t.Fatalf("only %d payloads", len(payloads))
	}
	providertest.DecodesLikeTheSDK(t, payloads, sdkChunk)

	// Both refuse what is not JSON; arbor also refuses, as a bad
	// response, a chunk whose text or structure has the wrong JSON type,
	// which the SDK coerced.
	providertest.RefusesLikeTheSDK[chunk, sdk.ChatCompletionChunk](t, []providertest.Refusal{
		{Data: `{"id":"chatcmpl-broken","choices":[{"delta":`, SDKRefuses: true},
		{Data: `not json`, SDKRefuses: true},
		{Data: `{"id":"c1","model":"m","choices":[{"index":0,"delta":{"content":5}}]}`, SDKRefuses: false},
		{Data: `{"id":"c1","model":"m","choices":{}}`, SDKRefuses: false},
		{Data: `{"id":"c1","model":"m","choices":[{"index":"first"}]}`, SDKRefuses: false},
		{Data: `[]`, SDKRefuses: true},
	})
}
