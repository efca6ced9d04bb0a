package envelope_test

import (
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
)

const poolsConfig = `pools:
  thinking: [anthropic/claude-think, anthropic/claude-test]
  fast: [anthropic/claude-fast]
`

func TestModels(t *testing.T) {
	t.Parallel()
	t.Run("status without pools", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer()
		defer srv.Close()
		b, _ := setup(t, srv)
		b.Send(`{"type":"models","action":"status"}`)
		r := b.Next(typ("models_response"))
		if !r.P.OK || r.Seq != 0 || !strings.Contains(r.P.Status, "Model: anthropic/claude-test\n") ||
			!strings.Contains(r.P.Status, "Model pool: none") || !strings.Contains(r.P.Status, "no pools configured") {
			t.Fatalf("models_response %s", r.raw)
		}
		b.Close()
	})
	t.Run("status lists pools in order", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer()
		defer srv.Close()
		b, _ := setupFiles(t, srv, map[string]string{".arbor/config.yaml": poolsConfig})
		b.Send(`{"type":"models","action":"status"}`)
		r := b.Next(typ("models_response"))
		want := "Pools:\n  fast: anthropic/claude-fast\n  thinking: anthropic/claude-think, anthropic/claude-test\n"
		if !r.P.OK || !strings.HasSuffix(r.P.Status, want) {
			t.Fatalf("status %q, want suffix %q", r.P.Status, want)
		}
		b.Close()
	})
	t.Run("set pool switches the model", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer(llmtest.Turn{Text: "thought"})
		defer srv.Close()
		b, _ := setupFiles(t, srv, map[string]string{".arbor/config.yaml": poolsConfig})
		b.Send(`{"type":"models","action":"set_current_model_pool","pool":"thinking"}`)
		r := b.Next(typ("models_response"))
		if !r.P.OK || !strings.Contains(r.P.Message, "thinking") ||
			!strings.Contains(r.P.Status, "Model: anthropic/claude-think\nModel pool: thinking\n") {
			t.Fatalf("models_response %s", r.raw)
		}
		if idle := b.Next(typ("idle")); !idle.P.Suppress || idle.P.LastOutcome != "completed" {
			t.Fatalf("the switch's idle %s", idle.raw)
		}
		b.Send(`{"type":"send","content":"think"}`)
		b.Next(typ("idle"))
		if reqs := srv.Requests(); len(reqs) != 1 || reqs[0].Model != "claude-think" {
			t.Fatalf("model requests %+v", reqs)
		}
		b.Close()
		b.checkSeq()
	})
	t.Run("unknown pool and action", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer()
		defer srv.Close()
		b, _ := setupFiles(t, srv, map[string]string{".arbor/config.yaml": poolsConfig})
		b.Send(`{"type":"models","action":"set_current_model_pool","pool":"huge"}`)
		if r := b.Next(typ("models_response")); r.P.OK || !strings.Contains(r.P.Message, `"huge"`) {
			t.Fatalf("unknown pool %s", r.raw)
		}
		b.Send(`{"type":"models","action":"explode"}`)
		if r := b.Next(typ("models_response")); r.P.OK || !strings.Contains(r.P.Message, `"explode"`) {
			t.Fatalf("unknown action %s", r.raw)
		}
		b.Send(`{"type":"models","action":"status"}`)
		if r := b.Next(typ("models_response")); !strings.Contains(r.P.Status, "Model pool: none") {
			t.Fatalf("a failed switch changed the pool: %s", r.raw)
		}
		b.Close()
	})
}
