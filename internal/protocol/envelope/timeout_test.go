package envelope_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
)

// TestInteractionTimeouts: question_timeout and approval_timeout from the
// project configuration give requests a deadline; a question nobody
// answers in time is closed as no_response, an approval as denied.
func TestInteractionTimeouts(t *testing.T) {
	t.Parallel()
	write := llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "write_file", Input: map[string]any{"path": "x.txt", "content": "x"}}}}
	srv := llmtest.NewServer(askTurn(), llmtest.Turn{Text: "no answer", Expect: "declined"},
		write, llmtest.Turn{Text: "not written", Expect: "denied"})
	defer srv.Close()
	b, _ := setupFiles(t, srv, map[string]string{".arbor/config.yaml": "question_timeout: 50ms\napproval_timeout: 40ms\n"})

	b.Send(`{"type":"send","content":"pick"}`)
	q := b.Next(typ("question_request"))
	var p struct {
		Deadline *time.Time `json:"deadline"`
	}
	if err := decode(q, &p); err != nil || p.Deadline == nil || time.Until(*p.Deadline) > time.Minute {
		t.Fatalf("question_request without a near deadline: %s", q.raw)
	}
	if r := b.Next(typ("question_resolved")); r.P.Reason != "no_response" || r.P.RequestID != q.P.RequestID {
		t.Fatalf("question_resolved %s", r.raw)
	}
	b.Next(typ("idle"))

	b.Send(`{"type":"send","content":"write it"}`)
	c := b.Next(typ("confirm_request"))
	var cp struct {
		TimeoutMS int64 `json:"timeout_ms"`
	}
	if err := decode(c, &cp); err != nil || cp.TimeoutMS != 40 {
		t.Fatalf("confirm_request timeout_ms: %s", c.raw)
	}
	if m := b.Next(typ("assistant_message")); m.P.Text != "not written" {
		t.Fatalf("after the approval expired: %s", m.raw)
	}
	b.Next(typ("idle"))
	b.Close()
	b.checkSeq()
}

// decode reads an envelope's payload into v.
func decode(o out, v any) error { return json.Unmarshal(o.Payload, v) }
