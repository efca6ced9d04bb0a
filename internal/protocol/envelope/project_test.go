package envelope_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/protocol/envelope"
)

// TestProjectSlash: a project's custom command sent as "/name args" is a
// turn with its expanded text (Chord's custom commands), /help lists the
// commands and skills, the session's prompt carries AGENTS.md, and the
// project's SessionStart and UserPromptSubmit hooks add their context.
func TestProjectSlash(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(llmtest.Turn{Text: "reviewed"})
	defer srv.Close()
	a, _, ws := openApp(t, srv, map[string]string{
		"AGENTS.md":                     "ENVELOPE-RULE: keep answers short.\n",
		".claude/commands/review.md":    "---\ndescription: Review a file\n---\nReview $ARGUMENTS for bugs.\n",
		".arbor/skills/deploy/SKILL.md": "---\nname: deploy\ndescription: Deploy the service.\n---\nSteps.\n",
		".claude/settings.json": `{"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "echo SESSION-CONTEXT"}]}], "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "echo PROMPT-CONTEXT"}]}],
		  "SessionEnd": [{"hooks": [{"type": "command", "command": "cat > ended.json"}]}]}}`,
	})
	b, ready := serveApp(t, a, ws)
	b.Send(sendText("/help"))
	if r := b.Next(typ("info")); !strings.Contains(r.P.Message, "/review  Review a file (command)") || !strings.Contains(r.P.Message, "/deploy  Deploy the service. (skill)") {
		t.Fatalf("/help: %s", r.raw)
	}
	b.Send(sendText("/review main.go"))
	b.Next(typ("idle"))
	b.Close()
	// The session's end ran the SessionEnd hook (before Serve returned).
	if ended, err := os.ReadFile(b.ws + "/ended.json"); err != nil || !strings.Contains(string(ended), `"hook_event_name":"SessionEnd"`) || !strings.Contains(string(ended), `"reason":"other"`) {
		t.Fatalf("the SessionEnd hook read %q (%v)", ended, err)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	if got := reqs[0].LastUserText(); got != "SESSION-CONTEXT\n\nPROMPT-CONTEXT\n\nReview main.go for bugs." {
		t.Fatalf("the turn's text %q", got)
	}
	if !strings.Contains(reqs[0].System, "ENVELOPE-RULE: keep answers short.") || !strings.Contains(reqs[0].System, "- deploy: Deploy the service.") {
		t.Fatalf("the system prompt lacks AGENTS.md or the skill:\n%s", reqs[0].System)
	}
	// The conversation is named after its first prompt as typed, not as
	// the command and the hooks made it (arbor sessions lists it so).
	if s, err := a.Store.GetSession(context.Background(), ready.P.SessionID); err != nil || s.Title != "/review main.go" {
		t.Fatalf("the session's title %q (%v); want the prompt as typed", s.Title, err)
	}
}

// TestSlashRename: /rename names the session, as Chord's does, with
// Chord's toast; without a title it clears the name, and the next prompt
// names the conversation again.
func TestSlashRename(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(llmtest.Turn{Text: "one"}, llmtest.Turn{Text: "two"})
	defer srv.Close()
	a, _, ws := openApp(t, srv, nil)
	b, ready := serveApp(t, a, ws)
	title := func() string {
		t.Helper()
		s, err := a.Store.GetSession(context.Background(), ready.P.SessionID)
		if err != nil {
			t.Fatal(err)
		}
		return s.Title
	}
	b.Send(sendText("fix the login page"))
	b.Next(typ("idle"))
	b.Send(sendText("/rename   login, round two "))
	if r := b.Next(typ("toast")); r.P.Message != "Session title set to: login, round two" || !strings.Contains(string(r.raw), `"level":"info"`) {
		t.Fatalf("toast %s", r.raw)
	}
	b.Send(sendText("/rename"))
	if r := b.Next(typ("toast")); r.P.Message != "Session title cleared" {
		t.Fatalf("toast %s", r.raw)
	}
	if got := title(); got != "" {
		t.Fatalf("title after /rename alone %q; want none", got)
	}
	b.Send(sendText("then the tests"))
	b.Next(typ("idle"))
	b.Close()
	if got := title(); got != "then the tests" {
		t.Fatalf("title %q; want the prompt after the clear", got)
	}
}

// TestBlockedPromptIsAnError: a prompt the project's UserPromptSubmit hook
// refuses is reported as Chord reports a request its hook blocked: an
// error push naming the hook's reason, then idle with last_outcome
// "error"; the model is not called, and the session takes the next
// prompt.
func TestBlockedPromptIsAnError(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(llmtest.Turn{Text: "fixed"})
	defer srv.Close()
	b, _ := setupFiles(t, srv, map[string]string{
		".claude/settings.json": `{"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "sh hooks/prompt.sh"}]}]}}`,
		"hooks/prompt.sh":       "in=$(cat)\ncase $in in\n*deploy*) echo 'no deploys on Friday' >&2; exit 2;;\n*freeze*) echo '{\"continue\": false, \"stopReason\": \"code freeze\"}';;\nesac\n",
	})
	for _, tc := range []struct{ prompt, reason string }{
		{"deploy now", "no deploys on Friday"},
		{"freeze the branch", "code freeze"},
	} {
		from := len(b.All)
		b.Send(sendText(tc.prompt))
		if idle := b.Next(typ("idle")); idle.P.LastOutcome != "error" {
			t.Fatalf("%q: %s", tc.prompt, idle.raw)
		}
		var errs []out
		for _, o := range b.All[from:] {
			if o.Type == "error" {
				errs = append(errs, o)
			}
		}
		if len(errs) != 1 || !strings.Contains(errs[0].P.Message, "UserPromptSubmit hook blocked the prompt: "+tc.reason) || errs[0].P.Code != "" || errs[0].Seq == 0 {
			t.Fatalf("%q: want one error push naming the reason before idle, got %d", tc.prompt, len(errs))
		}
		b.Send(cmd(map[string]string{"type": "status"}))
		if st := b.Next(typ("status_response")); !strings.Contains(st.raw, tc.reason) {
			t.Fatalf("%q: last_error: %s", tc.prompt, st.raw)
		}
	}
	b.Send(sendText("fix the tests"))
	if idle := b.Next(typ("idle")); idle.P.LastOutcome != "completed" {
		t.Fatalf("the next prompt: %s", idle.raw)
	}
	b.Close()
	if reqs := srv.Requests(); len(reqs) != 1 || len(reqs[0].Messages) != 1 || reqs[0].LastUserText() != "fix the tests" {
		t.Fatalf("the model saw %d requests; want one holding only the prompt the hook let through", len(reqs))
	}
}

// TestPromptHookCutShortByTheEnd: input ending while the prompt's hook
// runs kills the hook, and the turn ends cancelled, as a model call cut
// short does: the hook's killing is no failure to push as an error.
func TestPromptHookCutShortByTheEnd(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer()
	defer srv.Close()
	b, _ := setupFiles(t, srv, map[string]string{
		".claude/settings.json": `{"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "echo running > started; read l < gate"}]}]}}`,
	})
	started := b.mkfifo("started")
	b.mkfifo("gate") // never written: the hook waits until it is killed
	b.Send(sendText("fix the tests"))
	if got, err := os.ReadFile(started); err != nil || string(got) != "running\n" {
		t.Fatalf("the hook did not start: %q, %v", got, err)
	}
	b.Close()
	var idles []out
	for _, o := range b.All {
		switch o.Type {
		case "error":
			t.Fatalf("the killed hook was pushed as an error: %s", o.raw)
		case "idle":
			idles = append(idles, o)
		}
	}
	if len(idles) != 1 || idles[0].P.LastOutcome != "cancelled" {
		t.Fatalf("want one idle saying cancelled, got %d", len(idles))
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("the model saw %d requests", n)
	}
}

// TestSessionEndReasons: a session ends when the client leaves it, with
// Claude Code's reason: /new ends it with "clear" (Claude Code's /clear),
// /resume with "resume", each at once; the session current when the input
// ends ends with "other". A session whose hooks never started (no turn)
// does not end.
func TestSessionEndReasons(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(llmtest.Turn{Text: "one"}, llmtest.Turn{Text: "two"}, llmtest.Turn{Text: "three"})
	defer srv.Close()
	b, ready := setupFiles(t, srv, map[string]string{
		".claude/settings.json": `{"hooks": {"SessionEnd": [{"hooks": [{"type": "command", "command": "cat >> ended.jsonl; echo >> ended.jsonl"}]}]}}`,
	})
	first := ready.P.SessionID
	b.Send(sendText("hi"))
	b.Next(typ("idle"))
	second := newThenResume(b, first)
	b.Close()
	data, err := os.ReadFile(b.ws + "/ended.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var in struct {
			SessionID string `json:"session_id"`
			Reason    string `json:"reason"`
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		if err := json.Unmarshal([]byte(line), &in); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		got = append(got, in.SessionID+" "+in.Reason)
	}
	want := []string{first + " clear", second + " resume", first + " other"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("the SessionEnd hooks read\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestSessionStartSources: a session's SessionStart hooks run at its
// first turn with Claude Code's source: "startup" for the session arbor
// started with, "clear" for the one /new opened (Claude Code's /clear),
// "resume" for one /resume or --resume opened; and after a compaction
// with "compact" and the model, their context kept after the summary the
// model reads from then on, as Claude Code runs them after its /compact.
func TestSessionStartSources(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(llmtest.Turn{Text: "one"}, llmtest.Turn{Text: "SUMMARY-TEXT"}, llmtest.Turn{Text: "two"},
		llmtest.Turn{Text: "three"}, llmtest.Turn{Text: "four"}, llmtest.Turn{Text: "five"})
	defer srv.Close()
	a, _, ws := openApp(t, srv, map[string]string{
		".arbor/config.yaml":    "compaction:\n  keep_recent: 1\n",
		".claude/settings.json": `{"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "cat >> started.jsonl; echo >> started.jsonl; echo HOOK-CONTEXT"}]}]}}`,
	})
	b, ready := serveAppWith(t, a, ws, envelope.Options{})
	first := ready.P.SessionID
	b.Send(sendText("hi"))
	b.Next(typ("idle"))
	b.Send(sendText("/compact"))
	b.Next(func(o out) bool { return o.Type == "compaction_status" && o.P.Status == "succeeded" })
	b.Next(typ("idle"))
	b.Send(sendText("after the summary"))
	b.Next(typ("idle"))
	second := newThenResume(b, first)
	b.Close()
	b, _ = serveAppWith(t, a, ws, envelope.Options{Resume: second})
	b.Send(sendText("back"))
	b.Next(typ("idle"))
	b.Close()

	data, err := os.ReadFile(filepath.Join(ws, "started.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for line := range strings.Lines(string(data)) {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var in struct {
			SessionID string `json:"session_id"`
			Source    string `json:"source"`
			Model     string `json:"model"`
		}
		if err := json.Unmarshal([]byte(line), &in); err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		got = append(got, strings.TrimSpace(in.SessionID+" "+in.Source+" "+in.Model))
	}
	// After a compaction the hooks are told the model that wrote the
	// summary, as Claude Code tells them.
	want := []string{first + " startup", first + " compact claude-test", second + " clear", first + " resume", second + " resume"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("the SessionStart hooks read\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The request after the compaction: the summary, then the hook's
	// context.
	after := srv.Requests()[2]
	if text := after.Messages[0].Text(); !strings.Contains(text, "SUMMARY-TEXT\n\nHOOK-CONTEXT") {
		t.Fatalf("the first message after the compaction is %q; want the summary, then the SessionStart hook's context", text)
	}
}

// newThenResume opens a session with /new and has a turn in it, then goes
// back to first with /resume and has a turn there; it returns the
// session /new opened.
func newThenResume(b *bundle, first string) (second string) {
	b.Send(sendText("/new"))
	second = b.Next(typ("session_switched")).P.SessionID
	b.Next(typ("idle"))
	b.Send(sendText("hello"))
	b.Next(typ("idle"))
	b.Send(sendText("/resume " + first))
	b.Next(typ("session_switched"))
	b.Next(typ("idle"))
	b.Send(sendText("again"))
	b.Next(typ("idle"))
	return second
}
