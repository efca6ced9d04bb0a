package streamjson_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
)

// TestRequestsResolvedElsewhereAreWithdrawn: a can_use_tool request the
// client has not answered when the turn is interrupted is withdrawn with
// a control_cancel_request naming it, as Claude Code withdraws its own
// (the SDKs abort the permission callback they run for it); a late
// answer to it is ignored, and a request the client answered is never
// withdrawn. Before, the client was left showing a prompt nobody waited
// for, and arbor kept the request until input ended.
func TestRequestsResolvedElsewhereAreWithdrawn(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(
		llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "write_file", Input: map[string]any{"path": "a.txt", "content": "a"}}}},
		llmtest.Turn{Text: "wrote a"},
		llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "write_file", Input: map[string]any{"path": "b.txt", "content": "b"}}}},
	)
	defer srv.Close()
	b := setup(t, srv, setupOpts{})
	b.Send(user("write a"))
	answered := b.Next(typ("control_request", "can_use_tool"))
	b.Send(allow(answered.RequestID))
	if res := b.Next(typ("result", "")); res.Result != "wrote a" || res.IsError {
		t.Fatalf("the approved turn: %s", res.raw)
	}
	b.Send(user("write b"))
	moot := b.Next(typ("control_request", "can_use_tool"))
	b.Send(`{"type":"control_request","request_id":"int-1","request":{"subtype":"interrupt"}}`)
	cancel := b.Next(typ("control_cancel_request", ""))
	if cancel.RequestID != moot.RequestID {
		t.Fatalf("withdrew %q, want the unanswered %q: %s", cancel.RequestID, moot.RequestID, cancel.raw)
	}
	b.Next(typ("result", ""))
	b.Send(allow(moot.RequestID)) // late: ignored
	b.Close()
	if n := b.count(typ("control_cancel_request", "")); n != 1 {
		t.Fatalf("%d requests withdrawn, want only the unanswered one", n)
	}
	if _, err := os.Stat(filepath.Join(b.ws, "b.txt")); err == nil {
		t.Fatal("the late answer to a withdrawn request wrote b.txt")
	}
	if d := b.Diag.String(); !strings.Contains(d, "unknown request") {
		t.Fatalf("the late answer was not reported as one to no request: %s", d)
	}
}
