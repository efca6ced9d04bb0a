package streamjson_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
)

// TestStillQueued: an interrupt's answer lists the uuids of the user
// messages that still wait for their turn (not the running one's), and
// they then run.
func TestStillQueued(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(
		llmtest.Turn{ToolCalls: []llmtest.ToolCall{{ID: "toolu_1", Name: "write_file", Input: map[string]any{"path": "a.txt", "content": "a"}}}},
		llmtest.Turn{Text: "second"},
	)
	defer srv.Close()
	b := setup(t, srv, setupOpts{})
	b.Send(`{"type":"user","uuid":"u-1","message":{"role":"user","content":"write a"}}`)
	b.Next(typ("control_request", "can_use_tool"))
	b.Send(`{"type":"user","uuid":"u-2","message":{"role":"user","content":"then this"}}`)
	b.Send(`{"type":"control_request","request_id":"int-1","request":{"subtype":"interrupt"}}`)
	r := b.Next(func(o out) bool { return o.Type == "control_response" && o.Response.RequestID == "int-1" })
	var body struct {
		StillQueued []string `json:"still_queued"`
	}
	if err := json.Unmarshal(r.Response.Response, &body); err != nil || strings.Join(body.StillQueued, ",") != "u-2" {
		t.Fatalf("interrupt answer %s; want still_queued [u-2]", r.raw)
	}
	if res := b.Next(typ("result", "")); !res.IsError {
		t.Fatalf("interrupted turn %s", res.raw)
	}
	if res := b.Next(typ("result", "")); res.IsError || res.Result != "second" {
		t.Fatalf("queued turn %s", res.raw)
	}
	b.Close()
}

// TestShellContextEnv: shell_context.env reaches the commands the turn's
// shell tool runs.
func TestShellContextEnv(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(
		llmtest.Turn{ToolCalls: []llmtest.ToolCall{{ID: "toolu_1", Name: "shell", Input: map[string]any{"command": "echo \"v=$ARBOR_CLIENT_VAR\""}}}},
		llmtest.Turn{Text: "ok"},
	)
	defer srv.Close()
	b := setup(t, srv, setupOpts{mode: "trust"})
	b.Send(`{"type":"user","message":{"role":"user","content":"show it"},"shell_context":{"cwd":"/tmp","env":{"ARBOR_CLIENT_VAR":"val-42"},"last_exit_code":0}}`)
	if r := b.Next(typ("result", "")); r.IsError {
		t.Fatalf("result %s", r.raw)
	}
	b.Close()
	if got := lastUserText(srv.Requests()[1]); !strings.Contains(got, "v=val-42") {
		t.Fatalf("tool result %q; want the client's variable", got)
	}
}

// TestAuthDuringInitialize: a cosh client with no usable model is asked
// for credentials during initialize (spec 001/003); system init follows
// auth_ok, then turns run with the key.
func TestAuthDuringInitialize(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(llmtest.Turn{Text: "first"})
	defer srv.Close()
	b := setup(t, srv, setupOpts{noKey: true})
	b.Send(initialize)
	b.Next(typ("control_response", "success"))
	req := b.Next(typ("control_request", "auth_required"))
	mustContain(t, req.raw, `"request_id":"auth-init"`)
	b.Send(`{"type":"control_response","response":{"subtype":"auth_response","request_id":"auth-init","response":{"provider_id":"anthropic","values":{"api_key":"sk-init-1"}}}}`)
	b.Next(typ("system", "auth_ok"))
	if init := b.Next(typ("system", "init")); init.SessionID == "" {
		t.Fatalf("init %s", init.raw)
	}
	b.Send(user("one"))
	if r := b.Next(typ("result", "")); r.Result != "first" {
		t.Fatalf("result %s", r.raw)
	}
	b.Close()
	if n := b.count(typ("control_request", "auth_required")); n != 1 {
		t.Fatalf("auth_required sent %d times, want once", n)
	}
	if got := srv.Requests()[0].Header.Get("X-Api-Key"); got != "sk-init-1" {
		t.Fatalf("key sent %q", got)
	}
}
