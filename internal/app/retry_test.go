package app_test

import (
	"context"
	"testing"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/llm/llmtest"
)

// TestRetryingNamesItsSession: the provider is shared by every session of
// a model, yet its Retrying event names the session whose call it retries.
func TestRetryingNamesItsSession(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(
		llmtest.Turn{Fault: &llmtest.Fault{Kind: llmtest.FaultRateLimit, RetryAfter: 1}},
		llmtest.Turn{Text: "after the retry"},
	)
	defer srv.Close()
	b := setup(t, map[string]string{"ANTHROPIC_API_KEY": "sk-test-0123456789", "ANTHROPIC_BASE_URL": srv.URL})
	retries := make(chan *agent.Retrying, 4)
	b.app.Bus.Subscribe(func(e agent.Event) {
		if r, ok := e.(*agent.Retrying); ok {
			retries <- r
		}
	})
	s, err := b.app.NewSession(context.Background(), app.SessionOptions{Model: "anthropic/claude-test"})
	if err != nil {
		t.Fatal(err)
	}
	res := s.Agent.Send(context.Background(), llm.UserText("hi"))
	if res.Outcome != agent.OutcomeCompleted || res.Text != "after the retry" {
		t.Fatalf("result %+v", res)
	}
	select {
	case r := <-retries:
		if r.SessionID != s.ID || r.Attempt != 1 {
			t.Fatalf("Retrying %+v, want session %s", r, s.ID)
		}
	default:
		t.Fatal("no Retrying event")
	}
}
