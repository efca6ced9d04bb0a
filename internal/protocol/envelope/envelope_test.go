package envelope_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
)

func TestReadyStatusSendIdle(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(llmtest.Turn{Text: "This project is small.", Expect: "Explain"})
	defer srv.Close()
	b, ready := setup(t, srv)

	b.Send(`{"type":"status"}`)
	st := b.Next(typ("status_response"))
	if st.Seq == 0 || st.P.SessionID != ready.P.SessionID || st.P.Busy || string(st.P.PendingConfirm) != "null" {
		t.Fatalf("status %s", st.raw)
	}
	for _, field := range []string{`"pending_handoff":null`, `"current_role":"builder"`, `"running_jobs":0`, `"worktree_id":""`, `"generation":0`} {
		if !strings.Contains(st.raw, field) {
			t.Fatalf("status lacks %s: %s", field, st.raw)
		}
	}
	b.Send(`{"type":"send","content":"Explain this project without changing files."}`)
	if a := b.Next(typ("activity")); a.P.Type != "preparing" {
		t.Fatalf("first activity %s", a.raw)
	}
	if m := b.Next(typ("assistant_message")); m.P.Text != "This project is small." {
		t.Fatalf("assistant_message %s", m.raw)
	}
	idle := b.Next(typ("idle"))
	if idle.P.LastOutcome != "completed" || idle.P.Suppress {
		t.Fatalf("idle %s", idle.raw)
	}
	b.Send(`{"type":"status"}`)
	if st := b.Next(typ("status_response")); st.P.LastOutcome != "completed" || st.P.Busy || st.Seq <= idle.Seq {
		t.Fatalf("status after idle %s", st.raw)
	}
	b.Close()
	b.checkSeq()
}

func TestSubscribeFilters(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(llmtest.Turn{Text: "hello there"})
	defer srv.Close()
	b, _ := setup(t, srv)
	b.Send(`{"type":"subscribe","events":["nonsense"]}`)
	if e := b.Next(typ("error")); e.P.Code != "unknown_event" {
		t.Fatalf("unknown event %s", e.raw)
	}
	b.Send(`{"type":"subscribe","events":["idle"]}`)
	if r := b.Next(typ("subscribe_response")); len(r.P.Events) != 1 || r.P.Events[0] != "idle" {
		t.Fatalf("subscribe_response %s", r.raw)
	}
	b.Send(`{"type":"send","content":"hi"}`)
	if o := b.Next(func(out) bool { return true }); o.Type != "idle" {
		t.Fatalf("unsubscribed event passed the filter: %s", o.raw)
	}
	b.Close()
	b.checkSeq()
}

// TestSeqWithInterleavedCommands spams status and local_shell while a turn
// streams: pushes come from the agent's goroutine, shell results from
// theirs and status responses from the reader.
func TestSeqWithInterleavedCommands(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(llmtest.Turn{Text: strings.Repeat("word ", 300)})
	defer srv.Close()
	b, _ := setup(t, srv)
	b.Send(`{"type":"send","content":"talk a lot"}`)
	const n = 40
	for range n {
		b.Send(`{"type":"status"}`, `{"type":"local_shell","command":"echo x"}`)
	}
	b.Next(typ("idle"))
	b.Close()
	b.checkSeq()
	count := func(typ string) int {
		c := 0
		for _, o := range b.All {
			if o.Type == typ {
				c++
			}
		}
		return c
	}
	if s, l := count("status_response"), count("local_shell_result"); s != n || l != n {
		t.Fatalf("%d status_response, %d local_shell_result; want %d each", s, l, n)
	}
}

func writeTurns(names ...string) []llmtest.Turn {
	var turns []llmtest.Turn
	for _, name := range names {
		turns = append(turns, llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "write_file", Input: map[string]any{"path": name, "content": "x"}}}})
	}
	return append(turns, llmtest.Turn{Text: "done"})
}

func TestConfirm(t *testing.T) {
	t.Parallel()
	t.Run("allow", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer(writeTurns("a.txt")...)
		defer srv.Close()
		b, _ := setup(t, srv)
		b.Send(`{"type":"send","content":"write"}`)
		req := b.Next(typ("confirm_request"))
		if req.P.ToolName != "write_file" || req.P.RequestID == "" {
			t.Fatalf("confirm_request %s", req.raw)
		}
		b.Next(typ("notification"))
		b.Send(`{"type":"status"}`)
		if st := b.Next(typ("status_response")); !strings.Contains(string(st.P.PendingConfirm), req.P.RequestID) {
			t.Fatalf("status while pending %s", st.raw)
		}
		b.Send(cmd(map[string]any{"type": "confirm", "request_id": req.P.RequestID, "action": "allow"}))
		if idle := b.Next(typ("idle")); idle.P.LastOutcome != "completed" {
			t.Fatalf("idle %s", idle.raw)
		}
		if _, err := os.Stat(filepath.Join(b.ws, "a.txt")); err != nil {
			t.Fatal(err)
		}
		b.Send(`{"type":"status"}`)
		if st := b.Next(typ("status_response")); string(st.P.PendingConfirm) != "null" {
			t.Fatalf("status after %s", st.raw)
		}
		b.Close()
		b.checkSeq()
	})
	t.Run("deny", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer(writeTurns("a.txt")...)
		defer srv.Close()
		b, _ := setup(t, srv)
		b.Send(`{"type":"send","content":"write"}`)
		req := b.Next(typ("confirm_request"))
		b.Send(cmd(map[string]any{"type": "confirm", "request_id": req.P.RequestID, "action": "deny", "deny_reason": "not now"}))
		b.Next(typ("idle"))
		if _, err := os.Stat(filepath.Join(b.ws, "a.txt")); !os.IsNotExist(err) {
			t.Fatalf("denied write happened: %v", err)
		}
		if reqs := srv.Requests(); !strings.Contains(reqs[len(reqs)-1].LastUserText(), "not now") {
			t.Fatalf("deny reason not shown to the model: %q", reqs[len(reqs)-1].LastUserText())
		}
		b.Close()
	})
	t.Run("rule in session scope", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer(writeTurns("a.txt", "b.txt")...)
		defer srv.Close()
		b, _ := setup(t, srv)
		b.Send(`{"type":"send","content":"write twice"}`)
		req := b.Next(typ("confirm_request"))
		b.Send(cmd(map[string]any{"type": "confirm", "request_id": req.P.RequestID, "action": "allow",
			"rule_pattern": "write_file", "rule_scope": "session"}))
		b.Next(typ("idle"))
		confirms := 0
		for _, o := range b.All {
			if o.Type == "confirm_request" {
				confirms++
			}
		}
		if confirms != 1 {
			t.Fatalf("%d confirm requests; the rule should allow the second write", confirms)
		}
		if _, err := os.Stat(filepath.Join(b.ws, "b.txt")); err != nil {
			t.Fatal(err)
		}
		b.Close()
	})
	t.Run("unknown id", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer()
		defer srv.Close()
		b, _ := setup(t, srv)
		b.Send(`{"type":"confirm","request_id":"req_99","action":"allow"}`)
		if e := b.Next(typ("error")); e.P.Code != "unknown_request" {
			t.Fatalf("error %s", e.raw)
		}
		b.Close()
	})
}

func askTurn() llmtest.Turn {
	return llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "ask_user", Input: map[string]any{"question": "Which color?", "options": []any{"red", "blue"}}}}}
}

func TestQuestion(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, reply, reason, expect string
	}{
		{"answered", `"answers":["blue"],"reason":"answered"`, "answered", "blue"},
		{"declined", `"answers":[],"reason":"declined"`, "declined", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.NewServer(askTurn(), llmtest.Turn{Text: "ok", Expect: tc.expect})
			defer srv.Close()
			b, _ := setup(t, srv)
			b.Send(`{"type":"send","content":"pick"}`)
			q := b.Next(typ("question_request"))
			if q.P.Question != "Which color?" || q.P.ToolName != "ask_user" {
				t.Fatalf("question_request %s", q.raw)
			}
			b.Send(`{"type":"question","request_id":"` + q.P.RequestID + `","reason":"bogus"}`)
			if e := b.Next(typ("error")); e.P.Code != "invalid_command" {
				t.Fatalf("bad reason %s", e.raw)
			}
			b.Send(`{"type":"question","request_id":"` + q.P.RequestID + `",` + tc.reply + `}`)
			if r := b.Next(typ("question_resolved")); r.P.Reason != tc.reason || r.P.RequestID != q.P.RequestID {
				t.Fatalf("question_resolved %s", r.raw)
			}
			if idle := b.Next(typ("idle")); idle.P.LastOutcome != "completed" {
				t.Fatalf("idle %s", idle.raw)
			}
			b.Send(`{"type":"question","request_id":"` + q.P.RequestID + `","answers":["red"],"reason":"answered"}`)
			if e := b.Next(typ("error")); e.P.Code != "unknown_request" {
				t.Fatalf("late answer %s", e.raw)
			}
			b.Close()
			b.checkSeq()
		})
	}
	t.Run("superseded by send", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer(askTurn(), llmtest.Turn{Text: "fine"}, llmtest.Turn{Text: "next", Expect: "never mind"})
		defer srv.Close()
		b, _ := setup(t, srv)
		b.Send(`{"type":"send","content":"pick"}`)
		q := b.Next(typ("question_request"))
		b.Send(`{"type":"send","content":"never mind"}`)
		if r := b.Next(typ("question_resolved")); r.P.Reason != "superseded" || r.P.RequestID != q.P.RequestID {
			t.Fatalf("question_resolved %s", r.raw)
		}
		if idle := b.Next(typ("idle")); idle.P.LastOutcome != "completed" {
			t.Fatalf("idle %s", idle.raw)
		}
		b.Send(`{"type":"status"}`)
		if st := b.Next(typ("status_response")); string(st.P.PendingQuestion) != "null" || st.P.Busy {
			t.Fatalf("status %s", st.raw)
		}
		if n := len(srv.Requests()); n != 3 {
			t.Fatalf("%d model requests, want 3", n)
		}
		b.Close()
		b.checkSeq()
	})
}

func TestBadInputKeepsServing(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer()
	defer srv.Close()
	b, _ := setup(t, srv)
	b.Send(`{"type":"send","content":"`+strings.Repeat("a", 1<<20+10)+`"}`, `{not json`, `{"type":"teleport"}`, `{"type":"status"}`)
	for _, code := range []string{"stdin_line_too_long", "invalid_json", "unknown_command"} {
		if e := b.Next(typ("error")); e.P.Code != code || e.Seq != 0 {
			t.Fatalf("want %s, got %s", code, e.raw)
		}
	}
	if st := b.Next(typ("status_response")); st.Seq == 0 {
		t.Fatalf("status %s", st.raw)
	}
	b.Close()
}

func TestCancelMidStream(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(
		llmtest.Turn{Text: "one two three four", Fault: &llmtest.Fault{Kind: llmtest.FaultStall, AfterEvents: 4}},
		llmtest.Turn{Text: "after the cancel"},
	)
	defer srv.Close()
	b, _ := setup(t, srv)
	b.Send(`{"type":"send","content":"talk"}`)
	b.Next(func(o out) bool { return o.Type == "activity" && o.P.Type == "streaming" })
	b.Send(`{"type":"cancel"}`)
	if idle := b.Next(typ("idle")); idle.P.LastOutcome != "cancelled" {
		t.Fatalf("idle %s", idle.raw)
	}
	b.Send(`{"type":"send","content":"again"}`)
	if idle := b.Next(typ("idle")); idle.P.LastOutcome != "completed" {
		t.Fatalf("idle %s", idle.raw)
	}
	b.Close()
	b.checkSeq()
}

// TestLocalShellGetsSettingsEnv: a person's local_shell command gets the
// project settings' env, as the agents' commands do (and as Claude
// Code's own shell commands, run in its process's environment, do).
func TestLocalShellGetsSettingsEnv(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer()
	defer srv.Close()
	b, _ := setupFiles(t, srv, map[string]string{".claude/settings.json": `{"env": {"PROJECT_ENV_MARKER": "env-9d2"}}`})
	b.Send(`{"type":"local_shell","command":"echo marker=$PROJECT_ENV_MARKER"}`)
	if r := b.Next(typ("local_shell_result")); r.P.Failed || r.P.Output != "marker=env-9d2\n" {
		t.Fatalf("result %s", r.raw)
	}
	b.Close()
	b.checkSeq()
}

func TestLocalShell(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer()
	defer srv.Close()
	b, _ := setup(t, srv)
	// The command waits for a file the test creates once a status was
	// answered meanwhile.
	b.Send(`{"type":"local_shell","command":"while [ ! -e go ]; do sleep 0.01; done; echo out; echo err >&2"}`)
	b.Send(`{"type":"status"}`)
	b.Next(typ("status_response"))
	if err := os.WriteFile(filepath.Join(b.ws, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r := b.Next(typ("local_shell_result"))
	if r.P.Failed || r.P.Output != "out\nerr\n" {
		t.Fatalf("result %s", r.raw)
	}
	// cancel stops a running command.
	b.Send(`{"type":"local_shell","command":"sleep 600"}`, `{"type":"cancel"}`)
	if r := b.Next(typ("local_shell_result")); !r.P.Failed || !strings.Contains(r.raw, `"error":"cancelled"`) {
		t.Fatalf("cancelled command: %s", r.raw)
	}
	b.Send(`{"type":"local_shell","content":"head -c 70000 /dev/zero | tr '\\0' a; exit 3"}`)
	r = b.Next(typ("local_shell_result"))
	if !r.P.Failed || !strings.Contains(r.P.Output, "[… 4464 bytes truncated …]") {
		t.Fatalf("result %.200s", r.raw[len(r.raw)-200:])
	}
	b.Send(`{"type":"local_shell"}`)
	if e := b.Next(typ("error")); e.P.Code != "invalid_command" {
		t.Fatalf("empty command %s", e.raw)
	}
	b.Close()
	b.checkSeq()
}

// TestQuestionHeaderAndDetails: ask_user's header and option descriptions
// reach question_request as Chord sends them (option_details: one string
// per option, "" where the model gave none).
func TestQuestionHeaderAndDetails(t *testing.T) {
	t.Parallel()
	ask := llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "ask_user", Input: map[string]any{
		"question": "Which color?", "header": "Colour", "options": []any{"red", "blue"},
		"option_descriptions": []any{"warm"}}}}}
	srv := llmtest.NewServer(ask, llmtest.Turn{Text: "ok", Expect: "red"})
	defer srv.Close()
	b, _ := setup(t, srv)
	b.Send(`{"type":"send","content":"pick"}`)
	q := b.Next(typ("question_request"))
	var p struct {
		Header        string   `json:"header"`
		OptionDetails []string `json:"option_details"`
	}
	if err := json.Unmarshal(q.Payload, &p); err != nil {
		t.Fatal(err)
	}
	if p.Header != "Colour" || len(p.OptionDetails) != 2 || p.OptionDetails[0] != "warm" || p.OptionDetails[1] != "" {
		t.Fatalf("question_request %s", q.raw)
	}
	b.Send(`{"type":"question","request_id":"` + q.P.RequestID + `","answers":["red"],"reason":"answered"}`)
	b.Next(typ("idle"))
	b.Close()
}
