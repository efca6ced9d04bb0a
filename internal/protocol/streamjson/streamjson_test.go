package streamjson_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/protocol/streamjson"
)

func TestHandshakeTurnAndBadInput(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(llmtest.Turn{Text: "Hello there friend", Thinking: "greet them"})
	defer srv.Close()
	b := setup(t, srv, setupOpts{opts: streamjson.Options{PartialMessages: true}})

	b.Send(initialize)
	resp := b.Next(typ("control_response", ""))
	if resp.Response.Subtype != "success" || resp.Response.RequestID != "init-1" {
		t.Fatalf("initialize response %s", resp.raw)
	}
	mustContain(t, string(resp.Response.Response), `"can_handle_can_use_tool":true`)
	mustContain(t, string(resp.Response.Response), `"can_handle_host_executed_shell_tool_result"`)
	mustContain(t, string(resp.Response.Response), `"can_handle_shell_evidence_tool"`)
	initMsg := b.Next(typ("system", "init"))
	if initMsg.SessionID == "" || initMsg.Model != "anthropic/claude-test" || !strings.Contains(initMsg.raw, `"shell"`) {
		t.Fatalf("init %s", initMsg.raw)
	}

	b.Send("this is not json", `{"type":"control_request","request_id":"u-1","request":{"subtype":"teleport"}}`, `{"type":"mystery"}`)
	bad := b.Next(typ("control_response", ""))
	if bad.Response.Subtype != "error" || bad.Response.RequestID != "u-1" || !strings.Contains(bad.Response.Error, "teleport") {
		t.Fatalf("unknown subtype answer %s", bad.raw)
	}

	b.Send(user("hi"))
	var deltas []string
	for {
		o := b.Next(func(o out) bool { return o.Type == "stream_event" || o.Type == "result" })
		if o.Type == "result" {
			if o.Subtype != "success" || o.IsError || o.Result != "Hello there friend" || o.SessionID != initMsg.SessionID {
				t.Fatalf("result %s", o.raw)
			}
			mustContain(t, o.raw, `"num_turns":1`)
			mustContain(t, o.raw, `"usage":{"input_tokens":`)
			break
		}
		deltas = append(deltas, o.Event.Subtype+":"+o.Event.Content)
	}
	if strings.Join(deltas, "|") != "thinking_delta:greet |thinking_delta:them|text_delta:Hello |text_delta:there |text_delta:friend" {
		t.Fatalf("deltas %q", deltas)
	}
	if b.count(typ("assistant", "")) != 1 {
		t.Fatal("want one assistant message")
	}
	b.Close()
	mustContain(t, b.Diag.String(), "ignoring input line 2")
	mustContain(t, b.Diag.String(), `unknown message type "mystery"`)
}

func TestApprovals(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(
		llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "write_file", Input: map[string]any{"path": "a.txt", "content": "original"}}}},
		llmtest.Turn{Text: "wrote a"},
		llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "write_file", Input: map[string]any{"path": "b.txt", "content": "b"}}}},
		llmtest.Turn{Text: "b refused", Expect: "not b"},
	)
	defer srv.Close()
	b := setup(t, srv, setupOpts{})
	b.Send(user("write a"))
	req := b.Next(typ("control_request", "can_use_tool"))
	if req.Request.ToolName != "write_file" || req.Request.ToolUseID == "" || !strings.Contains(string(req.Request.ToolInput), "original") {
		t.Fatalf("can_use_tool %s", req.raw)
	}
	b.Send(`{"type":"control_response","response":{"subtype":"success","request_id":"` + req.RequestID + `","response":{"behavior":"allow","updatedInput":{"path":"a.txt","content":"edited by the client"}}}}`)
	res := b.Next(typ("result", ""))
	if res.Result != "wrote a" {
		t.Fatalf("result %s", res.raw)
	}
	if got, _ := os.ReadFile(filepath.Join(b.ws, "a.txt")); string(got) != "edited by the client" {
		t.Fatalf("a.txt = %q: updatedInput must be used", got)
	}
	tr := b.All[len(b.All)-3] // user tool_result precedes the final assistant message and the result
	if tr.Type != "user" || len(tr.Message.Content) != 1 || tr.Message.Content[0].Type != "tool_result" {
		t.Fatalf("want the tool result message, got %s", tr.raw)
	}

	b.Send(user("write b"))
	req = b.Next(typ("control_request", "can_use_tool"))
	b.Send(`{"type":"control_response","response":{"subtype":"tool_approval","request_id":"` + req.RequestID + `","response":{"behavior":"deny","message":"not b"}}}`)
	if res := b.Next(typ("result", "")); res.Result != "b refused" {
		t.Fatalf("result %s", res.raw)
	}
	if _, err := os.Stat(filepath.Join(b.ws, "b.txt")); !os.IsNotExist(err) {
		t.Fatal("denied write happened")
	}
	// A stale answer is ignored without side effects.
	b.Send(`{"type":"control_response","response":{"subtype":"success","request_id":"` + req.RequestID + `","response":{"behavior":"allow"}}}`)
	b.Close()
	mustContain(t, b.Diag.String(), "unknown request")
}

func TestAskUser(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(
		llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "ask_user", Input: map[string]any{"question": "Which color?", "options": []any{"red", "blue"}}}}},
		llmtest.Turn{Text: "blue it is", Expect: "blue"},
	)
	defer srv.Close()
	b := setup(t, srv, setupOpts{})
	b.Send(user("pick a color"))
	q := b.Next(typ("control_request", "ask_user"))
	if q.Request.Question != "Which color?" {
		t.Fatalf("ask %s", q.raw)
	}
	b.Send(`{"type":"control_response","response":{"subtype":"success","request_id":"` + q.RequestID + `","response":{"answer":"blue"}}}`)
	if res := b.Next(typ("result", "")); res.Result != "blue it is" {
		t.Fatalf("result %s", res.raw)
	}
	b.Close()
}

func TestInterruptMidStream(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(
		llmtest.Turn{Text: "one two three four", Fault: &llmtest.Fault{Kind: llmtest.FaultStall, AfterEvents: 4}},
		llmtest.Turn{Text: "after the interrupt"},
	)
	defer srv.Close()
	b := setup(t, srv, setupOpts{opts: streamjson.Options{PartialMessages: true}})
	b.Send(user("talk"))
	b.Next(typ("stream_event", ""))
	b.Send(`{"type":"control_request","request_id":"int-1","request":{"subtype":"interrupt"}}`)
	ack := b.Next(typ("control_response", ""))
	if ack.Response.Subtype != "success" || ack.Response.RequestID != "int-1" {
		t.Fatalf("interrupt ack %s", ack.raw)
	}
	res := b.Next(typ("result", ""))
	if !res.IsError || res.Subtype != "error_during_execution" || len(res.Errors) == 0 {
		t.Fatalf("interrupted result %s", res.raw)
	}
	b.Send(user("again"))
	if res := b.Next(typ("result", "")); res.Result != "after the interrupt" || res.IsError {
		t.Fatalf("next turn %s", res.raw)
	}
	b.Close()
}

func TestSwitchModelAndConfigOverride(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(
		llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "write_file", Input: map[string]any{"path": "t.txt", "content": "trusted"}}}},
		llmtest.Turn{Text: "done"},
	)
	defer srv.Close()
	b := setup(t, srv, setupOpts{})
	b.Send(`{"type":"control_request","request_id":"m-1","request":{"subtype":"switch_model","model":"openai/gpt-test"}}`)
	if r := b.Next(typ("control_response", "")); r.Response.Subtype != "success" {
		t.Fatalf("switch_model %s", r.raw)
	}
	if sw := b.Next(typ("system", "model_switched")); sw.Model != "openai/gpt-test" {
		t.Fatalf("model_switched %s", sw.raw)
	}
	b.Send(`{"type":"control_request","request_id":"c-1","request":{"subtype":"config_override","approval_mode":"trust"}}`)
	if r := b.Next(typ("control_response", "")); r.Response.Subtype != "success" {
		t.Fatalf("config_override %s", r.raw)
	}
	b.Send(`{"type":"control_request","request_id":"m-2","request":{"subtype":"switch_model","model":"nope/none"}}`)
	if r := b.Next(typ("control_response", "")); r.Response.Subtype != "error" {
		t.Fatalf("a bad model must be refused: %s", r.raw)
	}
	b.Send(user("write t"))
	res := b.Next(typ("result", ""))
	if res.Result != "done" || b.count(typ("control_request", "can_use_tool")) != 0 {
		t.Fatalf("trust mode should not ask: %s", res.raw)
	}
	for _, r := range srv.Requests() {
		if r.Format != "openai" || r.Model != "gpt-test" {
			t.Fatalf("request went to %s %s after the switch", r.Format, r.Model)
		}
	}
	b.Close()
}

func TestAuthFlowQueuesLines(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(llmtest.Turn{Text: "first"}, llmtest.Turn{Text: "second"})
	defer srv.Close()
	home := t.TempDir()
	cfg := filepath.Join(home, "config", "arbor", "config.yaml")
	const mine = "# my settings\n\nmax_turns: 40   # enough\n"
	if err := os.MkdirAll(filepath.Dir(cfg), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, []byte(mine), 0o644); err != nil {
		t.Fatal(err)
	}
	b := setup(t, srv, setupOpts{noKey: true, home: home})
	b.Send(user("one"))
	req := b.Next(typ("control_request", "auth_required"))
	mustContain(t, req.raw, `"reason":"not_configured"`)
	mustContain(t, req.raw, `"id":"anthropic"`)
	b.Send(user("two")) // arrives while waiting: queued, not lost
	b.Send(`{"type":"control_response","response":{"subtype":"auth_response","request_id":"auth-init","response":{"provider_id":"anthropic","values":{"api_key":"sk-from-client-123"},"persist":true}}}`)
	b.Next(typ("system", "auth_ok"))
	if r := b.Next(typ("result", "")); r.Result != "first" {
		t.Fatalf("first %s", r.raw)
	}
	if r := b.Next(typ("result", "")); r.Result != "second" {
		t.Fatalf("second %s", r.raw)
	}
	b.Close()
	if got := srv.Requests()[0].Header.Get("X-Api-Key"); got != "sk-from-client-123" {
		t.Fatalf("key sent %q", got)
	}
	fi, err := os.Stat(cfg)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("persisted config %v %v", fi, err)
	}
	body, _ := os.ReadFile(cfg)
	if want := mine + "providers:\n  anthropic:\n    api_key: \"sk-from-client-123\"\n"; string(body) != want {
		t.Fatalf("persisted config %q, want the user's lines kept and %q", body, want)
	}
	for _, o := range b.All {
		if strings.Contains(o.raw, "sk-from-client-123") {
			t.Fatalf("the key leaked into output: %s", o.raw)
		}
	}
}

func TestResume(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(llmtest.Turn{Text: "remembered: blue"}, llmtest.Turn{Text: "you said blue", Expect: "what did I say"})
	defer srv.Close()
	first := setup(t, srv, setupOpts{})
	first.Send(user("my color is blue"))
	r := first.Next(typ("result", ""))
	first.Close()

	second := setup(t, srv, setupOpts{home: first.home, opts: streamjson.Options{Resume: r.SessionID}})
	second.Send(user("what did I say"))
	init := second.Next(typ("system", "init"))
	if init.SessionID != r.SessionID {
		t.Fatalf("resumed session %q, want %q", init.SessionID, r.SessionID)
	}
	if res := second.Next(typ("result", "")); res.Result != "you said blue" {
		t.Fatalf("result %s", res.raw)
	}
	second.Close()
	msgs := srv.Requests()[1].Messages
	if len(msgs) != 3 || msgs[0].Text() != "my color is blue" {
		t.Fatalf("resumed request carries %d messages", len(msgs))
	}
}

func TestRegistry(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer()
	defer srv.Close()
	b := setup(t, srv, setupOpts{})
	b.Send(`{"type":"registry_request","request_id":"r1","domain":"tools","action":"list"}`,
		`{"type":"registry_request","request_id":"r2","domain":"tools","action":"get","params":{"name":"shell"}}`,
		`{"type":"registry_request","request_id":"r3","domain":"spells","action":"list"}`,
		`{"type":"registry_request","request_id":"r4","domain":"permissions","action":"list"}`)
	// Answers are matched by request id: the tools are the session's, so
	// the first two wait for the session runner to create it.
	var preds []func(out) bool
	for _, id := range []string{"r1", "r2", "r3", "r4"} {
		preds = append(preds, func(o out) bool { return o.Type == "registry_response" && o.RequestID == id })
	}
	got := b.NextAll(preds...)
	if !got[0].Success || !strings.Contains(got[0].raw, `"name":"read_file"`) {
		t.Fatalf("tools list %s", got[0].raw)
	}
	if !strings.Contains(got[1].raw, `"input_schema"`) {
		t.Fatalf("tools get %s", got[1].raw)
	}
	if got[2].Success || !strings.Contains(got[2].raw, "unknown domain") {
		t.Fatalf("unknown domain %s", got[2].raw)
	}
	var p struct {
		Data struct{ Mode string } `json:"data"`
	}
	_ = json.Unmarshal([]byte(got[3].raw), &p)
	if p.Data.Mode != "default" {
		t.Fatalf("permissions %s", got[3].raw)
	}
	b.Close()
}
