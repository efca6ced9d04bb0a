package app_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/config"
	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/testutil"
	"github.com/arbor-run/arbor/internal/tool"
)

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if strings.HasSuffix(p, ".sh") {
			mode = 0o755
		}
		if err := os.WriteFile(full, []byte(c), mode); err != nil {
			t.Fatal(err)
		}
	}
}

// openIn opens an App working in ws with o (its Workspace and Getenv
// set here), for a user whose home is home, against the scripted model
// server at url when url is not empty; the App closes with the test.
func openIn(t *testing.T, home, ws, url string, o app.Options) *app.App {
	t.Helper()
	env := map[string]string{"XDG_CONFIG_HOME": filepath.Join(home, "config"), "XDG_STATE_HOME": filepath.Join(home, "state"), "HOME": home}
	if url != "" {
		env["ANTHROPIC_API_KEY"], env["ANTHROPIC_BASE_URL"] = "sk-test-0123456789", url
	}
	o.Workspace, o.Getenv = ws, func(k string) string { return env[k] }
	a, err := app.Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	return a
}

func call(id, name, input string) llmtest.Turn {
	return llmtest.Turn{ToolCalls: []llmtest.ToolCall{{ID: id, Name: name, Input: rawInput(input)}}}
}

// TestProjectFiles: a session of a project whose files are partly bad
// gets the instructions (cut at the cap), runs the settings' hooks and
// rules, reports every bad thing, and goes on to the end of its turn.
func TestProjectFiles(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	ws := filepath.Join(home, "repo")
	writeFiles(t, ws, map[string]string{
		".git/HEAD":                      "ref: refs/heads/main\n",
		"AGENTS.md":                      "Always run the linter before you finish.\n" + strings.Repeat("filler line of a huge AGENTS.md\n", 5<<20/32+1),
		".claude/skills/broken/SKILL.md": "---\nname: broken\nno closing line\n",
		".claude/settings.json": `{"permissions": {"deny": ["Read(./.env)"]},
		  "hooks": {"PreToolUse": [
		    {"matcher": "Bash", "hooks": [{"type": "command", "command": "./hooks/no-rm.sh"}]},
		    {"matcher": "Read", "hooks": [{"type": "command", "command": "./hooks/crash.sh"}]},
		    {"matcher": "Glob", "hooks": [{"type": "command", "command": "sleep 30", "timeout": 0.3}]},
		    {"matcher": "LS", "hooks": [{"type": "command", "command": "echo '{\"decision\": }'"}]}]}}`,
		"hooks/no-rm.sh": "#!/bin/sh\ngrep -q '\"rm ' && { echo 'rm is forbidden in this repo' >&2; exit 2; }\nexit 0\n",
		"hooks/crash.sh": "#!/bin/sh\necho 'the hook crashed' >&2\nexit 1\n",
		".env":           "SECRET=1\n",
		"ok.txt":         "fine\n",
	})
	srv := llmtest.NewServer(
		call("c1", "shell", `{"command":"rm -rf build"}`),
		call("c2", "read_file", `{"path":".env"}`),
		call("c3", "read_file", `{"path":"ok.txt"}`),
		call("c4", "glob", `{"pattern":"*.txt"}`),
		call("c5", "list_directory", `{}`),
		llmtest.Turn{Text: "done"},
	)
	defer srv.Close()
	a := openIn(t, home, ws, srv.URL, app.Options{Overrides: config.Overrides{Mode: "trust"}})
	warnings := strings.Join(a.Warnings(), "\n")
	for _, w := range []string{filepath.Join(ws, "AGENTS.md") + " is ", "capped at 65536 bytes", filepath.Join(ws, ".claude/skills/broken/SKILL.md") + ": the front matter has no closing"} {
		if !strings.Contains(warnings, w) {
			t.Errorf("warnings lack %q:\n%s", w, warnings)
		}
	}
	s, err := a.NewSession(context.Background(), app.SessionOptions{Model: "anthropic/claude-test"})
	if err != nil {
		t.Fatal(err)
	}
	res := s.Agent.Send(context.Background(), llm.UserText("go"))
	if res.Outcome != agent.OutcomeCompleted || res.Text != "done" {
		t.Fatalf("result %+v", res)
	}
	reqs := srv.Requests()
	if len(reqs) != 6 {
		t.Fatalf("%d requests", len(reqs))
	}
	if sys := reqs[0].System; !strings.Contains(sys, "Always run the linter before you finish.") || len(sys) > 80<<10 {
		t.Fatalf("the system prompt (%d bytes) lacks the AGENTS.md text or is not capped", len(sys))
	}
	for i, want := range []string{
		"a PreToolUse hook denied this call: rm is forbidden in this repo",
		"denies it", // trust mode, yet .claude/settings.json's deny rule
		"fine",      // ran, despite the crashing hook…
		"hooks/crash.sh\" (from " + filepath.Join(ws, ".claude/settings.json") + ") exited with status 1: the hook crashed",
		"timed out after 300ms and was killed",  // glob ran
		"printed output that is not valid JSON", // list_directory ran
	} {
		n := i + 1
		if i >= 3 {
			n = i
		}
		if got := reqs[n].LastUserText(); !strings.Contains(got, want) {
			t.Errorf("request %d: the tool result %q lacks %q", n, got, want)
		}
	}
	if got := reqs[4].LastUserText(); !strings.Contains(got, "ok.txt") {
		t.Errorf("glob did not run after its hook timed out: %q", got)
	}
}

func rawInput(s string) map[string]any {
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		panic(err)
	}
	return m
}

func TestExpandGoal(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	writeFiles(t, home, map[string]string{".claude/commands/review.md": "Review $ARGUMENTS.\n"})
	b := setupIn(t, home, map[string]string{"HOME": home, "XDG_CONFIG_HOME": filepath.Join(home, "config"), "XDG_STATE_HOME": filepath.Join(home, "state")})
	for in, want := range map[string]string{"/review main.go": "Review main.go.", "/nope x": "/nope x", "fix the bug": "fix the bug"} {
		if got := b.app.ExpandGoal(in); got != want {
			t.Errorf("ExpandGoal(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestStopAndCompactHooks: the project's Stop hook sends a completed
// turn back once with its stderr (exit 2), then lets it end; PreCompact
// hooks hear of a compaction with its trigger.
func TestStopAndCompactHooks(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	ws := filepath.Join(home, "repo")
	writeFiles(t, ws, map[string]string{
		".claude/settings.json": `{"hooks": {
		  "Stop": [{"hooks": [{"type": "command", "command": "./hooks/stop.sh"}]}],
		  "PreCompact": [{"matcher": "manual", "hooks": [{"type": "command", "command": "cat > compact.json"}]}]}}`,
		"hooks/stop.sh": "#!/bin/sh\nin=$(cat)\necho \"$in\" >> stop.jsonl\necho \"$in\" | grep -q '\"stop_hook_active\":false' && { echo 'run the tests first' >&2; exit 2; }\nexit 0\n",
	})
	srv := llmtest.NewServer(
		llmtest.Turn{Text: "first"}, llmtest.Turn{Text: "second"},
		llmtest.Turn{Text: "next"}, llmtest.Turn{Text: "fine"},
		llmtest.Turn{Text: "the summary"},
	)
	defer srv.Close()
	env := map[string]string{"ANTHROPIC_API_KEY": "sk-test-0123456789", "ANTHROPIC_BASE_URL": srv.URL,
		"XDG_CONFIG_HOME": filepath.Join(home, "config"), "XDG_STATE_HOME": filepath.Join(home, "state"), "HOME": home}
	b := setupIn(t, ws, env)
	s, err := b.app.NewSession(context.Background(), app.SessionOptions{Model: "anthropic/claude-test"})
	if err != nil {
		t.Fatal(err)
	}
	res := s.Agent.Send(context.Background(), llm.UserText("go"))
	if res.Outcome != agent.OutcomeCompleted || res.Text != "second" {
		t.Fatalf("result %+v", res)
	}
	if got := srv.Requests()[1].LastUserText(); got != "Stop hook feedback: run the tests first" {
		t.Fatalf("the second request's last message %q", got)
	}
	if res := s.Agent.Send(context.Background(), llm.UserText("more")); res.Text != "fine" { // sent back once again
		t.Fatalf("second turn %+v", res)
	}
	// Each Stop hook read the answer it was asked about, as Claude
	// Code's last_assistant_message.
	stops, err := os.ReadFile(filepath.Join(ws, "stop.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var lasts []string
	for l := range strings.Lines(string(stops)) {
		var in struct {
			Last *string `json:"last_assistant_message"`
		}
		if err := json.Unmarshal([]byte(l), &in); err != nil || in.Last == nil {
			t.Fatalf("a Stop hook read %q (%v)", l, err)
		}
		lasts = append(lasts, *in.Last)
	}
	if got := strings.Join(lasts, ","); got != "first,second,next,fine" {
		t.Fatalf("the Stop hooks' last_assistant_message: %s", got)
	}
	if _, err := s.Agent.Compact(context.Background(), ""); err != nil {
		t.Fatal(err)
	}
	in, err := os.ReadFile(filepath.Join(ws, "compact.json"))
	if err != nil || !strings.Contains(string(in), `"hook_event_name":"PreCompact"`) || !strings.Contains(string(in), `"trigger":"manual"`) {
		t.Fatalf("the PreCompact hook read %q (%v)", in, err)
	}
}

// TestPromptHooks: SessionStart's text and UserPromptSubmit's context go
// before the prompt, a broken hook is a report beside it, and exit 2
// refuses the prompt with the hook's stderr.
func TestPromptHooks(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	ws := filepath.Join(home, "repo")
	writeFiles(t, ws, map[string]string{
		".claude/settings.json": `{"hooks": {
		  "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "echo 'branch: main, 2 failing tests'"}]}],
		  "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "./hooks/prompt.sh"}, {"type": "command", "command": "echo '{broken'"}]}]}}`,
		"hooks/prompt.sh": "#!/bin/sh\nif grep -q 'deploy'; then echo 'no deploys on Friday' >&2; exit 2; fi\necho '{\"hookSpecificOutput\":{\"hookEventName\":\"UserPromptSubmit\",\"additionalContext\":\"ticket ABC-1\"}}'\n",
	})
	b := setupIn(t, ws, map[string]string{"HOME": home, "XDG_CONFIG_HOME": filepath.Join(home, "config"), "XDG_STATE_HOME": filepath.Join(home, "state")})
	got, err := b.app.PromptHooks(context.Background(), "s1", "startup", "fix the tests")
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(got, "\n\n")
	if len(parts) != 4 || parts[0] != "branch: main, 2 failing tests" || parts[1] != "ticket ABC-1" ||
		!strings.Contains(parts[2], `hook "echo '{broken'"`) || !strings.Contains(parts[2], "printed output that is not valid JSON") || parts[3] != "fix the tests" {
		t.Fatalf("prompt %q", got)
	}
	if got, err := b.app.PromptHooks(context.Background(), "s1", "", "plain"); err != nil || strings.Contains(got, "branch: main") {
		t.Fatalf("without a source SessionStart must not run: %q, %v", got, err)
	}
	if _, err := b.app.PromptHooks(context.Background(), "s1", "", "deploy now"); err == nil || !strings.Contains(err.Error(), "no deploys on Friday") {
		t.Fatalf("err = %v; want the hook's block", err)
	}
}

// TestNotificationHook: an approval the agent waits for runs the
// project's Notification hook with a message naming the tool.
func TestNotificationHook(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	ws := filepath.Join(home, "repo")
	fifo := filepath.Join(home, "notified")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, ws, map[string]string{
		".claude/settings.json": `{"hooks": {"Notification": [{"hooks": [{"type": "command", "command": "cat > ` + fifo + `"}]}]}}`,
	})
	srv := llmtest.NewServer(call("c1", "shell", `{"command":"echo hi"}`), llmtest.Turn{Text: "done"})
	defer srv.Close()
	a := openIn(t, home, ws, srv.URL, app.Options{Overrides: config.Overrides{Mode: "default", Sandbox: "off"}})
	sub := a.Bus.Subscribe(func(e agent.Event) {
		if ir, ok := e.(*agent.InteractionRequested); ok {
			_ = a.Broker.Resolve(ir.Interaction.ID, agent.Response{Approval: &tool.Approval{}}) // denied
		}
	})
	defer sub.Close()
	s, err := a.NewSession(context.Background(), app.SessionOptions{Model: "anthropic/claude-test"})
	if err != nil {
		t.Fatal(err)
	}
	read := make(chan []byte, 1)
	go func() {
		b, _ := os.ReadFile(fifo) // blocks until the hook writes and closes
		read <- b
	}()
	if res := s.Agent.Send(context.Background(), llm.UserText("go")); res.Text != "done" {
		t.Fatalf("result %+v", res)
	}
	var got []byte
	select {
	case got = <-read:
	case <-time.After(30 * time.Second): // hang guard
		t.Fatal("the Notification hook never ran")
	}
	if !strings.Contains(string(got), `"hook_event_name":"Notification"`) || !strings.Contains(string(got), "arbor needs your permission to use shell") || !strings.Contains(string(got), s.ID) {
		t.Fatalf("the Notification hook read %s", got)
	}
}

// TestStopHookReport: a Stop hook that fails does not stop the turn, and
// its report goes to Options.Diag, there being no turn to show it, with
// the configuration's secrets redacted (the hook's stderr had the key).
func TestStopHookReport(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	ws := filepath.Join(home, "repo")
	writeFiles(t, ws, map[string]string{
		".claude/settings.json": `{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "echo stop hook broke sk-test-0123456789 >&2; exit 1"}]}]}}`,
	})
	srv := llmtest.NewServer(llmtest.Turn{Text: "done"})
	defer srv.Close()
	env := map[string]string{"ANTHROPIC_API_KEY": "sk-test-0123456789", "ANTHROPIC_BASE_URL": srv.URL,
		"XDG_CONFIG_HOME": filepath.Join(home, "config"), "XDG_STATE_HOME": filepath.Join(home, "state"), "HOME": home}
	var diag strings.Builder
	a, err := app.Open(context.Background(), app.Options{Workspace: ws, Getenv: func(k string) string { return env[k] }, Diag: &diag})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	s, err := a.NewSession(context.Background(), app.SessionOptions{Model: "anthropic/claude-test"})
	if err != nil {
		t.Fatal(err)
	}
	if res := s.Agent.Send(context.Background(), llm.UserText("go")); res.Outcome != agent.OutcomeCompleted || res.Text != "done" {
		t.Fatalf("result %+v", res)
	}
	if got := diag.String(); strings.Contains(got, "sk-test-0123456789") || !strings.Contains(got, "arbor: warning: hook \"echo stop hook broke [REDACTED] >&2; exit 1\" (from "+filepath.Join(ws, ".claude/settings.json")+") exited with status 1: stop hook broke [REDACTED]") {
		t.Fatalf("diag %q", got)
	}
}

// TestSandboxedHooks: with sandbox.hooks, a settings hook runs confined
// (it cannot write outside the workspace) and still decides; without it,
// the same hook runs with the user's rights.
func TestSandboxedHooks(t *testing.T) {
	t.Parallel()
	for _, confined := range []bool{true, false} {
		home := t.TempDir()
		ws := filepath.Join(home, "repo")
		outside := filepath.Join("/var/tmp", "arbor-hook-escape-"+filepath.Base(home))
		t.Cleanup(func() { _ = os.Remove(outside) })
		writeFiles(t, ws, map[string]string{
			".claude/settings.json": `{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command",
			  "command": "echo hooked > ` + outside + `; echo 'the hook says no' >&2; exit 2"}]}]}}`,
		})
		writeFiles(t, filepath.Join(home, "config", "arbor"), map[string]string{"config.yaml": "sandbox:\n  hooks: " + map[bool]string{true: "true", false: "false"}[confined] + "\n"})
		srv := llmtest.NewServer(call("c1", "shell", `{"command":"echo hi"}`), llmtest.Turn{Text: "done"})
		defer srv.Close()
		env := map[string]string{"ANTHROPIC_API_KEY": "sk-test-0123456789", "ANTHROPIC_BASE_URL": srv.URL,
			"XDG_CONFIG_HOME": filepath.Join(home, "config"), "XDG_STATE_HOME": filepath.Join(home, "state"), "HOME": home}
		a, err := app.Open(context.Background(), app.Options{Workspace: ws, Getenv: func(k string) string { return env[k] },
			SandboxDefault: "required", Overrides: config.Overrides{Mode: "trust"}})
		if err != nil {
			t.Fatal(err)
		}
		s, err := a.NewSession(context.Background(), app.SessionOptions{Model: "anthropic/claude-test"})
		if err != nil {
			t.Fatal(err)
		}
		if res := s.Agent.Send(context.Background(), llm.UserText("go")); res.Outcome != agent.OutcomeCompleted {
			t.Fatalf("result %+v", res)
		}
		a.Close()
		if got := srv.Requests()[1].LastUserText(); !strings.Contains(got, "the hook says no") {
			t.Fatalf("confined=%v: the hook did not decide: %q", confined, got)
		}
		_, err = os.Stat(outside)
		if confined && err == nil {
			t.Fatal("a confined hook wrote outside the workspace")
		}
		if !confined && err != nil {
			t.Fatalf("an unconfined hook could not write its file: %v", err)
		}
	}
}

// TestHookContinueFalseStopsTheTurn: a project's command hook that
// answers continue: false ends the turn, failed with its stopReason, as
// Claude Code stops: the model is not asked again and the step's later
// call is not run. A PreToolUse stop refuses its call; a PostToolUse stop
// keeps its call's result. Before, the call was refused and the turn
// went on.
func TestHookContinueFalseStopsTheTurn(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ event, result string }{
		{"PreToolUse", "a PreToolUse hook denied this call: frozen"},
		{"PostToolUse", "hello"},
	} {
		t.Run(c.event, func(t *testing.T) {
			t.Parallel()
			home := t.TempDir()
			ws := filepath.Join(home, "repo")
			writeFiles(t, ws, map[string]string{
				".git/HEAD": "ref: refs/heads/main\n",
				"a.txt":     "hello\n",
				".claude/settings.json": `{"hooks": {"` + c.event + `": [{"matcher": "Read", "hooks": [{"type": "command",
				  "command": "echo '{\"continue\": false, \"stopReason\": \"frozen\"}'"}]}]}}`,
			})
			srv := llmtest.NewServer(
				llmtest.Turn{ToolCalls: []llmtest.ToolCall{
					{ID: "c1", Name: "read_file", Input: rawInput(`{"path":"a.txt"}`)},
					{ID: "c2", Name: "write_file", Input: rawInput(`{"path":"b.txt","content":"x"}`)},
				}},
				llmtest.Turn{Text: "must not be asked"},
			)
			defer srv.Close()
			a := openIn(t, home, ws, srv.URL, app.Options{Overrides: config.Overrides{Mode: "trust"}})
			s, err := a.NewSession(context.Background(), app.SessionOptions{Model: "anthropic/claude-test"})
			if err != nil {
				t.Fatal(err)
			}
			res := s.Agent.Send(context.Background(), llm.UserText("go"))
			if res.Outcome != agent.OutcomeFailed || res.Err == nil || !strings.Contains(res.Err.Error(), "a "+c.event+" hook stopped the turn: frozen") {
				t.Fatalf("result %+v; want the turn failed with the hook's stopReason", res)
			}
			if n := len(srv.Requests()); n != 1 {
				t.Fatalf("the model was asked %d times after the stop, want 1 call in all", n)
			}
			if _, err := os.Stat(filepath.Join(ws, "b.txt")); !os.IsNotExist(err) {
				t.Fatalf("the step's later call ran after the stop: %v", err)
			}
			msgs, err := a.Store.Messages(context.Background(), s.ID, 0)
			if err != nil {
				t.Fatal(err)
			}
			var results []string
			for _, m := range msgs {
				for _, p := range m.Message.Parts {
					if p.ToolResult != nil {
						results = append(results, p.ToolResult.Content)
					}
				}
			}
			if len(results) != 2 || !strings.Contains(results[0], c.result) || !strings.HasPrefix(results[1], "not run: a hook stopped the turn") {
				t.Fatalf("stored tool results %q; want %q, then the later call not run", results, c.result)
			}
		})
	}
}

// TestSessionEndHooks: a session's end runs the project's SessionEnd
// hooks with the reason; one that hangs is stopped after the budget
// (CLAUDE_CODE_SESSIONEND_HOOKS_TIMEOUT_MS, here 300 ms) and said so on
// stderr, and the session's end goes on.
func TestSessionEndHooks(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	ws := filepath.Join(home, "repo")
	writeFiles(t, ws, map[string]string{
		".claude/settings.json": `{"hooks": {"SessionEnd": [
		  {"matcher": "other", "hooks": [{"type": "command", "command": "cat > end.json"}]},
		  {"matcher": "clear", "hooks": [{"type": "command", "command": "touch cleared"}]},
		  {"hooks": [{"type": "command", "command": "exec sleep 30"}]}]}}`,
	})
	var diag testutil.SyncBuffer
	env := map[string]string{"HOME": home, "XDG_CONFIG_HOME": filepath.Join(home, "config"), "XDG_STATE_HOME": filepath.Join(home, "state"),
		"CLAUDE_CODE_SESSIONEND_HOOKS_TIMEOUT_MS": "300"}
	a, err := app.Open(context.Background(), app.Options{Workspace: ws, Getenv: func(k string) string { return env[k] }, Diag: &diag})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // an interrupted process's session ends too
	a.EndSession(ctx, "s1", "other")
	in, err := os.ReadFile(filepath.Join(ws, "end.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Event   string `json:"hook_event_name"`
		Session string `json:"session_id"`
		Reason  string `json:"reason"`
	}
	if err := json.Unmarshal(in, &got); err != nil || got.Event != "SessionEnd" || got.Session != "s1" || got.Reason != "other" {
		t.Fatalf("the SessionEnd hook read %s (%v)", in, err)
	}
	if _, err := os.Stat(filepath.Join(ws, "cleared")); err == nil {
		t.Fatal("the hook for the reason clear ran at an end for other")
	}
	if !strings.Contains(diag.String(), "the SessionEnd hooks were stopped after 300ms") {
		t.Fatalf("stderr %q; want the hanging hook reported", diag.String())
	}
}

// TestHooksReadTheTranscript: a hook's transcript_path is a JSONL file in
// Claude Code's shape: a PreToolUse hook finds the assistant message
// whose tool call it guards as the last line, a Stop hook the whole turn
// with the answer last, each line's parentUuid the line before.
func TestHooksReadTheTranscript(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	ws := filepath.Join(home, "repo")
	copyTo := func(name string) string {
		return `{"type": "command", "command": "p=$(sed 's/.*\"transcript_path\":\"\\([^\"]*\\)\".*/\\1/'); cp \"$p\" ` + name + `"}`
	}
	writeFiles(t, ws, map[string]string{
		".claude/settings.json": `{"hooks": {"PreToolUse": [{"hooks": [` + copyTo("pre.jsonl") + `]}], "Stop": [{"hooks": [` + copyTo("stop.jsonl") + `]}]}}`,
		"notes.txt":             "the notes\n",
	})
	srv := llmtest.NewServer(
		llmtest.Turn{ToolCalls: []llmtest.ToolCall{{ID: "toolu_1", Name: "read_file", Input: map[string]any{"path": "notes.txt"}}}},
		llmtest.Turn{Text: "The notes say hi."},
	)
	defer srv.Close()
	a := openIn(t, home, ws, srv.URL, app.Options{})
	s, err := a.NewSession(context.Background(), app.SessionOptions{Model: "anthropic/claude-test"})
	if err != nil {
		t.Fatal(err)
	}
	if res := s.Agent.Send(context.Background(), llm.UserText("what do the notes say?")); res.Outcome != agent.OutcomeCompleted {
		t.Fatalf("result %+v", res)
	}
	type line struct {
		Parent  *string `json:"parentUuid"`
		Type    string  `json:"type"`
		UUID    string  `json:"uuid"`
		Session string  `json:"sessionId"`
		Message struct {
			Role    string            `json:"role"`
			Content []json.RawMessage `json:"content"`
		} `json:"message"`
	}
	read := func(name string) []line {
		b, err := os.ReadFile(filepath.Join(ws, name))
		if err != nil {
			t.Fatal(err)
		}
		var out []line
		for l := range strings.Lines(string(b)) {
			var x line
			if err := json.Unmarshal([]byte(l), &x); err != nil {
				t.Fatalf("%s: %q: %v", name, l, err)
			}
			if x.Session != s.ID || x.Type != x.Message.Role || len(out) > 0 && (x.Parent == nil || *x.Parent != out[len(out)-1].UUID) {
				t.Fatalf("%s: line %s after %+v", name, l, out)
			}
			out = append(out, x)
		}
		return out
	}
	pre := read("pre.jsonl")
	if len(pre) != 2 || pre[0].Type != "user" || !strings.Contains(string(pre[0].Message.Content[0]), "what do the notes say?") ||
		pre[1].Type != "assistant" || !strings.Contains(string(pre[1].Message.Content[0]), `"type":"tool_use"`) {
		t.Fatalf("the PreToolUse hook's transcript: %+v", pre)
	}
	stop := read("stop.jsonl")
	if len(stop) != 4 || !strings.Contains(string(stop[2].Message.Content[0]), `"type":"tool_result"`) ||
		!strings.Contains(string(stop[2].Message.Content[0]), "the notes") || !strings.Contains(string(stop[3].Message.Content[0]), `"text":"The notes say hi."`) {
		t.Fatalf("the Stop hook's transcript: %+v", stop)
	}
}
