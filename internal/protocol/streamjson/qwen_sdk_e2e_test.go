//go:build unix

package streamjson_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
)

// TestQwenSDK drives the built arbor binary through the real Qwen Code
// SDK (@qwen-code/sdk from npm, pinned in testdata/qwen-sdk), with
// pathToQwenExecutable set to the binary and no wrapper: query() spawns
// arbor with the SDK's own argv, and arbor must recognise the launch and
// speak the qwen CLI's dialect. The model is llmtest's OpenAI endpoint.
func TestQwenSDK(t *testing.T) {
	t.Parallel()
	h := setupQwen(t)
	shell := func(id, cmd string) llmtest.Turn {
		return llmtest.Turn{ToolCalls: []llmtest.ToolCall{{ID: id, Name: "run_shell_command", Input: map[string]any{"command": cmd, "is_background": false}}}}
	}
	sessionOf := func(t *testing.T, r *qwenRun) string {
		t.Helper()
		s := r.driver("session")
		if len(s) != 1 || str(s[0], "session_id") == "" {
			r.fatalf(t, "the driver recorded no session id")
		}
		return str(s[0], "session_id")
	}

	t.Run("plain", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer(llmtest.Turn{Text: "Hello from arbor"})
		r := h.run(t, t.TempDir(), srv, qwenOptions{}, nil)
		r.requireDone(t)
		sid := sessionOf(t, r)
		init := r.find(t, "system/init", isType("system", "init"))
		if str(init, "session_id") != sid || str(init, "model") != qwenModel || init["permission_mode"] == nil || init["permissionMode"] != nil {
			r.fatalf(t, "init = %v; want the SDK's session id %s, model %s, permission_mode (qwen's spelling)", init, sid, qwenModel)
		}
		res := r.results()
		if len(res) != 1 || res[0]["subtype"] != "success" || res[0]["is_error"] != false || str(res[0], "result") != "Hello from arbor" || str(res[0], "session_id") != sid {
			r.fatalf(t, "results = %v; want one success with the text and the SDK's session id", res)
		}
		if n := len(srv.Requests()); n != 1 || !strings.Contains(srv.Requests()[0].LastUserText(), "Say hello") {
			r.fatalf(t, "model requests = %d, want 1 with the prompt", n)
		}
	})

	t.Run("canUseTool approves run_shell_command", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer(shell("call_1", "echo hi > ran.txt"), llmtest.Turn{Text: "ran"})
		r := h.run(t, t.TempDir(), srv, qwenOptions{Prompt: "Run it", CanUseTool: "allow", Options: map[string]any{"permissionMode": "default"}}, nil)
		r.requireDone(t)
		asked := r.driver("can_use_tool")
		if len(asked) != 1 || str(asked[0], "tool_name") != "run_shell_command" || str(asked[0], "input.command") != "echo hi > ran.txt" {
			r.fatalf(t, "canUseTool calls = %v; want one for run_shell_command with its command", asked)
		}
		if b, err := os.ReadFile(filepath.Join(r.workspace, "ran.txt")); err != nil || string(b) != "hi\n" {
			r.fatalf(t, "ran.txt = %q, %v; the approved command did not run", b, err)
		}
		res := r.results()
		if len(res) != 1 || res[0]["subtype"] != "success" || str(res[0], "result") != "ran" {
			r.fatalf(t, "results = %v, want success", res)
		}
	})

	t.Run("interrupt mid-turn", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer(llmtest.Turn{Text: "Once upon a time there was a very long story.", Fault: &llmtest.Fault{Kind: llmtest.FaultStall, AfterEvents: 2}})
		r := h.run(t, t.TempDir(), srv, qwenOptions{Prompt: "Tell me a story", Interrupt: "go"}, func() { srv.WaitRequests(1) })
		r.requireDone(t)
		requireInterrupted(t, r)
		if n := len(srv.Requests()); n != 1 {
			r.fatalf(t, "model requests = %d, want 1", n)
		}
	})

	t.Run("interrupt right behind the prompt", func(t *testing.T) {
		t.Parallel()
		// Slow, so that a turn that did start cannot finish before the
		// interrupt is read.
		srv := llmtest.NewServer(llmtest.Turn{Text: "must not be asked",
			Fault: &llmtest.Fault{Kind: llmtest.FaultSlow, Delay: llmtest.Duration(2 * time.Second)}})
		r := h.run(t, t.TempDir(), srv, qwenOptions{Prompt: "Tell me a story", Interrupt: "early"}, nil)
		r.requireDone(t)
		requireInterrupted(t, r)
		// Before the turn started (no model call) or just after it (the
		// call cancelled): either way the turn ends interrupted.
		if n := len(srv.Requests()); n > 1 {
			r.fatalf(t, "model requests = %d, want at most 1", n)
		}
	})

	t.Run("permissionMode auto", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer(llmtest.Turn{ToolCalls: []llmtest.ToolCall{{ID: "call_w", Name: "write_file", Input: map[string]any{"file_path": "made.txt", "content": "x"}}}}, llmtest.Turn{Text: "written"})
		r := h.run(t, t.TempDir(), srv, qwenOptions{Prompt: "Write it", CanUseTool: "allow", Options: map[string]any{"permissionMode": "auto"}}, nil)
		r.requireDone(t)
		if init := r.find(t, "system/init", isType("system", "init")); str(init, "permission_mode") != "auto" {
			r.fatalf(t, "init.permission_mode = %q, want auto", str(init, "permission_mode"))
		}
		// auto runs as auto-edit: the edit needs no approval.
		if n := len(r.driver("can_use_tool")); n != 0 {
			r.fatalf(t, "canUseTool was called %d times in auto mode for an edit", n)
		}
		if b, err := os.ReadFile(filepath.Join(r.workspace, "made.txt")); err != nil || string(b) != "x" {
			r.fatalf(t, "made.txt = %q, %v", b, err)
		}
	})

	t.Run("includePartialMessages", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer(llmtest.Turn{Text: "Hello streamed"})
		r := h.run(t, t.TempDir(), srv, qwenOptions{Options: map[string]any{"includePartialMessages": true}}, nil)
		r.requireDone(t)
		var kinds []string
		var text strings.Builder
		for _, m := range r.messages() {
			if m["type"] != "stream_event" {
				continue
			}
			ev, _ := m["event"].(map[string]any)
			if ev["subtype"] != nil {
				r.fatalf(t, "a cosh-shaped stream event %v; the SDK reads Anthropic's", ev)
			}
			kinds = append(kinds, str(ev, "type"))
			if str(ev, "type") == "content_block_delta" && str(ev, "delta.type") == "text_delta" {
				text.WriteString(str(ev, "delta.text"))
			}
		}
		for _, want := range []string{"message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_stop"} {
			if !slices.Contains(kinds, want) {
				r.fatalf(t, "stream events %q lack %s", kinds, want)
			}
		}
		if slices.Contains(kinds, "message_delta") || text.String() != "Hello streamed" {
			r.fatalf(t, "stream events %q, text %q; want no message_delta (qwen's SDK has none) and the whole text", kinds, text.String())
		}
	})

	t.Run("all nine control methods", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer(llmtest.Turn{Text: "ready"})
		methods := []string{"supported_commands", "mcp_server_status", "get_context_usage", "set_effort", "get_available_models",
			"get_usage_info", "set_permission_mode", "set_model", "continue_last_turn"}
		r := h.run(t, t.TempDir(), srv, qwenOptions{Model: qwenModel, Controls: methods}, nil)
		r.requireDone(t)
		got := r.driver("control")
		if len(got) != len(methods) {
			r.fatalf(t, "%d control answers, want %d", len(got), len(methods))
		}
		for i, m := range got {
			if str(m, "method") != methods[i] || m["error"] != nil {
				r.fatalf(t, "control %s answered %v; want an answer, not an error", methods[i], m)
			}
		}
		reply := func(i int) map[string]any { r, _ := got[i]["reply"].(map[string]any); return r }
		if str(reply(2), "modelName") != qwenModel || !positive(reply(2)["totalTokens"]) {
			r.fatalf(t, "get_context_usage = %v; want the model and the tokens of the turn", reply(2))
		}
		if reply(3)["applied"] != false || str(reply(3), "reason") == "" {
			r.fatalf(t, "set_effort = %v; want applied false with the reason", reply(3))
		}
		if sum, _ := reply(5)["summary"].(map[string]any); sum == nil || !positive(sum["totalTokens"]) {
			r.fatalf(t, "get_usage_info = %v; want the session's tokens", reply(5))
		}
		if reply(8)["accepted"] != false || str(reply(8), "interruption") != "none" {
			r.fatalf(t, "continue_last_turn = %v; nothing was interrupted", reply(8))
		}
	})

	t.Run("continue_last_turn after an interrupt", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer(
			llmtest.Turn{Text: "Once upon a time there was a very long story.", Fault: &llmtest.Fault{Kind: llmtest.FaultStall, AfterEvents: 2}},
			llmtest.Turn{Text: "continued"},
		)
		r := h.run(t, t.TempDir(), srv, qwenOptions{Prompt: "Tell me a story", Interrupt: "go", Controls: []string{"continue_last_turn"}}, func() { srv.WaitRequests(1) })
		r.requireDone(t)
		c := r.driver("control")
		if len(c) != 1 || c[0]["reply"] == nil || c[0]["reply"].(map[string]any)["accepted"] != true {
			r.fatalf(t, "continue_last_turn answered %v, want accepted", c)
		}
		res := r.results()
		if len(res) != 2 || res[0]["is_error"] != true || res[1]["subtype"] != "success" || str(res[1], "result") != "continued" {
			r.fatalf(t, "results = %v; want the interrupted turn, then the continuation's success", res)
		}
	})

	t.Run("resume by the SDK's session id after the process exited", func(t *testing.T) {
		t.Parallel()
		home := t.TempDir()
		const id = "0b7e8d2c-5a41-4f6e-9c3d-2e1f0a9b8c7d"
		first := h.run(t, home, llmtest.NewServer(llmtest.Turn{Text: "first"}), qwenOptions{Prompt: "remember 42", Options: map[string]any{"sessionId": id}}, nil)
		first.requireDone(t)
		if res := first.results(); len(res) != 1 || str(res[0], "session_id") != id {
			first.fatalf(t, "results = %v, want the session id the SDK chose", res)
		}
		srv := llmtest.NewServer(llmtest.Turn{Text: "resumed"})
		second := h.run(t, home, srv, qwenOptions{Prompt: "what was it?", Options: map[string]any{"resume": id}}, nil)
		second.requireDone(t)
		if res := second.results(); len(res) != 1 || str(res[0], "session_id") != id || str(res[0], "result") != "resumed" {
			second.fatalf(t, "results = %v, want success in session %s", res, id)
		}
		if reqs := srv.Requests(); len(reqs) != 1 || len(reqs[0].Messages) < 3 || !strings.Contains(reqs[0].Messages[0].Text(), "remember 42") {
			second.fatalf(t, "the resumed session's request does not carry the first exchange: %+v", reqs)
		}
	})

	// The SDK sends mcpServers in initialize: the external one is started
	// at launch, the in-process one answers over mcp_message.
	t.Run("mcpServers", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer(llmtest.Turn{ToolCalls: []llmtest.ToolCall{
			{ID: "call_s", Name: "mcp__files__shout", Input: map[string]any{"text": "hi"}},
			{ID: "call_a", Name: "mcp__calc__add", Input: map[string]any{"a": 2, "b": 3}},
		}}, llmtest.Turn{Text: "done"})
		r := h.run(t, t.TempDir(), srv, qwenOptions{Prompt: "Use the tools", CanUseTool: "allow", MCP: true, Controls: []string{"mcp_server_status"}}, nil)
		r.requireDone(t)
		reqs := srv.Requests()
		if len(reqs) != 2 {
			r.fatalf(t, "model requests = %d, want 2", len(reqs))
		}
		var results []string
		for _, m := range reqs[1].Messages {
			for _, p := range m.Parts {
				if p.ToolResult != nil {
					results = append(results, p.ToolResult.Content)
				}
			}
		}
		if got := strings.Join(results, " | "); !strings.Contains(got, "HI!") || !strings.Contains(got, "sum: 5") {
			r.fatalf(t, "tool results sent to the model: %q; want both servers' answers", got)
		}
		st := r.driver("control")
		if len(st) != 1 || str(st[0], "reply.status.files") != "connected" || str(st[0], "reply.status.calc") != "connected" {
			r.fatalf(t, "mcp_server_status = %v; want files and calc connected", st)
		}
	})

	t.Run("flags", func(t *testing.T) {
		t.Parallel()
		t.Run("systemPrompt replaces, coreTools and excludeTools choose the tools", func(t *testing.T) {
			t.Parallel()
			srv := llmtest.NewServer(llmtest.Turn{Text: "ok"})
			r := h.run(t, t.TempDir(), srv, qwenOptions{Options: map[string]any{"systemPrompt": "You are the test bot.",
				"coreTools": []string{"read_file", "run_shell_command", "grep_search"}, "excludeTools": []string{"grep_search"}}}, nil)
			r.requireDone(t)
			if got := srv.Requests()[0].System; got != "You are the test bot." {
				r.fatalf(t, "system prompt = %q, want the client's", got)
			}
			init := r.find(t, "system/init", isType("system", "init"))
			if tools, _ := json.Marshal(init["tools"]); string(tools) != `["read_file","run_shell_command"]` {
				r.fatalf(t, "init.tools = %s, want read_file and run_shell_command", tools)
			}
		})
		t.Run("maxToolCalls 0 refuses the call and ends the turn", func(t *testing.T) {
			t.Parallel()
			srv := llmtest.NewServer(shell("call_c", "echo x > ran.txt"), llmtest.Turn{Text: "must not be asked"})
			r := h.run(t, t.TempDir(), srv, qwenOptions{Prompt: "Run it", Options: map[string]any{"maxToolCalls": 0, "permissionMode": "yolo"}}, nil)
			r.requireDone(t)
			if _, err := os.Stat(filepath.Join(r.workspace, "ran.txt")); !os.IsNotExist(err) {
				r.fatalf(t, "ran.txt exists: a call past --max-tool-calls ran")
			}
			res := r.results()
			if len(res) != 1 || res[0]["is_error"] != true || !strings.Contains(str(res[0], "error.message"), "--max-tool-calls") {
				r.fatalf(t, "results = %v; want an error naming --max-tool-calls", res)
			}
		})
		t.Run("includeDirectories are writable roots", func(t *testing.T) {
			t.Parallel()
			extra := t.TempDir()
			target := filepath.Join(extra, "out.txt")
			srv := llmtest.NewServer(llmtest.Turn{ToolCalls: []llmtest.ToolCall{{ID: "call_d", Name: "write_file", Input: map[string]any{"file_path": target, "content": "y"}}}}, llmtest.Turn{Text: "done"})
			r := h.run(t, t.TempDir(), srv, qwenOptions{Prompt: "Write there", Options: map[string]any{"permissionMode": "auto-edit", "includeDirectories": []string{extra}}}, nil)
			r.requireDone(t)
			if b, err := os.ReadFile(target); err != nil || string(b) != "y" {
				r.fatalf(t, "%s = %q, %v; a write in an included directory was refused", target, b, err)
			}
		})
	})

	t.Run("argv arbor cannot honour is refused by name", func(t *testing.T) {
		t.Parallel()
		for _, tt := range []struct {
			args []string
			want []string
		}{
			{[]string{"--approval-mode", "sometimes"}, []string{`"sometimes"`, "default", "auto-edit", "plan"}},
			{[]string{"--fallback-model", "a"}, []string{"--fallback-model", "fallbackModel"}},
			{[]string{"--no-such-option"}, []string{"--no-such-option"}},
		} {
			args := append([]string{"--input-format", "stream-json", "--output-format", "stream-json", "--channel=SDK"}, tt.args...)
			ctx, cancel := context.WithTimeout(context.Background(), sdkDriverTimeout)
			c := exec.CommandContext(ctx, h.bin, args...)
			home := t.TempDir()
			c.Env = []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, "c"), "XDG_STATE_HOME=" + filepath.Join(home, "s"), "OPENAI_API_KEY=k"}
			var stderr bytes.Buffer
			c.Stderr = &stderr
			err := c.Run()
			cancel()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 2 {
				t.Fatalf("arbor %q: %v, want exit 2", tt.args, err)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr.String(), w) {
					t.Fatalf("arbor %q said %q; want it to name %s", tt.args, stderr.String(), w)
				}
			}
		}
	})
}

// requireInterrupted requires that the run's one turn ended as
// interrupted, in the shape the SDK's error result has.
func requireInterrupted(t *testing.T, r *qwenRun) {
	t.Helper()
	if len(r.driver("interrupted")) != 1 {
		r.fatalf(t, "q.interrupt() did not resolve")
	}
	res := r.results()
	if len(res) != 1 || res[0]["subtype"] != "error_during_execution" || res[0]["is_error"] != true ||
		!strings.Contains(str(res[0], "error.message"), "interrupted") {
		r.fatalf(t, "results = %v; want one error_during_execution with error.message saying it was interrupted", res)
	}
}

// positive reports whether a decoded JSON value is a number above 0.
func positive(v any) bool {
	f, ok := v.(float64)
	return ok && f > 0
}
