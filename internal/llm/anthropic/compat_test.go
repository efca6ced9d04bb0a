package anthropic_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/llm/anthropic"
)

// rawServer serves body with status and content type for every request,
// for wire shapes llmtest does not produce.
func rawServer(t *testing.T, status int, contentType, body string) *anthropic.Provider {
	t.Helper()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(hs.Close)
	return anthropic.New(anthropic.Options{BaseURL: hs.URL})
}

// sse renders named events given as name, data, name, data…
func sse(pairs ...string) string {
	var b strings.Builder
	for i := 0; i+1 < len(pairs); i += 2 {
		b.WriteString("event: " + pairs[i] + "\ndata: " + pairs[i+1] + "\n\n")
	}
	return b.String()
}

const (
	start     = `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"usage":{"input_tokens":5,"output_tokens":1}}}`
	textStart = `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`
	textDelta = `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}`
	stop0     = `{"type":"content_block_stop","index":0}`
	msgDelta  = `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":3}}`
	msgStop   = `{"type":"message_stop"}`
)

func hello() *llm.Request {
	return &llm.Request{Model: "m", Messages: []llm.Message{llm.UserText("hello")}}
}

func TestCompat(t *testing.T) {
	t.Parallel()

	t.Run("InBandOverloaded", func(t *testing.T) {
		t.Parallel()
		p := rawServer(t, http.StatusOK, "text/event-stream", sse(
			"message_start", start,
			"error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
		))
		_, err := llm.Collect(p.Stream(context.Background(), hello()))
		var apiErr *llm.APIError
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 529 || apiErr.Message != "Overloaded" || !errors.Is(err, llm.ErrServer) {
			t.Fatalf("err = %v, want a 529 APIError", err)
		}
	})

	t.Run("ProxyErrorPage", func(t *testing.T) {
		t.Parallel()
		p := rawServer(t, http.StatusBadGateway, "text/html", "<html>bad gateway</html>")
		_, err := llm.Collect(p.Stream(context.Background(), hello()))
		var apiErr *llm.APIError
		if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadGateway || !strings.Contains(apiErr.Message, "bad gateway") {
			t.Fatalf("err = %v, want a 502 APIError with the page", err)
		}
	})

	t.Run("CleanEndWithoutMessageStop", func(t *testing.T) {
		t.Parallel()
		p := rawServer(t, http.StatusOK, "text/event-stream", sse(
			"message_start", start, "content_block_start", textStart, "content_block_delta", textDelta,
		))
		_, err := llm.Collect(p.Stream(context.Background(), hello()))
		if !errors.Is(err, llm.ErrConnection) {
			t.Fatalf("err = %v, want ErrConnection", err)
		}
	})

	t.Run("UnknownEventsAndRedactedThinking", func(t *testing.T) {
		t.Parallel()
		p := rawServer(t, http.StatusOK, "text/event-stream", sse(
			"message_start", start,
			"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"redacted_thinking","data":"opaque"}}`,
			"content_block_stop", stop0,
			"future_event", `{"type":"future_event","x":1}`,
			"content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`,
			"content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"hi"}}`,
			"content_block_stop", `{"type":"content_block_stop","index":1}`,
			"message_delta", msgDelta, "message_stop", msgStop,
		))
		resp, err := llm.Collect(p.Stream(context.Background(), hello()))
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		parts := resp.Message.Parts
		if len(parts) != 2 || parts[0].Type != llm.PartThinking || parts[0].Text != "" || parts[0].Signature != "opaque" || parts[1].Text != "hi" {
			t.Fatalf("parts = %+v", parts)
		}
		if resp.Usage != (llm.Usage{InputTokens: 5, OutputTokens: 3}) {
			t.Fatalf("usage = %+v", resp.Usage)
		}
	})

	t.Run("FieldsOfTheWrongType", func(t *testing.T) {
		t.Parallel()
		for _, bad := range []string{
			`{"type":"content_block_start","index":"first","content_block":{"type":"text","text":""}}`,
			`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":7}}`,
			`{"type":"content_block_start","index":0,"content_block":[]}`,
		} {
			p := rawServer(t, http.StatusOK, "text/event-stream", sse("message_start", start, "content_block_start", bad))
			_, err := llm.Collect(p.Stream(context.Background(), hello()))
			if !errors.Is(err, llm.ErrBadResponse) {
				t.Errorf("%s: err = %v, want ErrBadResponse", bad, err)
			}
		}
	})

	t.Run("NumbersAsStrings", func(t *testing.T) {
		t.Parallel()
		p := rawServer(t, http.StatusOK, "text/event-stream", sse(
			"message_start", `{"type":"message_start","message":{"id":"msg_1","model":"m","usage":{"input_tokens":"5","output_tokens":1.0}}}`,
			"content_block_start", `{"type":"content_block_start","index":"0","content_block":{"type":"text","text":""}}`,
			"content_block_delta", textDelta, "content_block_stop", stop0,
			"message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":"3"}}`,
			"message_stop", msgStop,
		))
		resp, err := llm.Collect(p.Stream(context.Background(), hello()))
		if err != nil {
			t.Fatalf("stream: %v", err)
		}
		if resp.Message.Text() != "hi" || resp.Usage != (llm.Usage{InputTokens: 5, OutputTokens: 3}) {
			t.Fatalf("resp = %+v", resp)
		}
	})

	t.Run("DeltaForUnknownBlock", func(t *testing.T) {
		t.Parallel()
		p := rawServer(t, http.StatusOK, "text/event-stream", sse(
			"message_start", start, "content_block_delta", textDelta,
		))
		_, err := llm.Collect(p.Stream(context.Background(), hello()))
		if !errors.Is(err, llm.ErrBadResponse) {
			t.Fatalf("err = %v, want ErrBadResponse", err)
		}
	})
}
