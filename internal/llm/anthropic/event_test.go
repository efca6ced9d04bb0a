package anthropic

import (
	"encoding/json"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/llm/providertest"
)

// sdkEvent is what the SDK's union decoded from an event, in arbor's
// struct: the reference the plain decoding is checked against, and the
// fields Stream read before it decoded events itself.
func sdkEvent(ev sdk.MessageStreamEventUnion) event {
	usage := func(in, out, read, write int64) eventUsage {
		return eventUsage{InputTokens: llm.Count(in), OutputTokens: llm.Count(out), CacheReadInputTokens: llm.Count(read), CacheCreationInputTokens: llm.Count(write)}
	}
	m, u, cb, d := ev.Message, ev.Usage, ev.ContentBlock, ev.Delta
	var input json.RawMessage
	if raw := cb.JSON.Input.Raw(); raw != "" {
		input = json.RawMessage(raw)
	}
	return event{
		Type:  ev.Type,
		Index: llm.Count(ev.Index),
		Message: eventMessage{ID: m.ID, Model: string(m.Model),
			Usage: usage(m.Usage.InputTokens, m.Usage.OutputTokens, m.Usage.CacheReadInputTokens, m.Usage.CacheCreationInputTokens)},
		ContentBlock: eventBlock{Type: cb.Type, Text: cb.Text, Thinking: cb.Thinking, Signature: cb.Signature,
			Data: cb.Data, ID: cb.ID, Name: cb.Name, Input: input},
		Delta: eventDelta{Type: d.Type, Text: d.Text, Thinking: d.Thinking, Signature: d.Signature,
			PartialJSON: d.PartialJSON, StopReason: d.StopReason},
		Usage: usage(u.InputTokens, u.OutputTokens, u.CacheReadInputTokens, u.CacheCreationInputTokens),
	}
}

// TestEventMatchesTheSDK: for every event the scripted server sends, and
// for the shapes of the API it does not (nulls, server tool blocks,
// fields and types arbor does not know), decoding into event reads what
// the SDK's union reads; and an event either refuses, both refuse.
func TestEventMatchesTheSDK(t *testing.T) {
	t.Parallel()
	payloads := providertest.ScriptedData(t, "/v1/messages",
		`{"model":"m","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hi"}]}`,
		llmtest.Turn{Text: "Reply, short and instant."},
		llmtest.Turn{Thinking: "Let me think it over.", Text: "Done: \"quoted\" <tags> & ünïcode \u2028."},
		llmtest.Turn{Text: "Two calls.", ToolCalls: []llmtest.ToolCall{
			{Name: "read_file", Input: map[string]any{"path": "README.md", "limit": 40}},
			{Name: "bash", Input: map[string]any{"command": "ls -la", "nested": map[string]any{"a": []any{1, "x", nil}}}},
		}},
		llmtest.Turn{Text: "Capped", StopReason: "max_tokens", Usage: llmtest.Usage{Input: 9, Output: 8, CacheRead: 7, CacheWrite: 6}},
		llmtest.Turn{Text: "No.", StopReason: "refusal"},
		llmtest.Turn{Text: "Stop.", StopReason: "stop_sequence"},
	)
	for _, p := range []string{
		`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":1,"cache_read_input_tokens":null,"service_tier":"standard"}}}`,
		`{"type":"message_delta","delta":{"stop_reason":"model_context_window_exceeded","stop_sequence":null},"usage":{"input_tokens":null,"output_tokens":3,"server_tool_use":{"web_search_requests":1}}}`,
		`{"type":"message_delta","delta":{"stop_reason":"pause_turn"},"usage":{"output_tokens":3,"cache_creation_input_tokens":12}}`,
		`{"type":"content_block_start","index":2,"content_block":{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}}`,
		`{"type":"content_block_start","index":3,"content_block":{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[{"type":"web_search_result","url":"https://x","title":"X","encrypted_content":"e"}]}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"bash","input":{"command":"ls"}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"bash","input":null}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"bash"}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"redacted_thinking","data":"opaque"}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":"","citations":null}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"citations_delta","citation":{"type":"char_location","cited_text":"x"}}}`,
		`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\": "}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":null}}`,
		`{"type":"content_block_stop","index":7}`,
		`{"type":"message_stop"}`,
		`{"type":"future_event","index":1,"x":[1,2,{"y":null}]}`,
		`{"type":"message_start","message":null}`,
		`{}`,
		// Numbers as strings or floats, as gateways may send them.
		`{"type":"content_block_stop","index":"1"}`,
		`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":"3","input_tokens":12.0}}`,
		`{"type":"message_start","message":{"id":"m","model":"x","usage":{"input_tokens":1.9,"output_tokens":1e2,"cache_read_input_tokens":"-4"}}}`,
	} {
		payloads = append(payloads, []byte(p))
	}
	if len(payloads) < 60 {
		t.Fatalf("only %d payloads", len(payloads))
	}
	providertest.DecodesLikeTheSDK(t, payloads, sdkEvent)

	// Both refuse what is not JSON; arbor also refuses, as a bad
	// response, an event whose text or structure has the wrong JSON type,
	// which the SDK coerced (a string from a number, an empty event from
	// an array).
	providertest.RefusesLikeTheSDK[event, sdk.MessageStreamEventUnion](t, []providertest.Refusal{
		{Data: `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":`, SDKRefuses: true},
		{Data: `not json`, SDKRefuses: true},
		{Data: `{"type":"message_stop"} trailing`, SDKRefuses: true},
		{Data: `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":5}}`, SDKRefuses: false},
		{Data: `{"type":"content_block_delta","index":0,"delta":[]}`, SDKRefuses: false},
		{Data: `{"type":5}`, SDKRefuses: false},
		{Data: `[]`, SDKRefuses: false},
		{Data: `{"type":"content_block_stop","index":"one"}`, SDKRefuses: false},
		{Data: `{"type":"content_block_stop","index":true}`, SDKRefuses: false},
	})
}
