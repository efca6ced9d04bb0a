package providertest

import (
	"context"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/llm/llmtest"
)

func (s *suite) testStream(t *testing.T) {
	t.Parallel()

	t.Run("PlainText", func(t *testing.T) {
		t.Parallel()
		const want = "The quick brown fox jumps over the lazy dog."
		b := s.setup(t, llmtest.Turn{Text: want, Usage: llmtest.Usage{Input: 11, Output: 7}})
		r := mustSucceed(t, b.p.Stream(context.Background(), request("say something")))

		text, _, n, _ := deltas(r.events)
		if text != want || n < 2 {
			t.Fatalf("streamed %d text deltas %q, want several making %q", n, text, want)
		}
		if got := r.resp.Message.Text(); got != want {
			t.Fatalf("response text = %q, want %q", got, want)
		}
		if r.resp.Message.Role != llm.RoleAssistant || len(r.resp.Message.Parts) != 1 {
			t.Fatalf("response message = %+v, want one assistant text part", r.resp.Message)
		}
		if r.resp.StopReason != llm.StopEndTurn {
			t.Fatalf("stop reason = %q, want end_turn", r.resp.StopReason)
		}
		if want := (llm.Usage{InputTokens: 11, OutputTokens: 7}); r.resp.Usage != want {
			t.Fatalf("usage = %+v, want %+v", r.resp.Usage, want)
		}
		if r.resp.ID == "" || r.resp.Model != Model {
			t.Fatalf("response id %q model %q, want an id and model %q", r.resp.ID, r.resp.Model, Model)
		}
		rec := b.onlyRequest(t)
		if rec.Model != Model || !rec.Stream || rec.MaxTokens <= 0 {
			t.Fatalf("request model %q stream %v max_tokens %d", rec.Model, rec.Stream, rec.MaxTokens)
		}
		if rec.Format == llmtest.FormatOpenAI && !rec.IncludeUsage {
			t.Fatal("request did not ask for stream usage")
		}
		if b.p.Name() == "" {
			t.Fatal("provider has no name")
		}
	})

	t.Run("Thinking", func(t *testing.T) {
		t.Parallel()
		const thought, answer = "First add two and two, then check it twice.", "Four."
		b := s.setup(t, llmtest.Turn{Thinking: thought, Text: answer})
		req := request("what is 2+2?")
		req.ThinkingBudget = 2048
		r := mustSucceed(t, b.p.Stream(context.Background(), req))

		text, thinking, _, n := deltas(r.events)
		if thinking != thought || n < 2 || text != answer {
			t.Fatalf("streamed %d thinking deltas %q and text %q", n, thinking, text)
		}
		parts := r.resp.Message.Parts
		if len(parts) != 2 || parts[0].Type != llm.PartThinking || parts[1].Type != llm.PartText {
			t.Fatalf("parts = %+v, want thinking then text", parts)
		}
		if parts[0].Text != thought || parts[1].Text != answer {
			t.Fatalf("parts = %+v", parts)
		}
		if rec := b.onlyRequest(t); rec.Format == llmtest.FormatAnthropic {
			if sig := llmtest.ThinkingSignature(thought); parts[0].Signature != sig {
				t.Fatalf("thinking signature = %q, want %q", parts[0].Signature, sig)
			}
			if rec.ThinkingBudget != 2048 || rec.MaxTokens <= 2048 {
				t.Fatalf("thinking budget %d max_tokens %d, want 2048 below max_tokens", rec.ThinkingBudget, rec.MaxTokens)
			}
		}
	})

	t.Run("Usage", func(t *testing.T) {
		t.Parallel()
		u := llmtest.Usage{Input: 100, Output: 20, CacheRead: 50, CacheWrite: 30}
		b := s.setup(t, llmtest.Turn{Text: "cached", Usage: u})
		r := mustSucceed(t, b.p.Stream(context.Background(), request("again")))
		// InputTokens excludes cache reads and writes in every format, so
		// that llm.Price.Cost counts each token once.
		want := llm.Usage{InputTokens: 100, OutputTokens: 20, CacheReadTokens: 50, CacheWriteTokens: 30}
		if r.resp.Usage != want {
			t.Fatalf("usage = %+v, want %+v", r.resp.Usage, want)
		}
	})

	t.Run("MaxTokens", func(t *testing.T) {
		t.Parallel()
		b := s.setup(t, llmtest.Turn{Text: "This answer was cut", StopReason: "max_tokens"})
		req := request("write a lot")
		req.MaxTokens = 5
		r := mustSucceed(t, b.p.Stream(context.Background(), req))
		if r.resp.StopReason != llm.StopMaxTokens {
			t.Fatalf("stop reason = %q, want max_tokens", r.resp.StopReason)
		}
		if rec := b.onlyRequest(t); rec.MaxTokens != 5 {
			t.Fatalf("request max_tokens = %d, want 5", rec.MaxTokens)
		}
	})

	t.Run("SlowTokens", func(t *testing.T) {
		t.Parallel()
		const want = "one two three four"
		b := s.setup(t, llmtest.Turn{Text: want, Fault: &llmtest.Fault{Kind: llmtest.FaultSlow, Delay: llmtest.Duration(5 * time.Millisecond)}})
		r := mustSucceed(t, b.p.Stream(context.Background(), request("slowly")))
		if r.resp.Message.Text() != want {
			t.Fatalf("text = %q, want %q", r.resp.Message.Text(), want)
		}
	})
}
