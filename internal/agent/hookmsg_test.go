package agent_test

import (
	"context"
	"testing"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/tool"
)

// TestCallNoticesArePublished checks a call's notices (its hooks'
// systemMessage) become HookMessage events of the session, those said
// before the call ahead of its ToolCallFinished and those said after it
// behind, redacted as its output is, and never reach the model.
func TestCallNoticesArePublished(t *testing.T) {
	t.Parallel()
	b := setup(t, calls(call("c1", "noted", `{"text":"a"}`)), text("ok"))
	noted := tool.New("noted", "A call with notices.", tool.KindRead, func(context.Context, tool.Call, echoArgs) tool.Result {
		return tool.Result{Content: "out", Notices: []tool.Notice{
			{Text: "PostToolUse:noted says: key sk-live-123456789", After: true}, {Text: "PreToolUse:noted says: checked"}}}
	})
	b.cfg.Tools, b.cfg.Secrets = tool.NewRegistry(noted), []string{"sk-live-123456789"}
	if res := agent.New(b.cfg).Send(b.ctx, llm.UserText("go")); res.Outcome != agent.OutcomeCompleted {
		t.Fatalf("result %+v", res)
	}
	var got []string
	for _, e := range b.events.all() {
		switch e := e.(type) {
		case *agent.HookMessage:
			if e.SessionID != "s1" || e.Level != "notice" {
				t.Errorf("event %+v; want session s1, level notice", e)
			}
			got = append(got, e.Text)
		case *agent.ToolCallFinished:
			got = append(got, "finished "+e.Result)
		}
	}
	want := []string{"PreToolUse:noted says: checked", "finished out", "PostToolUse:noted says: key [REDACTED]"}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("events %q; want %q", got, want)
	}
	if r := results(b.messages(t)[2]); r[0].Content != "out" {
		t.Fatalf("the model read %q", r[0].Content)
	}
}
