//go:build unix

package streamjson_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/store/sqlite"
)

// TestSDKOptions drives the built binary through the real SDK with the
// options a program passes to query(): each must work or be refused with
// an error, never be ignored.
func TestSDKOptions(t *testing.T) {
	t.Parallel()
	h := setupSDK(t)

	shellCall := func(id, cmd string) llmtest.Turn {
		return llmtest.Turn{ToolCalls: []llmtest.ToolCall{{ID: id, Name: "Bash", Input: map[string]any{"command": cmd}}}}
	}
	noFile := func(r *sdkRun, t *testing.T, name string) {
		t.Helper()
		if _, err := os.Stat(filepath.Join(r.workspace, name)); !os.IsNotExist(err) {
			r.fatalf(t, "%s exists: a call that should have been refused ran", name)
		}
	}

	t.Run("disallowedTools", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer(shellCall("toolu_d1", "echo x > ran.txt"), llmtest.Turn{Text: "refused"})
		r := h.driveOptions(t, srv, driverOptions{Options: map[string]any{
			"disallowedTools": []string{"Bash"}, "permissionMode": "bypassPermissions", "allowDangerouslySkipPermissions": true}})
		r.requireDone(t)
		noFile(r, t, "ran.txt")
		r.find(t, "an error tool_result for toolu_d1", func(m sdkMessage) bool {
			return m.Type == "user" && m.hasBlock(func(b sdkBlock) bool { return b.ToolUseID == "toolu_d1" && b.IsError })
		})
		// A bare name leaves the tool out of init's tools, as Claude Code's.
		init := r.find(t, "system/init", func(m sdkMessage) bool { return m.Type == "system" && m.Subtype == "init" })
		if slices.Contains(init.Tools, "Bash") || !slices.Contains(init.Tools, "Read") {
			r.fatalf(t, "init.tools = %q; want Read and no Bash", init.Tools)
		}
	})

	t.Run("tools", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer(llmtest.Turn{Text: "ok"})
		r := h.driveOptions(t, srv, driverOptions{Options: map[string]any{"tools": []string{"Read", "Grep"}}})
		r.requireDone(t)
		init := r.find(t, "system/init", func(m sdkMessage) bool { return m.Type == "system" && m.Subtype == "init" })
		if strings.Join(init.Tools, ",") != "Read,Grep" {
			r.fatalf(t, "init.tools = %q, want Read, Grep", init.Tools)
		}
		var offered []string
		for _, ts := range srv.Requests()[0].Tools {
			offered = append(offered, ts.Name)
		}
		if strings.Join(offered, ",") != "Read,Grep" {
			r.fatalf(t, "the model was offered %q, want Read, Grep", offered)
		}
	})

	t.Run("systemPrompt", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer(llmtest.Turn{Text: "ok"})
		r := h.driveOptions(t, srv, driverOptions{Options: map[string]any{"systemPrompt": "You are the test bot."}})
		r.requireDone(t)
		if got := srv.Requests()[0].System; got != "You are the test bot." {
			r.fatalf(t, "system prompt sent to the model = %q, want the client's", got)
		}
	})

	t.Run("appendSystemPrompt", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer(llmtest.Turn{Text: "ok"})
		r := h.driveOptions(t, srv, driverOptions{Options: map[string]any{
			"systemPrompt": map[string]any{"type": "preset", "preset": "claude_code", "append": "APPENDED-BY-CLIENT"}}})
		r.requireDone(t)
		got := srv.Requests()[0].System
		if !strings.HasSuffix(got, "APPENDED-BY-CLIENT") || len(got) <= len("APPENDED-BY-CLIENT")+1 {
			r.fatalf(t, "system prompt sent to the model = %q, want arbor's with the client's text appended", got)
		}
	})

	t.Run("deny", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer(shellCall("toolu_n1", "echo x > ran.txt"), llmtest.Turn{Text: "understood"})
		r := h.driveOptions(t, srv, driverOptions{CanUseTool: "deny"})
		r.requireDone(t)
		noFile(r, t, "ran.txt")
		res := r.result(t)
		if res.Subtype != "success" || len(res.Denials) != 1 || res.Denials[0].ToolUseID != "toolu_n1" {
			r.fatalf(t, "result subtype %q, permission_denials %+v; want success and the one denial of toolu_n1", res.Subtype, res.Denials)
		}
	})

	t.Run("deny-interrupt", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer(shellCall("toolu_i1", "echo x > ran.txt"), llmtest.Turn{Text: "must not be asked"})
		r := h.driveOptions(t, srv, driverOptions{CanUseTool: "deny-interrupt"})
		noFile(r, t, "ran.txt")
		res := r.result(t)
		if !res.IsError || len(res.Denials) != 1 {
			r.fatalf(t, "result is_error %v, permission_denials %+v; want an error result listing the denial", res.IsError, res.Denials)
		}
		if n := len(srv.Requests()); n != 1 {
			r.fatalf(t, "model requests = %d, want 1: a denial with interrupt ends the turn", n)
		}
	})

	t.Run("hook-deny", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer(shellCall("toolu_h1", "echo x > ran.txt"), llmtest.Turn{Text: "blocked"})
		r := h.driveOptions(t, srv, driverOptions{PreToolUseDeny: "Bash", Options: map[string]any{
			"permissionMode": "bypassPermissions", "allowDangerouslySkipPermissions": true}})
		r.requireDone(t)
		noFile(r, t, "ran.txt")
		if hs := r.driverEvents("hook"); len(hs) != 1 || hs[0].ToolUseID != "toolu_h1" || hs[0].Message != "PreToolUse" || hs[0].ToolName != "Bash" {
			r.fatalf(t, "hook calls %+v; want one PreToolUse for Bash, toolu_h1", hs)
		}
		res := r.result(t)
		if len(res.Denials) != 1 || res.Denials[0].ToolUseID != "toolu_h1" {
			r.fatalf(t, "permission_denials %+v; want the hook's denial", res.Denials)
		}
		if tr := lastToolResult(srv.Requests()[1]); tr == nil || !tr.IsError || !strings.Contains(tr.Content, "blocked by the hook") {
			r.fatalf(t, "the model saw %+v; want an error result with the hook's reason", tr)
		}
	})

	t.Run("hooks", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer(shellCall("toolu_k1", "echo hi"), llmtest.Turn{Text: "done"})
		r := h.driveOptions(t, srv, driverOptions{RecordHooks: []string{"SessionStart", "UserPromptSubmit", "PostToolUse", "Stop"},
			Options: map[string]any{"permissionMode": "bypassPermissions", "allowDangerouslySkipPermissions": true}})
		r.requireDone(t)
		var got []string
		for _, e := range r.driverEvents("hook") {
			got = append(got, e.Message)
		}
		if strings.Join(got, " ") != "SessionStart UserPromptSubmit PostToolUse Stop" {
			r.fatalf(t, "hooks called %q; want SessionStart UserPromptSubmit PostToolUse Stop, in that order", got)
		}
	})

	// Hooks for every event Claude Code offers are accepted, as Claude
	// Code accepts them: those arbor fires run, the others are listed.
	t.Run("every-hook-event", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer(shellCall("toolu_k2", "echo hi"), llmtest.Turn{Text: "done"})
		r := h.driveOptions(t, srv, driverOptions{RecordHooks: []string{"*", "Interrupt"},
			Options: map[string]any{"permissionMode": "bypassPermissions", "allowDangerouslySkipPermissions": true}})
		r.requireDone(t)
		if res := r.result(t); res.IsError || res.Result != "done" {
			r.fatalf(t, "result is_error %v result %q; want success", res.IsError, res.Result)
		}
		var got []string
		for _, e := range r.driverEvents("hook") {
			got = append(got, e.Message)
		}
		if strings.Join(got, " ") != "SessionStart UserPromptSubmit PreToolUse PostToolUse Stop" {
			r.fatalf(t, "hooks called %q; want the ones arbor fires, in order", got)
		}
		for _, unfired := range []string{"Notification", "PreSkillShellCommand", "Interrupt"} {
			if !strings.Contains(r.stderr, unfired) || !strings.Contains(r.stderr, "does not fire these events yet") {
				r.fatalf(t, "arbor's diagnostics do not list the %s hook as accepted but not fired", unfired)
			}
		}
	})

	t.Run("unknown-hook-event", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer(llmtest.Turn{Text: "never"})
		r := h.driveOptions(t, srv, driverOptions{Prompt: "hi", Options: map[string]any{}, RecordHooks: []string{"PreToolUze"}})
		// The SDK goes on after an initialize error, so the turn fails.
		if res := r.result(t); !res.IsError || !strings.Contains(strings.Join(res.Errors, " "), "PreToolUze") {
			r.fatalf(t, "result is_error %v errors %q; want the refusal naming the misspelt event", res.IsError, res.Errors)
		}
		if n := len(srv.Requests()); n != 0 {
			r.fatalf(t, "model requests = %d, want 0", n)
		}
	})

	t.Run("additionalDirectories", func(t *testing.T) {
		t.Parallel()
		extra := t.TempDir()
		target := filepath.Join(extra, "out.txt")
		srv := llmtest.NewServer(llmtest.Turn{ToolCalls: []llmtest.ToolCall{{ID: "toolu_a1", Name: "Write", Input: map[string]any{"file_path": target, "content": "y"}}}},
			llmtest.Turn{Text: "written"})
		r := h.driveOptions(t, srv, driverOptions{Options: map[string]any{"permissionMode": "acceptEdits", "additionalDirectories": []string{extra}}})
		r.requireDone(t)
		if b, err := os.ReadFile(target); err != nil || string(b) != "y" {
			r.fatalf(t, "%s = %q, %v; a write in an additional directory was refused", target, b, err)
		}
		// Without it, the same write is outside the workspace.
		srv2 := llmtest.NewServer(llmtest.Turn{ToolCalls: []llmtest.ToolCall{{ID: "toolu_a2", Name: "Write", Input: map[string]any{"file_path": filepath.Join(extra, "no.txt"), "content": "n"}}}},
			llmtest.Turn{Text: "refused"})
		r2 := h.driveOptions(t, srv2, driverOptions{Options: map[string]any{"permissionMode": "acceptEdits"}})
		r2.requireDone(t)
		if _, err := os.Stat(filepath.Join(extra, "no.txt")); !os.IsNotExist(err) {
			r2.fatalf(t, "a write outside the workspace and its added directories ran")
		}
	})

	t.Run("plan", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer(
			llmtest.Turn{ToolCalls: []llmtest.ToolCall{{ID: "toolu_p1", Name: "Write", Input: map[string]any{"file_path": "ran.txt", "content": "x"}}}},
			llmtest.Turn{Text: "planned"})
		r := h.driveOptions(t, srv, driverOptions{CanUseTool: "allow", Options: map[string]any{"permissionMode": "plan"}})
		r.requireDone(t)
		noFile(r, t, "ran.txt")
		if init := r.find(t, "system/init", func(m sdkMessage) bool { return m.Type == "system" && m.Subtype == "init" }); init.Mode != "plan" {
			r.fatalf(t, "init.permissionMode = %q, want plan", init.Mode)
		}
		if n := len(r.driverEvents("can_use_tool")); n != 0 {
			r.fatalf(t, "canUseTool was asked %d times; plan mode denies writes without asking", n)
		}
	})

	t.Run("Bash", func(t *testing.T) {
		t.Parallel()
		// A model trained on Claude Code calls Bash; allowedTools names it.
		srv := llmtest.NewServer(
			llmtest.Turn{ToolCalls: []llmtest.ToolCall{{ID: "toolu_b1", Name: "Bash", Input: map[string]any{"command": "echo hi > ran.txt"}}}},
			llmtest.Turn{Text: "ran"})
		r := h.driveOptions(t, srv, driverOptions{CanUseTool: "deny", Options: map[string]any{"allowedTools": []string{"Bash(echo *)"}}})
		r.requireDone(t)
		if b, err := os.ReadFile(filepath.Join(r.workspace, "ran.txt")); err != nil || strings.TrimSpace(string(b)) != "hi" {
			r.fatalf(t, "ran.txt = %q, %v; want the command run without asking", b, err)
		}
		if n := len(r.driverEvents("can_use_tool")); n != 0 {
			r.fatalf(t, "canUseTool was asked %d times; allowedTools allows the call", n)
		}
	})

	t.Run("Bash-canUseTool", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer(
			llmtest.Turn{ToolCalls: []llmtest.ToolCall{{ID: "toolu_c1", Name: "Bash", Input: map[string]any{"command": "echo hi > ran.txt"}}}},
			llmtest.Turn{Text: "ran"})
		r := h.driveOptions(t, srv, driverOptions{CanUseTool: "allow"})
		r.requireDone(t)
		if asked := r.driverEvents("can_use_tool"); len(asked) != 1 || asked[0].ToolUseID != "toolu_c1" || asked[0].ToolName != "Bash" {
			r.fatalf(t, "canUseTool calls %+v; want one for Bash, toolu_c1", asked)
		}
		if _, err := os.Stat(filepath.Join(r.workspace, "ran.txt")); err != nil {
			r.fatalf(t, "the approved command did not run: %v", err)
		}
	})

	// The SDK's sandbox option (sent as --settings): a confined Bash
	// runs without canUseTool, writes in the workspace, and cannot write
	// outside it.
	t.Run("sandbox", func(t *testing.T) {
		t.Parallel()
		escape := filepath.Join("/var/tmp", "arbor-sdk-sandbox-escape-"+filepath.Base(t.TempDir()))
		t.Cleanup(func() { _ = os.Remove(escape) })
		srv := llmtest.NewServer(shellCall("toolu_s1", "echo hi > ran.txt; echo x > "+escape), llmtest.Turn{Text: "done"})
		r := h.driveOptions(t, srv, driverOptions{CanUseTool: "deny", Options: map[string]any{
			"sandbox": map[string]any{"enabled": true, "autoAllowBashIfSandboxed": true}}})
		r.requireDone(t)
		if n := len(r.driverEvents("can_use_tool")); n != 0 {
			r.fatalf(t, "canUseTool was asked %d times; a confined Bash runs without asking", n)
		}
		if _, err := os.Stat(filepath.Join(r.workspace, "ran.txt")); err != nil {
			r.fatalf(t, "the confined command did not write in the workspace: %v", err)
		}
		if _, err := os.Stat(escape); err == nil {
			r.fatalf(t, "the confined command wrote outside the workspace")
		}
		r.find(t, "a tool_result naming what the sandbox blocked", func(m sdkMessage) bool {
			return m.Type == "user" && m.hasBlock(func(b sdkBlock) bool {
				return b.ToolUseID == "toolu_s1" && strings.Contains(string(b.Content), "sandbox: commands may write only in")
			})
		})
		r.find(t, "system/init saying sandbox_enabled", func(m sdkMessage) bool {
			return m.Type == "system" && m.Subtype == "init" && m.Sandbox
		})
	})

	t.Run("partial-messages", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer(llmtest.Turn{Text: "Hello streamed"})
		r := h.driveOptions(t, srv, driverOptions{Options: map[string]any{"includePartialMessages": true}})
		r.requireDone(t)
		var kinds []string
		var text string
		inits := 0
		for _, m := range r.messages {
			switch {
			case m.Type == "stream_event" && m.Event != nil:
				kinds = append(kinds, m.Event.Type)
				if m.Event.Type == "content_block_delta" && m.Event.Delta.Type == "text_delta" {
					text += m.Event.Delta.Text
				}
			case m.Type == "system" && m.Subtype == "init":
				inits++
				if m.Model != "claude-test" || m.KeySource != "ANTHROPIC_API_KEY" {
					r.fatalf(t, "init model %q apiKeySource %q; want claude-test (no provider prefix) and ANTHROPIC_API_KEY", m.Model, m.KeySource)
				}
			}
		}
		got := strings.Join(kinds, " ")
		if !strings.HasPrefix(got, "message_start content_block_start content_block_delta") || !strings.HasSuffix(got, "content_block_stop message_delta message_stop") || text != "Hello streamed" {
			r.fatalf(t, "stream events %q with text %q; want Anthropic's raw events carrying %q", got, text, "Hello streamed")
		}
		if inits != 1 {
			r.fatalf(t, "system/init sent %d times, want once for the one query", inits)
		}
		a := r.find(t, "an assistant message", func(m sdkMessage) bool { return m.Type == "assistant" })
		if a.Message == nil || len(a.Message.Usage) == 0 {
			r.fatalf(t, "assistant message without usage")
		}
		res := r.result(t)
		if mu, ok := res.ModelUsage["claude-test"]; !ok || mu.OutputTokens == 0 {
			r.fatalf(t, "result modelUsage %+v; want claude-test with its tokens", res.ModelUsage)
		}
	})

	t.Run("refused-option", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer(llmtest.Turn{Text: "never"})
		r := h.driveOptions(t, srv, driverOptions{Options: map[string]any{"fallbackModel": "claude-other"}})
		if end := r.end(t); end.Driver != "error" || !strings.Contains(end.Message, "--fallback-model") {
			r.fatalf(t, "driver ended with %s %q; want an error naming --fallback-model", end.Driver, end.Message)
		}
		if n := len(srv.Requests()); n != 0 {
			r.fatalf(t, "model requests = %d, want 0", n)
		}
	})

	t.Run("sessions", func(t *testing.T) {
		t.Parallel()
		srv1, srv2, srv3 := llmtest.NewServer(llmtest.Turn{Text: "first"}), llmtest.NewServer(llmtest.Turn{Text: "forked"}), llmtest.NewServer(llmtest.Turn{Text: "continued"})
		// One workspace: --continue continues the latest conversation of
		// the workspace it runs in, as Claude Code's does.
		home, state := t.TempDir(), map[string]string{"XDG_STATE_HOME": t.TempDir()}
		const id = "6f1c2a9e-3b4d-4e5f-8a7b-9c0d1e2f3a4b"
		r1 := h.runIn(t, home, "options", srv1, nil, state, driverOptions{Prompt: "one", Options: map[string]any{"sessionId": id}})
		r1.requireDone(t)
		if res := r1.result(t); res.SessionID != id {
			r1.fatalf(t, "session_id %q, want the sessionId option %q", res.SessionID, id)
		}
		r2 := h.runIn(t, home, "options", srv2, nil, state, driverOptions{Prompt: "two", Options: map[string]any{"resume": id, "forkSession": true}})
		r2.requireDone(t)
		forked := r2.result(t).SessionID
		if forked == id || !isUUID(forked) {
			r2.fatalf(t, "forked session_id %q; want a new UUID", forked)
		}
		if got := len(srv2.Requests()[0].Messages); got != 3 {
			r2.fatalf(t, "the forked turn sent %d messages, want 3 (the first exchange and the new prompt)", got)
		}
		r3 := h.runIn(t, home, "options", srv3, nil, state, driverOptions{Prompt: "three", Options: map[string]any{"continue": true}})
		r3.requireDone(t)
		if got := r3.result(t).SessionID; got != forked {
			r3.fatalf(t, "continue used session %q, want the latest, %q", got, forked)
		}
		// The original is untouched by the fork and the continuation.
		if got := len(srv3.Requests()[0].Messages); got != 5 {
			r3.fatalf(t, "the continued turn sent %d messages, want 5", got)
		}
		// The first prompt names the conversation (arbor sessions, ACP's
		// session/list); its fork is the same conversation, named alike.
		st, err := sqlite.Open(context.Background(), filepath.Join(state["XDG_STATE_HOME"], "arbor", "arbor.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		for _, sid := range []string{id, forked} {
			if s, err := st.GetSession(context.Background(), sid); err != nil || s.Title != "one" {
				t.Fatalf("session %s: title %q (%v); want %q, its conversation's first prompt", sid, s.Title, err, "one")
			}
		}
	})
}

func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range s {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if c != '-' {
				return false
			}
		} else if !strings.ContainsRune("0123456789abcdef", c) {
			return false
		}
	}
	return true
}
