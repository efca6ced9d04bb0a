package envelope_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
)

const planText = "1. Write main.go\n2. Run the tests"

func handoffTurn(expect string) llmtest.Turn {
	return llmtest.Turn{Expect: expect, ToolCalls: []llmtest.ToolCall{{ID: "toolu_handoff1", Name: "handoff",
		Input: map[string]any{"plan": planText}}}}
}

// handoffReq is a handoff_request payload.
type handoffReq struct {
	RequestID string `json:"request_id"`
	PlanPath  string `json:"plan_path"`
	PlanText  string `json:"plan_text"`
	PlanError string `json:"plan_error"`
	Agents    []struct {
		Name             string   `json:"name"`
		Default          bool     `json:"default"`
		ModelPools       []string `json:"model_pools"`
		CurrentModelPool string   `json:"current_model_pool"`
	} `json:"agents"`
}

// setupHandoff switches to the planner role and sends "plan it", whose
// scripted turn calls handoff; it returns the handoff_request.
func setupHandoff(t *testing.T, turns ...llmtest.Turn) (*bundle, *llmtest.Server, out) {
	t.Helper()
	srv := llmtest.NewServer(append([]llmtest.Turn{handoffTurn("plan it")}, turns...)...)
	t.Cleanup(srv.Close)
	b, _ := setupFiles(t, srv, roleFiles)
	b.Send(`{"type":"role","action":"set","role":"planner"}`)
	if r := b.Next(typ("role_response")); !r.P.OK {
		t.Fatalf("role set: %s", r.raw)
	}
	b.Send(sendText("plan it"))
	req := b.Next(typ("handoff_request"))
	if n := b.Next(typ("notification")); n.P.Reason != "user_input_required" {
		t.Fatalf("notification %s", n.raw)
	}
	waitNotBusy(b)
	return b, srv, req
}

// waitNotBusy asks for status until the planner's turn has ended: no idle
// is sent while the handoff waits for a decision, so status is the signal.
func waitNotBusy(b *bundle) {
	b.t.Helper()
	for range 10000 {
		if !statusOf(b).P.Busy {
			return
		}
	}
	b.t.Fatal("the planner's turn never ended")
}

func statusOf(b *bundle) out {
	b.t.Helper()
	b.Send(`{"type":"status"}`)
	return b.Next(typ("status_response"))
}

func TestHandoffRequest(t *testing.T) {
	t.Parallel()
	b, srv, req := setupHandoff(t)
	var p handoffReq
	if err := json.Unmarshal(req.Payload, &p); err != nil {
		t.Fatal(err)
	}
	if p.RequestID != "handoff-1" || p.PlanText != planText || p.PlanError != "" || req.Seq == 0 ||
		!strings.HasPrefix(p.PlanPath, b.ws+"/.arbor/plans/") || !strings.HasSuffix(p.PlanPath, "-1.md") {
		t.Fatalf("handoff_request %s", req.raw)
	}
	if len(p.Agents) != 1 || p.Agents[0].Name != "builder" || !p.Agents[0].Default || p.Agents[0].ModelPools == nil {
		t.Fatalf("agents %s", req.raw)
	}
	saved, err := os.ReadFile(p.PlanPath)
	if err != nil || string(saved) != planText {
		t.Fatalf("saved plan %q, %v", saved, err)
	}
	st := statusOf(b)
	var pending handoffReq
	if err := json.Unmarshal(st.P.PendingHandoff, &pending); err != nil || pending.RequestID != "handoff-1" {
		t.Fatalf("status %s", st.raw)
	}
	if reqs := srv.Requests(); len(reqs) != 1 {
		t.Fatalf("%d model requests, want 1: handoff ends the turn", len(reqs))
	}
	b.Close()
	b.checkSeq()
}

func TestHandoffResolve(t *testing.T) {
	t.Parallel()
	t.Run("accept runs the plan in a new builder session", func(t *testing.T) {
		t.Parallel()
		b, srv, _ := setupHandoff(t, llmtest.Turn{Text: "building", Expect: "Execute this plan"})
		planner := statusOf(b).P.SessionID
		b.Send(`{"type":"handoff","request_id":"handoff-1","action":"accept","agent":"builder"}`)
		sw := b.Next(typ("session_switched"))
		if sw.P.SessionID == "" || sw.P.SessionID == planner {
			t.Fatalf("session_switched %s", sw.raw)
		}
		b.Next(typ("idle"))
		st := statusOf(b)
		if string(st.P.PendingHandoff) != "null" || st.P.CurrentRole != "builder" || st.P.SessionID != sw.P.SessionID {
			t.Fatalf("status %s", st.raw)
		}
		reqs := srv.Requests()
		if len(reqs) != 2 || len(reqs[1].Messages) != 1 {
			t.Fatalf("%d requests; want the plan as the new session's first message", len(reqs))
		}
		if got := reqs[1].LastUserText(); !strings.HasPrefix(got, "Execute this plan (saved at "+b.ws+"/.arbor/plans/") ||
			!strings.HasSuffix(got, "):\n\n"+planText) {
			t.Fatalf("builder request %q", got)
		}
		b.Close()
		b.checkSeq()
	})
	t.Run("deny continues the planner", func(t *testing.T) {
		t.Parallel()
		b, srv, _ := setupHandoff(t, llmtest.Turn{Text: "revising", Expect: "rejected the plan"})
		planner := statusOf(b).P.SessionID
		b.Send(`{"type":"handoff","request_id":"handoff-1","action":"deny","deny_reason":"add release steps"}`)
		b.Next(typ("idle"))
		if st := statusOf(b); string(st.P.PendingHandoff) != "null" || st.P.SessionID != planner || st.P.CurrentRole != "planner" {
			t.Fatalf("status %s", st.raw)
		}
		reqs := srv.Requests()
		if len(reqs) != 2 || !strings.HasSuffix(reqs[1].LastUserText(), "The user rejected the plan: add release steps") {
			t.Fatalf("%d planner requests, last user text %q", len(reqs), reqs[len(reqs)-1].LastUserText())
		}
		b.Close()
	})
	t.Run("cancel closes it", func(t *testing.T) {
		t.Parallel()
		b, srv, _ := setupHandoff(t)
		before := statusOf(b)
		b.Send(`{"type":"handoff","request_id":"handoff-1","action":"cancel"}`)
		// The idle held back while the handoff waited comes now.
		if idle := b.Next(typ("idle")); idle.P.LastOutcome != "completed" {
			t.Fatalf("idle after cancel %s", idle.raw)
		}
		after := statusOf(b)
		if string(after.P.PendingHandoff) != "null" || after.Seq <= before.Seq+1 {
			t.Fatalf("status %s after %s", after.raw, before.raw)
		}
		b.Send(`{"type":"handoff","request_id":"handoff-1","action":"accept"}`)
		if e := b.Next(typ("error")); e.P.Code != "unknown_request" {
			t.Fatalf("second resolution %s", e.raw)
		}
		b.Close()
		if n := len(srv.Requests()); n != 1 {
			t.Fatalf("%d model requests after cancel, want 1", n)
		}
	})
	t.Run("stale id and bad commands touch nothing", func(t *testing.T) {
		t.Parallel()
		b, _, _ := setupHandoff(t)
		for _, tc := range []struct{ line, code string }{
			{`{"type":"handoff","request_id":"handoff-7","action":"accept"}`, "unknown_request"},
			{`{"type":"handoff","request_id":"handoff-1","action":"explode"}`, "invalid_command"},
			{`{"type":"handoff","request_id":"handoff-1","agent":"ghost"}`, "invalid_command"},
			{`{"type":"handoff","request_id":"handoff-1","pool":"nope"}`, "invalid_command"},
		} {
			b.Send(tc.line)
			if e := b.Next(typ("error")); e.P.Code != tc.code {
				t.Fatalf("%s: %s", tc.line, e.raw)
			}
		}
		if st := statusOf(b); !strings.Contains(string(st.P.PendingHandoff), `"handoff-1"`) {
			t.Fatalf("status %s", st.raw)
		}
		b.Close()
	})
}

func TestHandoffSuperseded(t *testing.T) {
	t.Parallel()
	t.Run("by send", func(t *testing.T) {
		t.Parallel()
		b, srv, _ := setupHandoff(t, llmtest.Turn{Text: "ok", Expect: "something else"})
		b.Send(sendText("something else"))
		if c := b.Next(typ("handoff_cancelled")); c.P.RequestID != "handoff-1" || c.P.Reason != "superseded" || c.Seq == 0 {
			t.Fatalf("handoff_cancelled %s", c.raw)
		}
		b.Next(typ("idle"))
		if st := statusOf(b); string(st.P.PendingHandoff) != "null" {
			t.Fatalf("status %s", st.raw)
		}
		b.Close()
		b.checkSeq()
		if n := len(srv.Requests()); n != 2 {
			t.Fatalf("%d model requests, want 2", n)
		}
	})
	t.Run("by /new", func(t *testing.T) {
		t.Parallel()
		b, _, _ := setupHandoff(t)
		b.Send(sendText("/new"))
		if c := b.Next(typ("handoff_cancelled")); c.P.RequestID != "handoff-1" || c.P.Reason != "superseded" {
			t.Fatalf("handoff_cancelled %s", c.raw)
		}
		b.Next(typ("session_switched"))
		b.Close()
	})
}

func TestHandoffRoleSetRejectedWhilePending(t *testing.T) {
	t.Parallel()
	b, _, _ := setupHandoff(t)
	b.Send(`{"type":"role","action":"set","role":"builder"}`)
	if r := b.Next(typ("role_response")); r.P.OK || r.P.Message != "resolve the pending handoff before switching role" {
		t.Fatalf("role_response %s", r.raw)
	}
	if st := statusOf(b); st.P.CurrentRole != "planner" {
		t.Fatalf("status %s", st.raw)
	}
	b.Close()
}

func TestHandoffRefusedOutsidePlanner(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(handoffTurn("plan it"), llmtest.Turn{Text: "ok"})
	defer srv.Close()
	b, _ := setupFiles(t, srv, roleFiles)
	b.Send(sendText("plan it"))
	b.Next(typ("idle"))
	b.Close()
	for _, o := range b.All {
		if o.Type == "handoff_request" {
			t.Fatalf("a builder's handoff was published: %s", o.raw)
		}
	}
	reqs := srv.Requests()
	if len(reqs) != 2 || !strings.Contains(reqs[1].Messages[len(reqs[1].Messages)-1].Parts[0].ToolResult.Content, "handoff is only available to the planner role") {
		t.Fatalf("%d requests", len(reqs))
	}
}
