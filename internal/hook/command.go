package hook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/arbor-run/arbor/internal/tool"
	"github.com/arbor-run/arbor/internal/tool/sandbox"
)

// DefaultTimeout bounds a command hook that names no timeout (Claude
// Code's default).
const DefaultTimeout = 60 * time.Second

// maxHookOutput bounds what is kept of a command hook's stdout and of its
// stderr each; the rest is dropped (and said so).
const maxHookOutput = 256 << 10

// Command is a hook that is a shell command (Claude Code's "type":
// "command"): it gets the input as JSON on stdin and answers with its
// exit code, stdout and stderr, by Claude Code's contract:
//
//   - exit 0: stdout that is JSON is its Output (one that starts with
//     '{' but does not parse is reported); other text is context for
//     UserPromptSubmit and SessionStart, and ignored otherwise;
//   - exit 2: it blocks, and its stderr is the reason (the model reads
//     it for PreToolUse, PostToolUse, PostToolUseFailure and Stop);
//   - any other exit, a timeout, a command that cannot start or JSON
//     that does not parse: a note (Output.Notes), never a block, and the
//     agent goes on.
//
// A Command never returns an error: a broken project hook must not stop
// every tool call. It runs in its own process group, killed at the
// timeout with everything it started.
type Command struct {
	Command string
	// Timeout bounds one run; 0 = DefaultTimeout.
	Timeout time.Duration
	// Dir is the working directory (the project's root).
	Dir string
	// Env is added to arbor's environment (CLAUDE_PROJECT_DIR).
	Env []string
	// Sandbox, when set, gives the sandbox that confines the command as
	// the shell tool's are (sandbox.Wrap), asked at each run (an App makes
	// its sandbox on first use); nil, or a nil sandbox, runs it unconfined.
	Sandbox func() *sandbox.Sandbox
	// ClaudeCode presents tools by Claude Code's names and arguments
	// (Bash, file_path), as a .claude/settings.json hook expects them.
	ClaudeCode bool
	// Source names where the hook was declared, for reports.
	Source string
}

// Call implements Handler.
func (c *Command) Call(ctx context.Context, in Input) (Output, error) {
	arbor := in.ToolName
	if c.ClaudeCode && in.ToolName != "" {
		if cc := tool.ClaudeCodeName(in.ToolName); cc != "" {
			in.ToolName = cc
			in.ToolInput = tool.ToClaudeCodeInput(arbor, in.ToolInput)
		}
	}
	stdin, err := json.Marshal(in)
	if err != nil {
		return c.note("its input could not be encoded: %v", err), nil
	}
	r := c.run(ctx, stdin)
	out, err := c.answer(ctx, Event(in.HookEventName), r, arbor)
	if err == nil {
		out.Ran = r.ran()
	}
	return out, err
}

// answer is the command's Output by its exit, stdout and stderr; arbor is
// arbor's name of the tool a tool's hook ran for.
func (c *Command) answer(ctx context.Context, event Event, r commandResult, arbor string) (Output, error) {
	switch {
	case ctx.Err() != nil:
		return Output{}, ctx.Err()
	case r.startErr != nil:
		return c.note("could not start: %v", r.startErr), nil
	case r.timedOut:
		return c.note("timed out after %s and was killed; ignored", c.timeout()), nil
	case r.exit == 2:
		reason := strings.TrimSpace(r.stderr)
		if reason == "" {
			reason = fmt.Sprintf("the hook %q exited with status 2", c.Command)
		}
		out := Output{Decision: "block", Reason: reason}
		if event == PreToolUse {
			out.HookSpecificOutput.PermissionDecision = "deny"
		}
		return out, nil
	case r.exit != 0:
		return c.note("exited with status %d: %s", r.exit, orNothing(r.stderr)), nil
	}
	text := strings.TrimSpace(r.stdout)
	switch {
	case text == "":
		return Output{}, nil
	case strings.HasPrefix(text, "{"):
		var out Output
		if err := json.Unmarshal([]byte(text), &out); err != nil {
			return c.note("printed output that is not valid JSON (%v): %s; ignored", err, clip(text, 200)), nil
		}
		if c.ClaudeCode && arbor != "" && len(out.HookSpecificOutput.UpdatedInput) > 0 {
			out.HookSpecificOutput.UpdatedInput = tool.ClaudeCodeInput(arbor, out.HookSpecificOutput.UpdatedInput)
		}
		return out, nil
	case event == UserPromptSubmit || event == SessionStart:
		var out Output
		out.HookSpecificOutput.AdditionalContext = text
		return out, nil
	}
	// Claude Code shows such text to the person only (its transcript
	// view), never to the model, and says nothing of it: a formatter
	// hook's "formatted 1 file" is no problem to report after every edit.
	return Output{}, nil
}

func (c *Command) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return DefaultTimeout
}

// note is an Output that only reports a problem of the hook.
func (c *Command) note(format string, args ...any) Output {
	where := ""
	if c.Source != "" {
		where = " (from " + c.Source + ")"
	}
	return Output{Notes: []string{fmt.Sprintf("hook %q%s ", clip(c.Command, 120), where) + fmt.Sprintf(format, args...)}}
}

type commandResult struct {
	stdout, stderr string
	exit           int
	timedOut       bool
	startErr       error
}

// run runs the command with stdin, through the sandbox when there is one.
func (c *Command) run(ctx context.Context, stdin []byte) commandResult {
	runCtx, cancel := context.WithTimeout(ctx, c.timeout())
	defer cancel()
	argv := []string{"bash", "-c", c.Command}
	var call *sandbox.Call
	var sb *sandbox.Sandbox
	if c.Sandbox != nil {
		sb = c.Sandbox()
	}
	if sb != nil {
		var err error
		if call, err = sb.Wrap(c.Dir, argv); err != nil {
			return commandResult{startErr: err}
		}
		defer call.Done()
		argv = call.Argv
	}
	cmd := exec.CommandContext(runCtx, argv[0], argv[1:]...)
	cmd.Dir = c.Dir
	cmd.Env = append(os.Environ(), c.Env...)
	if call != nil {
		cmd.Env = append(cmd.Env, call.Env...)
		cmd.ExtraFiles = call.ExtraFiles
	}
	cmd.Stdin = bytes.NewReader(stdin)
	stdout, stderr := &capped{max: maxHookOutput}, &capped{max: maxHookOutput}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	var once sync.Once
	started := func() {
		once.Do(func() {
			if call != nil {
				call.Started()
			}
		})
	}
	cmd.Cancel = func() error { return tool.KillGroup(cmd.Process.Pid) }
	// A process the hook left behind that holds its output open does not
	// hold the agent: Wait gives up on the pipes this long after the kill.
	cmd.WaitDelay = 2 * time.Second
	err := tool.RunInGroup(cmd, func(int) { started() })
	started()
	r := commandResult{stdout: stdout.String(), stderr: stderr.String()}
	var exitErr *exec.ExitError
	switch {
	case errors.Is(runCtx.Err(), context.DeadlineExceeded) && ctx.Err() == nil:
		r.timedOut = true
	case errors.As(err, &exitErr):
		r.exit = exitErr.ExitCode()
	case errors.Is(err, exec.ErrWaitDelay):
		r.exit = cmd.ProcessState.ExitCode()
	case err != nil && cmd.ProcessState == nil:
		r.startErr = err
	case err != nil:
		r.exit = cmd.ProcessState.ExitCode()
	}
	return r
}

// capped keeps the first max bytes written to it.
type capped struct {
	max     int
	buf     bytes.Buffer
	dropped int
}

func (w *capped) Write(p []byte) (int, error) {
	n := len(p)
	room := w.max - w.buf.Len()
	if room < len(p) {
		w.dropped += len(p) - max(room, 0)
		p = p[:max(room, 0)]
	}
	w.buf.Write(p)
	return n, nil
}

func (w *capped) String() string {
	if w.dropped > 0 {
		return w.buf.String() + fmt.Sprintf("\n(%d more bytes dropped)", w.dropped)
	}
	return w.buf.String()
}

// clip shortens s to at most n bytes on a rune boundary, saying so.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func orNothing(s string) string {
	if s = strings.TrimSpace(s); s == "" {
		return "(no output on stderr)"
	}
	return clip(s, 2000)
}
