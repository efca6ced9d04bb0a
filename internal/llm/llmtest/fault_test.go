package llmtest_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
)

func TestFaultRateLimit(t *testing.T) {
	t.Parallel()
	turns := []llmtest.Turn{
		{Fault: &llmtest.Fault{Kind: llmtest.FaultRateLimit, RetryAfter: 3}},
		{Text: "after the wait"},
	}

	t.Run("anthropic", func(t *testing.T) {
		t.Parallel()
		b := setup(t, turns...)
		r := antStream(ctxT(t), t, b.ant, antParams("hi"))
		var apiErr *anthropic.Error
		if !errors.As(r.err, &apiErr) {
			t.Fatalf("want *anthropic.Error, got %T %v", r.err, r.err)
		}
		equal(t, "status", apiErr.StatusCode, 429)
		equal(t, "retry-after", apiErr.Response.Header.Get("Retry-After"), "3")
		equal(t, "error type", string(apiErr.Type()), "rate_limit_error")

		// The fault was consumed: the retry succeeds.
		r = antStream(ctxT(t), t, b.ant, antParams("hi"))
		must(t, r.err)
		equal(t, "text", r.msg.Content[0].Text, "after the wait")
	})

	t.Run("openai", func(t *testing.T) {
		t.Parallel()
		b := setup(t, turns...)
		r := oaStream(ctxT(t), t, b.oa, oaParams("hi"))
		var apiErr *openai.Error
		if !errors.As(r.err, &apiErr) {
			t.Fatalf("want *openai.Error, got %T %v", r.err, r.err)
		}
		equal(t, "status", apiErr.StatusCode, 429)
		equal(t, "retry-after", apiErr.Response.Header.Get("Retry-After"), "3")
		equal(t, "code", apiErr.Code, "rate_limit_exceeded")

		r = oaStream(ctxT(t), t, b.oa, oaParams("hi"))
		must(t, r.err)
		equal(t, "text", r.acc.Choices[0].Message.Content, "after the wait")
	})

	t.Run("default retry-after is one second", func(t *testing.T) {
		t.Parallel()
		b := setup(t, llmtest.Turn{Fault: &llmtest.Fault{Kind: llmtest.FaultRateLimit}})
		_, err := b.ant.Messages.New(ctxT(t), antParams("hi"))
		var apiErr *anthropic.Error
		if !errors.As(err, &apiErr) {
			t.Fatalf("want *anthropic.Error, got %v", err)
		}
		equal(t, "retry-after", apiErr.Response.Header.Get("Retry-After"), "1")
	})
}

func TestFaultServerError(t *testing.T) {
	t.Parallel()

	t.Run("anthropic 500", func(t *testing.T) {
		t.Parallel()
		b := setup(t, llmtest.Turn{Fault: &llmtest.Fault{Kind: llmtest.FaultServer}})
		r := antStream(ctxT(t), t, b.ant, antParams("hi"))
		var apiErr *anthropic.Error
		if !errors.As(r.err, &apiErr) {
			t.Fatalf("want *anthropic.Error, got %T %v", r.err, r.err)
		}
		equal(t, "status", apiErr.StatusCode, 500)
		equal(t, "error type", string(apiErr.Type()), "api_error")
	})

	t.Run("openai custom status", func(t *testing.T) {
		t.Parallel()
		b := setup(t, llmtest.Turn{Fault: &llmtest.Fault{Kind: llmtest.FaultServer, Status: 503}})
		r := oaStream(ctxT(t), t, b.oa, oaParams("hi"))
		var apiErr *openai.Error
		if !errors.As(r.err, &apiErr) {
			t.Fatalf("want *openai.Error, got %T %v", r.err, r.err)
		}
		equal(t, "status", apiErr.StatusCode, 503)
		equal(t, "type", apiErr.Type, "server_error")
	})
}

func TestFaultCut(t *testing.T) {
	t.Parallel()
	turn := llmtest.Turn{Text: "this answer never arrives whole", Fault: &llmtest.Fault{Kind: llmtest.FaultCut, AfterEvents: 3}}

	t.Run("anthropic", func(t *testing.T) {
		t.Parallel()
		b := setup(t, turn)
		r := antStream(ctxT(t), t, b.ant, antParams("hi"))
		if !errors.Is(r.err, io.ErrUnexpectedEOF) {
			t.Fatalf("want unexpected EOF, got %T %v", r.err, r.err)
		}
		// message_start, (ping, skipped by the SDK), content_block_start.
		equal(t, "events before the cut", r.events, 2)
	})

	t.Run("openai", func(t *testing.T) {
		t.Parallel()
		b := setup(t, turn)
		r := oaStream(ctxT(t), t, b.oa, oaParams("hi"))
		if !errors.Is(r.err, io.ErrUnexpectedEOF) {
			t.Fatalf("want unexpected EOF, got %T %v", r.err, r.err)
		}
		equal(t, "chunks before the cut", r.chunks, 3)
	})

	t.Run("after_events past the end still cuts", func(t *testing.T) {
		t.Parallel()
		b := setup(t, llmtest.Turn{Text: "x", Fault: &llmtest.Fault{Kind: llmtest.FaultCut, AfterEvents: 1000}})
		r := oaStream(ctxT(t), t, b.oa, oaParams("hi"))
		if !errors.Is(r.err, io.ErrUnexpectedEOF) {
			t.Fatalf("want unexpected EOF, got %v", r.err)
		}
	})

	t.Run("non-streaming", func(t *testing.T) {
		t.Parallel()
		b := setup(t, turn)
		_, err := b.ant.Messages.New(ctxT(t), antParams("hi"))
		var apiErr *anthropic.Error
		if err == nil || errors.As(err, &apiErr) {
			t.Fatalf("want a connection error, got %v", err)
		}
	})
}

func TestFaultMalformed(t *testing.T) {
	t.Parallel()
	turn := llmtest.Turn{Text: "garbled soon", Fault: &llmtest.Fault{Kind: llmtest.FaultMalformed, AfterEvents: 2}}

	t.Run("anthropic", func(t *testing.T) {
		t.Parallel()
		b := setup(t, turn)
		r := antStream(ctxT(t), t, b.ant, antParams("hi"))
		var syntaxErr *json.SyntaxError
		if !errors.As(r.err, &syntaxErr) {
			t.Fatalf("want a JSON syntax error, got %T %v", r.err, r.err)
		}
	})

	t.Run("openai", func(t *testing.T) {
		t.Parallel()
		b := setup(t, turn)
		r := oaStream(ctxT(t), t, b.oa, oaParams("hi"))
		var syntaxErr *json.SyntaxError
		if !errors.As(r.err, &syntaxErr) {
			t.Fatalf("want a JSON syntax error, got %T %v", r.err, r.err)
		}
		equal(t, "chunks before the bad one", r.chunks, 2)
	})

	t.Run("non-streaming", func(t *testing.T) {
		t.Parallel()
		b := setup(t, turn)
		_, err := b.oa.Chat.Completions.New(ctxT(t), oaParams("hi"))
		if err == nil {
			t.Fatal("want a decoding error, got none")
		}
	})
}

func TestFaultStall(t *testing.T) {
	t.Parallel()
	stall := llmtest.Turn{Text: "never sent", Fault: &llmtest.Fault{Kind: llmtest.FaultStall, AfterEvents: 2}}

	t.Run("client timeout ends it and Close returns", func(t *testing.T) {
		t.Parallel()
		b := setup(t, stall)
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		r := oaStream(ctx, t, b.oa, oaParams("hi"))
		if !errors.Is(r.err, context.DeadlineExceeded) {
			t.Fatalf("want deadline exceeded, got %T %v", r.err, r.err)
		}
		equal(t, "chunks before the stall", r.chunks, 2)
		closeWithin(t, b.srv)
	})

	t.Run("client cancel releases the handler", func(t *testing.T) {
		t.Parallel()
		b := setup(t, stall)
		ctx, cancel := context.WithCancel(t.Context())
		stream := b.ant.Messages.NewStreaming(ctx, antParams("hi"))
		defer stream.Close()
		if !stream.Next() { // message_start; the stall follows ping
			t.Fatalf("no first event: %v", stream.Err())
		}
		cancel()
		for stream.Next() {
			t.Fatalf("event after the stall: %s", stream.Current().Type)
		}
		if !errors.Is(stream.Err(), context.Canceled) {
			t.Fatalf("want context canceled, got %v", stream.Err())
		}
		closeWithin(t, b.srv)
	})

	t.Run("Close releases a stall with a waiting client", func(t *testing.T) {
		t.Parallel()
		b := setup(t, stall)
		stream := b.ant.Messages.NewStreaming(ctxT(t), antParams("hi"))
		defer stream.Close()
		if !stream.Next() {
			t.Fatalf("no first event: %v", stream.Err())
		}
		closeWithin(t, b.srv)
		for stream.Next() {
			t.Fatalf("event after the stall: %s", stream.Current().Type)
		}
		if !errors.Is(stream.Err(), io.ErrUnexpectedEOF) {
			t.Fatalf("want the stream cut by Close, got %v", stream.Err())
		}
	})

	t.Run("bounded stall resumes", func(t *testing.T) {
		t.Parallel()
		b := setup(t, llmtest.Turn{Text: "late but whole", Fault: &llmtest.Fault{Kind: llmtest.FaultStall, AfterEvents: 1, Stall: llmtest.Duration(10 * time.Millisecond)}})
		r := antStream(ctxT(t), t, b.ant, antParams("hi"))
		must(t, r.err)
		equal(t, "text", r.msg.Content[0].Text, "late but whole")
	})
}

func TestFaultSlow(t *testing.T) {
	t.Parallel()
	turn := llmtest.Turn{
		Text:      "slow tokens still arrive",
		ToolCalls: []llmtest.ToolCall{{Name: "t", Input: map[string]any{"a": 1}}},
		Fault:     &llmtest.Fault{Kind: llmtest.FaultSlow, Delay: llmtest.Duration(time.Millisecond)},
	}

	t.Run("anthropic", func(t *testing.T) {
		t.Parallel()
		b := setup(t, turn)
		r := antStream(ctxT(t), t, b.ant, antParams("hi"))
		must(t, r.err)
		equal(t, "text", r.msg.Content[0].Text, "slow tokens still arrive")
		jsonEqual(t, "input", r.msg.Content[1].Input, `{"a":1}`)
	})

	t.Run("openai", func(t *testing.T) {
		t.Parallel()
		b := setup(t, turn)
		r := oaStream(ctxT(t), t, b.oa, oaParams("hi"))
		must(t, r.err)
		equal(t, "text", r.acc.Choices[0].Message.Content, "slow tokens still arrive")
	})

	t.Run("Close does not wait for a slow stream", func(t *testing.T) {
		t.Parallel()
		b := setup(t, llmtest.Turn{Text: "a b c d", Fault: &llmtest.Fault{Kind: llmtest.FaultSlow, Delay: llmtest.Duration(time.Hour)}})
		stream := b.oa.Chat.Completions.NewStreaming(ctxT(t), oaParams("hi"))
		defer stream.Close()
		if !stream.Next() {
			t.Fatalf("no first chunk: %v", stream.Err())
		}
		closeWithin(t, b.srv)
		for stream.Next() {
		}
		if !errors.Is(stream.Err(), io.ErrUnexpectedEOF) {
			t.Fatalf("want the stream cut by Close, got %v", stream.Err())
		}
	})
}

// closeWithin closes srv and fails if Close hangs.
func closeWithin(t *testing.T, srv *llmtest.Server) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		srv.Close()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close hung on an open stream")
	}
}
