package envelope_test

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/protocol/envelope"
	"github.com/arbor-run/arbor/internal/testutil"
)

// TestResumeTakesTheGivenModel: a session resumed (-r) with --model works
// on that model, as stream-json's does; before, the stored session's model
// was used and the flag ignored (and a resume whose stored model no longer
// worked failed however the flag was set).
func TestResumeTakesTheGivenModel(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(llmtest.Turn{Text: "first"}, llmtest.Turn{Text: "second"})
	defer srv.Close()
	a, _, ws := openApp(t, srv, nil)
	b, ready := serveApp(t, a, ws)
	b.Send(`{"type":"send","content":"hi"}`)
	b.Next(typ("idle"))
	b.Close()

	serve := func(in io.Reader, w, diag io.Writer) error {
		return envelope.Serve(context.Background(), a, in, w, diag, envelope.Options{Resume: ready.P.SessionID, Model: "anthropic/claude-other"})
	}
	r := &bundle{Conn: testutil.Serve(t, serve, decodeOut), t: t, ws: ws}
	if first := r.Next(func(out) bool { return true }); first.Type != "ready" || first.P.SessionID != ready.P.SessionID {
		t.Fatalf("resumed: %s", first.raw)
	}
	r.Send(`{"type":"models","action":"status"}`)
	if m := r.Next(typ("models_response")); !strings.Contains(m.P.Status, "Model: anthropic/claude-other\n") {
		t.Fatalf("the resumed session's model: %s", m.raw)
	}
	r.Send(`{"type":"send","content":"again"}`)
	r.Next(typ("idle"))
	r.Close()
	if reqs := srv.Requests(); len(reqs) != 2 || reqs[0].Model != "claude-test" || reqs[1].Model != "claude-other" {
		t.Fatalf("model requests: %d, want claude-test then claude-other", len(reqs))
	}
}
