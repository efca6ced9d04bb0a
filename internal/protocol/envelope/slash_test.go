package envelope_test

import (
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
)

func sendText(text string) string { return cmd(map[string]any{"type": "send", "content": text}) }

func TestSlashModels(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer()
	defer srv.Close()
	b, _ := setupFiles(t, srv, map[string]string{".arbor/config.yaml": poolsConfig})
	for _, text := range []string{"/models", "/models status"} {
		b.Send(sendText(text))
		if r := b.Next(typ("models_response")); !r.P.OK || !strings.Contains(r.P.Status, "Model: anthropic/claude-test") {
			t.Fatalf("%s: %s", text, r.raw)
		}
	}
	b.Send(sendText("/models fast"))
	if r := b.Next(typ("models_response")); !r.P.OK || !strings.Contains(r.P.Status, "Model: anthropic/claude-fast\nModel pool: fast") {
		t.Fatalf("/models fast: %s", r.raw)
	}
	b.Send(sendText("/models nowhere"))
	if r := b.Next(typ("models_response")); r.P.OK {
		t.Fatalf("/models nowhere: %s", r.raw)
	}
	b.Close()
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("slash commands reached the model: %d requests", n)
	}
}

func TestSlashRole(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer()
	defer srv.Close()
	b, _ := setupFiles(t, srv, roleFiles)
	for _, text := range []string{"/role", "/role status"} {
		b.Send(sendText(text))
		if r := b.Next(typ("role_response")); !r.P.OK || r.P.Role != "builder" || len(r.P.Roles) != 4 {
			t.Fatalf("%s: %s", text, r.raw)
		}
	}
	b.Send(sendText("/role auditor"))
	if c := b.Next(typ("role_change")); c.P.Role != "auditor" {
		t.Fatalf("role_change %s", c.raw)
	}
	if r := b.Next(typ("role_response")); !r.P.OK || r.P.Role != "auditor" {
		t.Fatalf("/role auditor: %s", r.raw)
	}
	b.Send(sendText("/role auditor"))
	if r := b.Next(typ("role_response")); r.P.OK || r.P.Message != "already the active role: auditor" {
		t.Fatalf("/role auditor again: %s", r.raw)
	}
	b.Close()
	b.checkSeq()
}

func TestSlashHelpAndStats(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(llmtest.Turn{Text: "hello", Usage: llmtest.Usage{Input: 100, Output: 7}})
	defer srv.Close()
	b, ready := setup(t, srv)
	b.Send(sendText("/help"))
	help := b.Next(typ("info"))
	for _, c := range []string{"/models", "/role", "/stats", "/compact", "/new", "/resume <id>"} {
		if !strings.Contains(help.P.Message, c) || help.Seq == 0 {
			t.Fatalf("help lacks %s: %s", c, help.raw)
		}
	}
	b.Send(sendText("hi"))
	b.Next(typ("idle"))
	b.Send(sendText("/stats"))
	stats := b.Next(typ("info"))
	if !strings.Contains(stats.P.Message, "100 input, 7 output") || !strings.Contains(stats.P.Message, ready.P.SessionID) ||
		!strings.Contains(stats.P.Message, "Cost: ") {
		t.Fatalf("stats %s", stats.raw)
	}
	b.Close()
	b.checkSeq()
}

func TestSlashCompact(t *testing.T) {
	t.Parallel()
	t.Run("compacts", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer(llmtest.Turn{Text: "hello"}, llmtest.Turn{Text: "SUMMARY"})
		defer srv.Close()
		b, _ := setupFiles(t, srv, map[string]string{".arbor/config.yaml": "compaction:\n  keep_recent: 1\n"})
		b.Send(sendText("hi"))
		b.Next(typ("idle"))
		b.Send(sendText("/compact"))
		if c := b.Next(typ("compaction_status")); c.P.Status != "started" || c.P.Trigger != "manual" {
			t.Fatalf("started %s", c.raw)
		}
		if c := b.Next(typ("compaction_status")); c.P.Status != "succeeded" || c.P.Trigger != "manual" {
			t.Fatalf("finished %s", c.raw)
		}
		b.Close()
		b.checkSeq()
		if n := len(srv.Requests()); n != 2 {
			t.Fatalf("%d model requests, want the turn and the summary", n)
		}
	})
	// A project's PreCompact hook that blocks (exit 2) refuses it, as
	// Claude Code's does: skipped, saying why; no summary is asked for.
	t.Run("refused by a PreCompact hook", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer(llmtest.Turn{Text: "hello"})
		defer srv.Close()
		b, _ := setupFiles(t, srv, map[string]string{
			".claude/settings.json": `{"hooks": {"PreCompact": [{"hooks": [{"type": "command", "command": "cat >/dev/null; echo not now >&2; exit 2"}]}]}}`,
		})
		b.Send(sendText("hi"))
		b.Next(typ("idle"))
		b.Send(sendText("/compact"))
		if c := b.Next(typ("compaction_status")); c.P.Status != "started" {
			t.Fatalf("started %s", c.raw)
		}
		if c := b.Next(typ("compaction_status")); c.P.Status != "skipped" || c.P.Reason != "Compaction blocked by PreCompact hook: [cat >/dev/null; echo not now >&2; exit 2]: not now" {
			t.Fatalf("refused %s", c.raw)
		}
		b.Close()
		if n := len(srv.Requests()); n != 1 {
			t.Fatalf("%d model requests, want the turn's alone", n)
		}
	})
	t.Run("nothing to compact", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer()
		defer srv.Close()
		b, _ := setup(t, srv)
		b.Send(sendText("/compact"))
		if c := b.Next(typ("compaction_status")); c.P.Status != "skipped" || c.P.Trigger != "manual" {
			t.Fatalf("compaction_status %s", c.raw)
		}
		b.Close()
	})
}

func TestSlashSessionSwitch(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(llmtest.Turn{Text: "in the new one"}, llmtest.Turn{Text: "back", Expect: "again"})
	defer srv.Close()
	b, ready := setup(t, srv)
	status := func() out {
		b.Send(`{"type":"status"}`)
		return b.Next(typ("status_response"))
	}

	b.Send(sendText("/new"))
	sw := b.Next(typ("session_switched"))
	if sw.P.SessionID == "" || sw.P.SessionID == ready.P.SessionID || sw.Seq == 0 {
		t.Fatalf("session_switched %s", sw.raw)
	}
	if st := status(); st.P.SessionID != sw.P.SessionID {
		t.Fatalf("status after /new %s", st.raw)
	}
	b.Send(sendText("hello"))
	if m := b.Next(typ("assistant_message")); m.P.Text != "in the new one" {
		t.Fatalf("the new session's events are not translated: %s", m.raw)
	}
	b.Next(typ("idle"))

	b.Send(sendText("/resume " + ready.P.SessionID))
	back := b.Next(typ("session_switched"))
	if back.P.SessionID != ready.P.SessionID {
		t.Fatalf("session_switched %s", back.raw)
	}
	if st := status(); st.P.SessionID != ready.P.SessionID {
		t.Fatalf("status after /resume %s", st.raw)
	}
	b.Send(sendText("again"))
	b.Next(typ("idle"))
	if reqs := srv.Requests(); len(reqs) != 2 || len(reqs[1].Messages) != 1 {
		t.Fatalf("the resumed session carries the other's context: %+v", reqs)
	}

	b.Send(sendText("/resume "+ready.P.SessionID), sendText("/resume nosuch"))
	for _, want := range []string{"already in session", "no stored session nosuch"} {
		if e := b.Next(typ("error")); e.P.Code != "command_failed" || !strings.Contains(e.P.Message, want) {
			t.Fatalf("want %q: %s", want, e.raw)
		}
	}
	b.Close()
	b.checkSeq()
}

func TestSlashRejected(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer()
	defer srv.Close()
	b, _ := setup(t, srv)
	for _, tc := range []struct{ text, code, msg string }{
		{"/resume", "tui_only", "/resume without a session id is only available in the local TUI mode"},
		{"/export out.md", "tui_only", "/export is only available in the local TUI mode"},
		{"/frobnicate now", "unknown_command", "unknown command /frobnicate"},
		{"/models --agent coder fast", "unavailable", "/models --agent: not available: arbor has no named agents"},
	} {
		b.Send(sendText(tc.text))
		if e := b.Next(typ("error")); e.P.Code != tc.code || e.P.Message != tc.msg || e.Seq != 0 {
			t.Fatalf("%s: %s", tc.text, e.raw)
		}
	}
	b.Send(`{"type":"status"}`)
	if st := b.Next(typ("status_response")); st.P.Busy {
		t.Fatalf("a rejected command left the server busy: %s", st.raw)
	}
	b.Close()
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("%d model requests", n)
	}
}

// TestSlashEscape: "//" sends a plain message that starts with "/".
func TestSlashEscape(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(llmtest.Turn{Text: "it lists hosts"})
	defer srv.Close()
	b, _ := setupFiles(t, srv, nil)
	b.Send(sendText("//etc/hosts: what is it?"))
	if idle := b.Next(typ("idle")); idle.P.LastOutcome != "completed" {
		t.Fatalf("idle: %s", idle.raw)
	}
	b.Close()
	if reqs := srv.Requests(); len(reqs) != 1 || reqs[0].LastUserText() != "/etc/hosts: what is it?" {
		t.Fatalf("model requests %+v", reqs)
	}
}

// TestInvalidUTF8: a line with bytes that are not UTF-8 is refused with
// invalid_json and not run (decoding would have run another command).
func TestInvalidUTF8(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer()
	defer srv.Close()
	b, _ := setupFiles(t, srv, nil)
	b.Send("{\"type\":\"local_shell\",\"command\":\"echo \xff > bad\"}", `{"type":"status"}`)
	if e := b.Next(typ("error")); e.P.Code != "invalid_json" || !strings.Contains(e.P.Message, "UTF-8") {
		t.Fatalf("error: %s", e.raw)
	}
	b.Next(typ("status_response"))
	b.Close()
	for _, o := range b.All {
		if o.Type == "local_shell_result" {
			t.Fatalf("the command ran: %s", o.raw)
		}
	}
}
