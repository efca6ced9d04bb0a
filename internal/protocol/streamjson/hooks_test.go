package streamjson_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/protocol/streamjson"
)

// hookCall is a hook_callback request as the client reads it.
type hookCall struct {
	raw       string
	RequestID string `json:"request_id"`
	Request   struct {
		Subtype    string `json:"subtype"`
		CallbackID string `json:"callback_id"`
		Input      struct {
			HookEventName string `json:"hook_event_name"`
			SessionID     string `json:"session_id"`
			ToolName      string `json:"tool_name"`
			// ToolResponse is Claude Code's Bash output.
			ToolResponse struct {
				Stdout      string `json:"stdout"`
				Interrupted *bool  `json:"interrupted"`
			} `json:"tool_response"`
			Prompt         string `json:"prompt"`
			StopHookActive *bool  `json:"stop_hook_active"`
			LastMessage    string `json:"last_assistant_message"`
			Error          string `json:"error"`
			Source         string `json:"source"`
		} `json:"input"`
	} `json:"request"`
}

// nextHook waits for the hook_callback of callback id, checks its event
// and answers it with body.
func (b *bundle) nextHook(id, event, body string) hookCall {
	b.t.Helper()
	o := b.Next(func(o out) bool { return o.Type == "control_request" && o.Request.Subtype == "hook_callback" })
	var h hookCall
	if err := json.Unmarshal([]byte(o.raw), &h); err != nil {
		b.t.Fatal(err)
	}
	if h.Request.CallbackID != id || h.Request.Input.HookEventName != event || h.Request.Input.SessionID == "" {
		b.t.Fatalf("hook_callback %s; want callback %s for %s with the session id", o.raw, id, event)
	}
	h.raw = o.raw
	b.Send(`{"type":"control_response","response":{"subtype":"success","request_id":"` + h.RequestID + `","response":` + body + `}}`)
	return h
}

// userTexts is the text of the request's last user message.
func lastUserText(req llmtest.Request) string {
	var text string
	for _, m := range req.Messages {
		if m.Role != llm.RoleUser {
			continue
		}
		text = ""
		for _, p := range m.Parts {
			switch {
			case p.Type == llm.PartText:
				text += p.Text
			case p.Type == llm.PartToolResult && p.ToolResult != nil:
				text += p.ToolResult.Content
			}
		}
	}
	return text
}

const allHooks = `{"type":"control_request","request_id":"init-1","request":{"subtype":"initialize","hooks":{
"SessionStart":[{"hookCallbackIds":["ss"]}],
"UserPromptSubmit":[{"hookCallbackIds":["ups"]}],
"PreToolUse":[{"matcher":"Bash","hookCallbackIds":["pre"]}],
"PostToolUse":[{"matcher":"shell","hookCallbackIds":["post"]}],
"Stop":[{"hookCallbackIds":["stop"]}]}}}`

// TestHooks: each hook event the Claude Agent SDK registers is called
// back at its point of the turn, and what it answers takes effect:
// SessionStart's and UserPromptSubmit's additionalContext reach the
// model, PostToolUse's block reason follows the tool result, and a Stop
// hook that blocks sends the agent back to work with stop_hook_active.
func TestHooks(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(
		llmtest.Turn{ToolCalls: []llmtest.ToolCall{{ID: "toolu_1", Name: "shell", Input: map[string]any{"command": "echo hi"}}}},
		llmtest.Turn{Text: "done"},
		llmtest.Turn{Text: "really done"},
	)
	defer srv.Close()
	b := setup(t, srv, setupOpts{mode: "trust"})
	b.Send(strings.ReplaceAll(allHooks, "\n", ""))
	if r := b.Next(typ("control_response", "")); r.Response.Subtype != "success" {
		t.Fatalf("initialize %s", r.raw)
	}
	if h := b.nextHook("ss", "SessionStart", `{"hookSpecificOutput":{"hookEventName":"SessionStart","additionalContext":"CTX-START"}}`); h.Request.Input.Source != "startup" {
		t.Fatalf("SessionStart source %q, want startup", h.Request.Input.Source)
	}
	b.Send(user("hi there"))
	if h := b.nextHook("ups", "UserPromptSubmit", `{"hookSpecificOutput":{"hookEventName":"UserPromptSubmit","additionalContext":"CTX-PROMPT"}}`); h.Request.Input.Prompt != "hi there" {
		t.Fatalf("UserPromptSubmit prompt %q", h.Request.Input.Prompt)
	}
	b.nextHook("pre", "PreToolUse", `{}`)
	if h := b.nextHook("post", "PostToolUse", `{"decision":"block","reason":"POST-FEEDBACK"}`); h.Request.Input.ToolResponse.Stdout != "hi" || h.Request.Input.ToolResponse.Interrupted == nil {
		t.Fatalf("PostToolUse tool_response %+v, want Claude Code's Bash output: stdout hi, interrupted false", h.Request.Input.ToolResponse)
	}
	if h := b.nextHook("stop", "Stop", `{"decision":"block","reason":"KEEP-GOING"}`); h.Request.Input.StopHookActive == nil || *h.Request.Input.StopHookActive || h.Request.Input.LastMessage != "done" {
		t.Fatalf("first Stop hook: stop_hook_active %v, last_assistant_message %q, want false and done", h.Request.Input.StopHookActive, h.Request.Input.LastMessage)
	}
	if h := b.nextHook("stop", "Stop", `{}`); h.Request.Input.StopHookActive == nil || !*h.Request.Input.StopHookActive || h.Request.Input.LastMessage != "really done" {
		t.Fatalf("second Stop hook: stop_hook_active %v, last_assistant_message %q", h.Request.Input.StopHookActive, h.Request.Input.LastMessage)
	}
	if r := b.Next(typ("result", "")); r.IsError || r.Result != "really done" {
		t.Fatalf("result %s", r.raw)
	}
	b.Close()
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("model requests = %d, want 3", len(reqs))
	}
	if got := lastUserText(reqs[0]); !strings.Contains(got, "CTX-START") || !strings.Contains(got, "CTX-PROMPT") || !strings.Contains(got, "hi there") {
		t.Fatalf("first prompt %q; want both hooks' context and the prompt", got)
	}
	if got := lastUserText(reqs[1]); !strings.Contains(got, "POST-FEEDBACK") {
		t.Fatalf("tool result %q; want the PostToolUse hook's reason", got)
	}
	if got := lastUserText(reqs[2]); !strings.Contains(got, "KEEP-GOING") {
		t.Fatalf("message after the Stop hook %q; want its reason", got)
	}
}

// TestPostToolUseFailureHook: a call that ran and failed calls back the
// SDK's PostToolUseFailure hook with its error, and its
// additionalContext follows the error the model reads.
func TestPostToolUseFailureHook(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(
		llmtest.Turn{ToolCalls: []llmtest.ToolCall{{ID: "toolu_1", Name: "shell", Input: map[string]any{"command": "echo broken >&2; exit 3"}}}},
		llmtest.Turn{Text: "noted"},
	)
	defer srv.Close()
	b := setup(t, srv, setupOpts{mode: "trust"})
	b.Send(`{"type":"control_request","request_id":"init-1","request":{"subtype":"initialize","hooks":{` +
		`"PostToolUse":[{"hookCallbackIds":["post"]}],"PostToolUseFailure":[{"matcher":"Bash","hookCallbackIds":["failed"]}]}}}`)
	if r := b.Next(typ("control_response", "")); r.Response.Subtype != "success" || strings.Contains(r.raw, "PostToolUseFailure") {
		t.Fatalf("initialize %s; want success, PostToolUseFailure not among the unfired hooks", r.raw)
	}
	b.Send(user("run it"))
	h := b.nextHook("failed", "PostToolUseFailure", `{"hookSpecificOutput":{"hookEventName":"PostToolUseFailure","additionalContext":"CTX-FAILED"}}`)
	if !strings.Contains(h.Request.Input.Error, "broken") || h.Request.Input.ToolName != "shell" {
		t.Fatalf("PostToolUseFailure input %+v; want the shell call's error", h.Request.Input)
	}
	if r := b.Next(typ("result", "")); r.Result != "noted" {
		t.Fatalf("result %s", r.raw)
	}
	b.Close()
	if got := lastUserText(srv.Requests()[1]); !strings.Contains(got, "broken") || !strings.Contains(got, "CTX-FAILED") {
		t.Fatalf("tool result %q; want the error and the hook's context", got)
	}
	for _, o := range b.All {
		if strings.Contains(o.raw, `"callback_id":"post"`) {
			t.Fatalf("PostToolUse ran for a failed call: %s", o.raw)
		}
	}
}

// TestSessionEndHook: the end of input ends the session: the project's
// SessionEnd hook runs, after the last turn's result, before arbor exits.
func TestSessionEndHook(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(llmtest.Turn{Text: "hello"})
	defer srv.Close()
	home := t.TempDir()
	settings := `{"hooks": {"SessionEnd": [{"matcher": "other", "hooks": [{"type": "command", "command": "cat > ended.json"}]}]}}`
	if err := os.MkdirAll(filepath.Join(home, "ws", ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "ws", ".claude", "settings.json"), []byte(settings), 0o644); err != nil {
		t.Fatal(err)
	}
	b := setup(t, srv, setupOpts{home: home})
	b.Send(user("hi"))
	r := b.Next(typ("result", ""))
	b.Close()
	ended, err := os.ReadFile(filepath.Join(home, "ws", "ended.json"))
	if err != nil || !strings.Contains(string(ended), `"hook_event_name":"SessionEnd"`) || !strings.Contains(string(ended), `"reason":"other"`) ||
		!strings.Contains(string(ended), `"session_id":"`+r.SessionID+`"`) {
		t.Fatalf("the SessionEnd hook read %q (%v)", ended, err)
	}
}

// TestHookBlocks: a UserPromptSubmit hook that blocks keeps the prompt
// from the model (an error result with its reason); a PreToolUse hook
// that answers continue: false stops the call and ends the turn.
func TestHookBlocks(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(
		llmtest.Turn{ToolCalls: []llmtest.ToolCall{{ID: "toolu_1", Name: "shell", Input: map[string]any{"command": "echo hi > a.txt"}}}},
		llmtest.Turn{Text: "never"},
	)
	defer srv.Close()
	b := setup(t, srv, setupOpts{mode: "trust"})
	b.Send(`{"type":"control_request","request_id":"init-1","request":{"subtype":"initialize","hooks":{"UserPromptSubmit":[{"hookCallbackIds":["ups"]}],"PreToolUse":[{"hookCallbackIds":["pre"]}]}}}`)
	b.Send(user("secret"))
	b.nextHook("ups", "UserPromptSubmit", `{"decision":"block","reason":"NOT-THIS"}`)
	if r := b.Next(typ("result", "")); !r.IsError || !strings.Contains(strings.Join(r.Errors, " "), "NOT-THIS") {
		t.Fatalf("result %s; want an error naming the hook's reason", r.raw)
	}
	b.Send(user("fine"))
	b.nextHook("ups", "UserPromptSubmit", `{}`)
	b.nextHook("pre", "PreToolUse", `{"continue":false,"stopReason":"HALT"}`)
	if r := b.Next(typ("result", "")); !r.IsError || !strings.Contains(strings.Join(r.Errors, " "), "HALT") {
		t.Fatalf("result %s; want an error naming the stop reason", r.raw)
	}
	b.Close()
	if n := len(srv.Requests()); n != 1 {
		t.Fatalf("model requests = %d, want 1 (the blocked prompt never reached the model, the stopped turn called it once)", n)
	}
}

// TestSessionEndCallback: the client's SessionEnd callbacks are called
// when the session ends while its input is still open (SIGTERM, SIGINT),
// with reason "other", and the project's SessionEnd hooks run too; when
// the input ends first no callback is asked (no answer could be read),
// as Claude Code 2.1 asks none then either.
func TestSessionEndCallback(t *testing.T) {
	t.Parallel()
	const endHooks = `{"type":"control_request","request_id":"init-1","request":{"subtype":"initialize","hooks":{"SessionEnd":[{"hookCallbackIds":["end"]}]}}}`
	start := func(t *testing.T, ctx context.Context) *bundle {
		srv := llmtest.NewServer(llmtest.Turn{Text: "done"})
		t.Cleanup(srv.Close)
		b := setup(t, srv, setupOpts{mode: "trust", ctx: ctx, files: map[string]string{
			".claude/settings.json": `{"hooks": {"SessionEnd": [{"hooks": [{"type": "command", "command": "cat > project-ended.json"}]}]}}`}})
		b.Send(endHooks)
		if r := b.Next(typ("control_response", "")); r.Response.Subtype != "success" || strings.Contains(r.raw, "SessionEnd") {
			t.Fatalf("initialize %s; want success, SessionEnd not among the unfired hooks", r.raw)
		}
		b.Send(user("hi"))
		b.Next(typ("result", ""))
		return b
	}
	t.Run("shutdown", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		b := start(t, ctx)
		cancel() // SIGTERM, the input still open
		if h := b.nextHook("end", "SessionEnd", `{}`); !strings.Contains(h.raw, `"reason":"other"`) {
			t.Fatalf("SessionEnd callback %s; want reason other", h.raw)
		}
		for _, ok := b.Recv(); ok; _, ok = b.Recv() {
		}
		b.CloseInput()
		if err := b.Wait(); err != nil {
			t.Fatal(err)
		}
		if ended, err := os.ReadFile(filepath.Join(b.ws, "project-ended.json")); err != nil || !strings.Contains(string(ended), `"reason":"other"`) {
			t.Fatalf("the project's SessionEnd hook read %q (%v)", ended, err)
		}
	})
	t.Run("end-of-input", func(t *testing.T) {
		t.Parallel()
		b := start(t, context.Background())
		b.CloseInput()
		for o, ok := b.Recv(); ok; o, ok = b.Recv() {
			if o.Type == "control_request" && o.Request.Subtype == "hook_callback" {
				t.Fatalf("a callback asked after the input ended: %s", o.raw)
			}
		}
		if err := b.Wait(); err != nil {
			t.Fatal(err)
		}
		if ended, err := os.ReadFile(filepath.Join(b.ws, "project-ended.json")); err != nil || !strings.Contains(string(ended), `"reason":"other"`) {
			t.Fatalf("the project's SessionEnd hook read %q (%v)", ended, err)
		}
	})
}

// TestSessionEndOnSigtermInSinglePromptMode: single-prompt mode cancelled
// (SIGTERM) during its turn ends the session: the project's SessionEnd
// command hooks run with reason "other", as the real CLI runs them when
// `claude -p "prompt"` gets SIGTERM mid-turn; the client's SessionEnd
// callback is not asked, as the real CLI has no mode that runs a prompt
// argument with a client on its input to ask (docs/project-files.md).
func TestSessionEndOnSigtermInSinglePromptMode(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(
		llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "shell", Input: map[string]any{"command": "sleep 60"}}}},
		llmtest.Turn{Text: "not reached"})
	defer srv.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b := setup(t, srv, setupOpts{mode: "trust", ctx: ctx, opts: streamjson.Options{Prompt: "wait"}, files: map[string]string{
		".claude/settings.json": `{"hooks": {"SessionEnd": [{"hooks": [{"type": "command", "command": "cat > project-ended.json"}]}]}}`}})
	// The prompt's turn creates the session at once, so the initialize
	// that registers the callback is taken only when it comes first (it
	// is refused once the session exists): the callback's check below
	// holds when it was registered.
	b.Send(`{"type":"control_request","request_id":"init-1","request":{"subtype":"initialize","hooks":{"SessionEnd":[{"hookCallbackIds":["end"]}]}}}`)
	seen := b.NextAll(typ("control_response", ""), func(o out) bool { return o.Type == "assistant" && strings.Contains(o.raw, "sleep 60") })
	registered := seen[0].Response.Subtype == "success"
	cancel() // SIGTERM during the turn, the input still open
	for o, ok := b.Recv(); ok; o, ok = b.Recv() {
		if o.Type == "control_request" && o.Request.Subtype == "hook_callback" {
			t.Fatalf("a callback was asked in single-prompt mode (registered: %v): %s", registered, o.raw)
		}
	}
	b.CloseInput()
	if err := b.Wait(); err != nil {
		t.Fatal(err)
	}
	if ended, err := os.ReadFile(filepath.Join(b.ws, "project-ended.json")); err != nil || !strings.Contains(string(ended), `"reason":"other"`) {
		t.Fatalf("the project's SessionEnd hook read %q (%v)", ended, err)
	}
}

// TestHookSystemMessage: what the SDK's hook callbacks answer as
// systemMessage is a system/informational line for the person, as the
// real Claude Code CLI writes it (TestProjectFilesLikeClaudeCode's
// hook-system-message), and never reaches the model.
func TestHookSystemMessage(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(
		llmtest.Turn{ToolCalls: []llmtest.ToolCall{{ID: "toolu_1", Name: "shell", Input: map[string]any{"command": "echo hi"}}}},
		llmtest.Turn{Text: "done"},
	)
	defer srv.Close()
	b := setup(t, srv, setupOpts{mode: "trust"})
	b.Send(strings.ReplaceAll(allHooks, "\n", ""))
	b.Next(typ("control_response", ""))
	b.nextHook("ss", "SessionStart", `{}`)
	b.Send(user("hi there"))
	for _, h := range []struct{ id, event string }{{"ups", "UserPromptSubmit"}, {"pre", "PreToolUse"}, {"post", "PostToolUse"}, {"stop", "Stop"}} {
		b.nextHook(h.id, h.event, `{"systemMessage":"SAYS-`+h.event+`"}`)
	}
	b.Next(typ("result", ""))
	b.Close()
	var said []string
	for _, o := range b.All {
		var m struct {
			Content, Level, UUID string
			SessionID            string `json:"session_id"`
		}
		if o.Type == "system" && o.Subtype == "informational" && json.Unmarshal([]byte(o.raw), &m) == nil {
			if m.Level != "notice" || m.UUID == "" || m.SessionID == "" {
				t.Errorf("line %s: want level notice, a uuid and the session id", o.raw)
			}
			said = append(said, m.Content)
		}
	}
	want := []string{"UserPromptSubmit says: SAYS-UserPromptSubmit", "PreToolUse:Bash says: SAYS-PreToolUse",
		"PostToolUse:Bash says: SAYS-PostToolUse", "Stop says: SAYS-Stop"}
	if strings.Join(said, "\n") != strings.Join(want, "\n") {
		t.Fatalf("informational lines %q, want %q", said, want)
	}
	for _, r := range srv.Requests() {
		if strings.Contains(string(r.Body), "SAYS-") {
			t.Fatalf("a hook's systemMessage reached the model: %s", r.Body)
		}
	}
}

// TestHookOutputRedacted: what a project's hooks print reaches the client
// (a SessionStart hook's stdout and stderr in its hook_response line, a
// UserPromptSubmit hook's systemMessage in an informational line) and the
// model (their context) with the configuration's secrets redacted, as a
// tool's output does.
func TestHookOutputRedacted(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(llmtest.Turn{Text: "done"})
	defer srv.Close()
	b := setup(t, srv, setupOpts{mode: "trust", files: map[string]string{
		".claude/settings.json": `{"hooks": {
		  "SessionStart": [{"hooks": [{"type": "command", "command": "echo out test-key-123; echo err test-key-123 >&2"}]}],
		  "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "echo '{\"systemMessage\": \"saw test-key-123\", \"hookSpecificOutput\": {\"hookEventName\": \"UserPromptSubmit\", \"additionalContext\": \"context test-key-123\"}}'"}]}]}}`}})
	b.Send(user("hi"))
	var lines []string
	for o, ok := b.Recv(); ok; o, ok = b.Recv() {
		lines = append(lines, o.raw)
		if o.Type == "result" {
			break
		}
	}
	all := strings.Join(lines, "\n")
	if strings.Contains(all, "test-key-123") {
		t.Fatalf("a key reached the client:\n%s", all)
	}
	// The SessionStart hook's stdout and the UserPromptSubmit hook's
	// context reach the model, redacted too.
	reqs := srv.Requests()
	if len(reqs) == 0 {
		t.Fatal("no model request")
	}
	if body := string(reqs[0].Body); strings.Contains(body, "test-key-123") || !strings.Contains(body, "context [REDACTED]") || !strings.Contains(body, "out [REDACTED]") {
		t.Fatalf("the model's request: %s", body)
	}
	for _, want := range []string{`"subtype":"hook_response"`, `out [REDACTED]`, `err [REDACTED]`, `UserPromptSubmit says: saw [REDACTED]`} {
		if !strings.Contains(all, want) {
			t.Errorf("no %s in:\n%s", want, all)
		}
	}
	b.CloseInput()
	_ = b.Wait()
}

// TestHookBlockReasonRedacted: the reason a hook gives for refusing a
// prompt (its stderr, exit 2) has the configuration's secrets redacted
// before the client's result line carries it.
func TestHookBlockReasonRedacted(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(llmtest.Turn{Text: "never asked"})
	defer srv.Close()
	b := setup(t, srv, setupOpts{files: map[string]string{
		".claude/settings.json": `{"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "echo 'refused: the key is test-key-123' >&2; exit 2"}]}]}}`}})
	b.Send(user("hi"))
	r := b.Next(typ("result", ""))
	b.Close()
	if !r.IsError || strings.Contains(r.raw, "test-key-123") || !strings.Contains(r.raw, "refused: the key is [REDACTED]") {
		t.Fatalf("result %s; want the hook's reason, redacted", r.raw)
	}
}
