package openai_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/llm/openai"
)

// rawServer serves body with status and content type for every request,
// for wire shapes llmtest does not produce: other servers' dialects and
// broken proxies.
func rawServer(t *testing.T, status int, contentType, body string) *openai.Provider {
	t.Helper()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.Header().Set("Retry-After", "3")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(hs.Close)
	return openai.New(openai.Options{BaseURL: hs.URL + "/v1"})
}

// sse renders data-only events.
func sse(events ...string) string {
	var b strings.Builder
	for _, e := range events {
		b.WriteString("data: " + e + "\n\n")
	}
	return b.String()
}

func TestCompat(t *testing.T) {
	t.Parallel()

	t.Run("ProxyErrorPage", func(t *testing.T) {
		t.Parallel()
		p := rawServer(t, http.StatusBadGateway, "text/html", "<html>bad gateway</html>")
		_, err := llm.Collect(p.Stream(context.Background(), hello()))
		var apiErr *llm.APIError
		if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadGateway || !errors.Is(err, llm.ErrServer) {
			t.Fatalf("err = %v, want a 502 APIError", err)
		}
		if apiErr.RetryAfter.Seconds() != 3 || !strings.Contains(apiErr.Message, "bad gateway") {
			t.Fatalf("APIError = %+v", apiErr)
		}
	})

	t.Run("InBandError", func(t *testing.T) {
		t.Parallel()
		p := rawServer(t, http.StatusOK, "text/event-stream", sse(
			`{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"par"},"finish_reason":null}]}`,
			`{"error":{"message":"upstream overloaded","code":429}}`,
		))
		_, err := llm.Collect(p.Stream(context.Background(), hello()))
		var apiErr *llm.APIError
		if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusTooManyRequests || apiErr.Message != "upstream overloaded" {
			t.Fatalf("err = %v, want the in-band 429", err)
		}
	})

	t.Run("OllamaDialect", func(t *testing.T) {
		t.Parallel()
		// reasoning instead of reasoning_content, parallel calls that all
		// use index 0 and arrive whole, "stop" as their finish reason, no
		// usage chunk, and no [DONE].
		p := rawServer(t, http.StatusOK, "text/event-stream", sse(
			`{"id":"x","object":"chat.completion.chunk","created":1,"model":"qwen3","choices":[{"index":0,"delta":{"role":"assistant","content":"","reasoning":"Two files."},"finish_reason":null}]}`,
			`{"id":"x","object":"chat.completion.chunk","created":1,"model":"qwen3","choices":[{"index":0,"delta":{"tool_calls":[{"id":"call_a","index":0,"type":"function","function":{"name":"read_file","arguments":"{\"path\":\"a\"}"}}]},"finish_reason":null}]}`,
			`{"id":"x","object":"chat.completion.chunk","created":1,"model":"qwen3","choices":[{"index":0,"delta":{"tool_calls":[{"id":"call_b","index":0,"type":"function","function":{"name":"read_file","arguments":"{\"path\":\"b\"}"}}]},"finish_reason":null}]}`,
			`{"id":"x","object":"chat.completion.chunk","created":1,"model":"qwen3","choices":[{"index":0,"delta":{"content":""},"finish_reason":"stop"}]}`,
		))
		var begins []llm.ToolCallBegin
		var thinking string
		var resp *llm.Response
		for ev, err := range p.Stream(context.Background(), hello()) {
			if err != nil {
				t.Fatalf("stream: %v", err)
			}
			switch e := ev.(type) {
			case llm.ToolCallBegin:
				begins = append(begins, e)
			case llm.ThinkingDelta:
				thinking += e.Text
			case llm.Done:
				resp = e.Response
			}
		}
		if thinking != "Two files." || len(begins) != 2 || begins[1].Index != 1 || begins[1].ID != "call_b" {
			t.Fatalf("thinking %q begins %+v", thinking, begins)
		}
		calls := resp.Message.ToolCalls()
		if len(calls) != 2 || string(calls[1].Input) != `{"path":"b"}` || resp.StopReason != llm.StopToolUse {
			t.Fatalf("calls %+v stop %q", calls, resp.StopReason)
		}
	})

	t.Run("FieldsOfTheWrongType", func(t *testing.T) {
		t.Parallel()
		for _, bad := range []string{
			`{"id":"x","model":"m","choices":[{"index":0,"delta":{"content":5}}]}`,
			`{"id":"x","model":"m","choices":[{"index":"first","delta":{}}]}`,
			`{"id":"x","model":"m","choices":{}}`,
		} {
			p := rawServer(t, http.StatusOK, "text/event-stream", sse(bad, "[DONE]"))
			_, err := llm.Collect(p.Stream(context.Background(), hello()))
			if !errors.Is(err, llm.ErrBadResponse) {
				t.Errorf("%s: err = %v, want ErrBadResponse", bad, err)
			}
		}
	})

	t.Run("NumbersAsStrings", func(t *testing.T) {
		t.Parallel()
		p := rawServer(t, http.StatusOK, "text/event-stream", sse(
			`{"id":"x","model":"m","choices":[{"index":"0","delta":{"content":"hi"}}]}`,
			`{"id":"x","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
			`{"id":"x","model":"m","choices":[],"usage":{"prompt_tokens":"20","completion_tokens":5.0,"prompt_tokens_details":{"cached_tokens":"8"}}}`,
			"[DONE]",
		))
		resp, err := llm.Collect(p.Stream(context.Background(), hello()))
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		if resp.Message.Text() != "hi" || resp.Usage != (llm.Usage{InputTokens: 12, OutputTokens: 5, CacheReadTokens: 8}) {
			t.Fatalf("resp = %+v", resp)
		}
	})

	t.Run("CallWithoutID", func(t *testing.T) {
		t.Parallel()
		p := rawServer(t, http.StatusOK, "text/event-stream", sse(
			`{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"ls","arguments":""}}]},"finish_reason":"tool_calls"}]}`,
			`[DONE]`,
		))
		resp, err := llm.Collect(p.Stream(context.Background(), hello()))
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		calls := resp.Message.ToolCalls()
		if len(calls) != 1 || !strings.HasPrefix(calls[0].ID, "call_") || string(calls[0].Input) != "{}" {
			t.Fatalf("calls = %+v, want a generated id and input {}", calls)
		}
	})

	t.Run("EndWithoutFinishIsACut", func(t *testing.T) {
		t.Parallel()
		p := rawServer(t, http.StatusOK, "text/event-stream", sse(
			`{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"half"},"finish_reason":null}]}`,
		))
		_, err := llm.Collect(p.Stream(context.Background(), hello()))
		if !errors.Is(err, llm.ErrConnection) {
			t.Fatalf("err = %v, want ErrConnection", err)
		}
	})

	t.Run("InvalidArgumentsAreTheModels", func(t *testing.T) {
		t.Parallel()
		p := rawServer(t, http.StatusOK, "text/event-stream", sse(
			`{"id":"x","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"id":"c","index":0,"function":{"name":"ls","arguments":"{\"dir\":"}}]},"finish_reason":"tool_calls"}]}`,
			`[DONE]`,
		))
		resp, err := llm.Collect(p.Stream(context.Background(), hello()))
		if err != nil {
			t.Fatalf("err = %v: malformed arguments are a tool error for the model, not a failed call", err)
		}
		if cs := resp.Message.ToolCalls(); len(cs) != 1 || cs[0].InvalidInput != `{"dir":` {
			t.Fatalf("calls %+v", cs)
		}
	})
}
