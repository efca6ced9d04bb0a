package hook_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/hook"
	"github.com/arbor-run/arbor/internal/tool"
)

// script writes an executable shell script into dir and returns the
// command that runs it.
func script(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pre := hook.Input{HookEventName: "PreToolUse", ToolName: "shell", ToolInput: json.RawMessage(`{"command":"rm -rf /tmp/x"}`), ToolUseID: "c1"}
	t.Run("stdin-is-claude-codes", func(t *testing.T) {
		t.Parallel()
		out := filepath.Join(dir, "stdin.json")
		c := &hook.Command{Command: "cat > " + out, Dir: dir, ClaudeCode: true}
		read := hook.Input{HookEventName: "PreToolUse", ToolName: "read_file", ToolInput: json.RawMessage(`{"path":"a.go"}`)}
		if _, err := c.Call(t.Context(), read); err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		b, _ := os.ReadFile(out)
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("stdin %q: %v", b, err)
		}
		if got["tool_name"] != "Read" || got["tool_input"].(map[string]any)["file_path"] != "a.go" || got["hook_event_name"] != "PreToolUse" {
			t.Fatalf("the hook read %v; want Claude Code's tool name and arguments", got)
		}
	})
	t.Run("exit-2-blocks-with-stderr", func(t *testing.T) {
		t.Parallel()
		c := &hook.Command{Command: script(t, dir, "block.sh", "cat >/dev/null; echo 'rm is not allowed here' >&2; exit 2\n"), Dir: dir}
		out, err := c.Call(t.Context(), pre)
		if err != nil || out.Decision != "block" || out.Reason != "rm is not allowed here" || out.HookSpecificOutput.PermissionDecision != "deny" {
			t.Fatalf("out %+v, err %v; want a block with the stderr as reason", out, err)
		}
	})
	t.Run("json-decision-and-updated-input", func(t *testing.T) {
		t.Parallel()
		c := &hook.Command{Dir: dir, ClaudeCode: true, Command: script(t, dir, "json.sh",
			`cat >/dev/null; echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no","updatedInput":{"file_path":"b.go"}}}'`+"\n")}
		out, err := c.Call(t.Context(), hook.Input{HookEventName: "PreToolUse", ToolName: "read_file", ToolInput: json.RawMessage(`{"path":"a.go"}`)})
		if err != nil || out.HookSpecificOutput.PermissionDecision != "deny" || string(out.HookSpecificOutput.UpdatedInput) != `{"path":"b.go"}` {
			t.Fatalf("out %+v, err %v", out, err)
		}
	})
	for _, c := range []struct {
		name, body string
		timeout    time.Duration
		want       string
	}{
		{"exit-1", "echo 'lint crashed' >&2; exit 1\n", 0, "exited with status 1: lint crashed"},
		{"timeout", "sleep 30\n", 300 * time.Millisecond, "timed out after 300ms and was killed"},
		{"broken-json", "echo '{\"decision\": '\n", 0, "printed output that is not valid JSON"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h := &hook.Command{Command: script(t, dir, c.name+".sh", c.body), Dir: dir, Timeout: c.timeout, Source: ".claude/settings.json"}
			start := time.Now()
			out, err := h.Call(t.Context(), pre)
			if err != nil || out.Decision != "" || out.HookSpecificOutput.PermissionDecision != "" {
				t.Fatalf("out %+v, err %v; a broken hook must not decide", out, err)
			}
			if len(out.Notes) != 1 || !strings.Contains(out.Notes[0], c.want) || !strings.Contains(out.Notes[0], ".claude/settings.json") {
				t.Fatalf("notes %q; want one naming the source and saying %q", out.Notes, c.want)
			}
			if d := time.Since(start); d > 20*time.Second {
				t.Fatalf("the hook held the agent %s", d)
			}
		})
	}
	t.Run("missing-program", func(t *testing.T) {
		t.Parallel()
		h := &hook.Command{Command: filepath.Join(dir, "nope.sh"), Dir: dir}
		out, err := h.Call(t.Context(), pre)
		if err != nil || len(out.Notes) != 1 || !strings.Contains(out.Notes[0], "status 127") {
			t.Fatalf("out %+v, err %v", out, err)
		}
	})
	t.Run("plain-text-is-no-report", func(t *testing.T) {
		t.Parallel()
		// A formatter's chatter, or garbage, on exit 0: Claude Code shows
		// it to the person only; it is no verdict and no report.
		for _, body := range []string{"echo 'formatted 1 file'", "printf '\\001\\002 not json {'"} {
			h := &hook.Command{Command: body, Dir: dir}
			for _, in := range []hook.Input{pre, {HookEventName: "PostToolUse", ToolName: "shell"}, {HookEventName: "Stop"}} {
				out, err := h.Call(t.Context(), in)
				if err != nil || len(out.Notes) != 0 || out.Decision != "" || out.HookSpecificOutput.AdditionalContext != "" {
					t.Fatalf("%s on %s: out %+v, err %v; want nothing", body, in.HookEventName, out, err)
				}
			}
		}
	})
	t.Run("prompt-text-is-context", func(t *testing.T) {
		t.Parallel()
		h := &hook.Command{Command: "echo 'the build is red'", Dir: dir}
		out, err := h.Call(t.Context(), hook.Input{HookEventName: "UserPromptSubmit"})
		if err != nil || out.HookSpecificOutput.AdditionalContext != "the build is red" || len(out.Notes) != 0 {
			t.Fatalf("out %+v, err %v", out, err)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		h := &hook.Command{Command: "sleep 30", Dir: dir}
		if _, err := h.Call(ctx, pre); err == nil {
			t.Fatal("a cancelled call answered")
		}
	})
}

func TestFromSettings(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	block := script(t, dir, "block.sh", "cat >/dev/null; echo 'no Bash here' >&2; exit 2\n")
	var decl hook.Declared
	decl.Source = "/p/.claude/settings.json"
	if err := json.Unmarshal([]byte(`{
		"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "`+block+`", "timeout": 5}]},
		               {"matcher": "(", "hooks": [{"type": "command", "command": "true"}]}],
		"Stop": [{"hooks": [{"type": "prompt", "command": "x"}, {"type": "command"}]}],
		"OnBoot": [{"hooks": [{"type": "command", "command": "true"}]}]
	}`), &decl.Hooks); err != nil {
		t.Fatal(err)
	}
	set, problems := hook.FromSettings([]hook.Declared{decl}, hook.CommandOptions{Dir: dir})
	if len(set[hook.PreToolUse]) != 1 || len(set[hook.Stop]) != 0 {
		t.Fatalf("set %v", set)
	}
	want := []string{`hooks.PreToolUse[1]: hook matcher "("`, `type "prompt" is not supported`, "hooks.Stop[0].hooks[1]: no command", `hooks for "OnBoot": no such event`}
	if len(problems) != len(want) {
		t.Fatalf("problems %v; want %d", problems, len(want))
	}
	for i, w := range want {
		if !strings.Contains(problems[i].Error(), w) || !strings.Contains(problems[i].Error(), "/p/.claude/settings.json") {
			t.Errorf("problem %d = %v; want it to name the file and say %q", i, problems[i], w)
		}
	}
	var r hook.Runner
	r.Set(set)
	res := (&hook.Tool{Tool: echo(), Hooks: &r}).Run(t.Context(), tool.Call{ID: "c1", Input: json.RawMessage(`{"command":"ls"}`)})
	if !res.IsError || !strings.Contains(res.Content, "no Bash here") {
		t.Fatalf("result %+v; want the hook's block", res)
	}
}
