package tool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/arbor-run/arbor/internal/tool/sandbox"
)

// Limits of shell.
const (
	// DefaultShellTimeout applies when neither the call nor the options
	// give one.
	DefaultShellTimeout = 120 * time.Second
	// DefaultShellMaxTimeout is the largest timeout a call may ask for
	// unless the options say otherwise.
	DefaultShellMaxTimeout = 600 * time.Second
	// shellMaxOutputBytes caps the output kept: its first and last halves.
	shellMaxOutputBytes = 30000
	// shellWaitDelay is how long Run keeps reading output after the command
	// exited or was killed, when a process that escaped the kill (one that
	// started its own session) still holds the output pipe open.
	shellWaitDelay = 2 * time.Second
)

type shellArgs struct {
	Command     string `json:"command" jsonschema_description:"The command line, run with bash -c in the workspace root."`
	Timeout     int    `json:"timeout,omitempty" jsonschema:"minimum=0" jsonschema_description:"Timeout in seconds. Default 120, maximum 600."`
	Description string `json:"description,omitempty" jsonschema_description:"A few words saying what the command does, shown to the user."`
	// RunInBackground starts the command and returns at once.
	RunInBackground bool `json:"run_in_background,omitempty" jsonschema_description:"Start the command in the background and return at once with its job id. Read its output and exit code with job_output where it is offered; otherwise they arrive as a message when it ends. No timeout applies unless one is given. Stop it with job_kill."`
}

func (a shellArgs) Target() Target { return Target{Command: a.Command} }

// sandboxShellArgs are shell's arguments when a sandbox confines it: the
// model may ask to leave it, which a person must approve.
type sandboxShellArgs struct {
	Command                   string `json:"command" jsonschema_description:"The command line, run with bash -c in the workspace root."`
	Timeout                   int    `json:"timeout,omitempty" jsonschema:"minimum=0" jsonschema_description:"Timeout in seconds. Default 120, maximum 600."`
	Description               string `json:"description,omitempty" jsonschema_description:"A few words saying what the command does, shown to the user."`
	RunInBackground           bool   `json:"run_in_background,omitempty" jsonschema_description:"Start the command in the background and return at once with its job id. Read its output and exit code with job_output where it is offered; otherwise they arrive as a message when it ends. No timeout applies unless one is given. Stop it with job_kill."`
	DangerouslyDisableSandbox bool   `json:"dangerously_disable_sandbox,omitempty" jsonschema_description:"Run outside the sandbox, with the user's full rights. Only when the sandbox blocked something the task needs (a path, a host); a person must approve it."`
}

func (a sandboxShellArgs) Target() Target {
	return Target{Command: a.Command, Sandboxed: !a.DangerouslyDisableSandbox}
}

// askingShellArgs are sandboxShellArgs whose confined commands ask as
// unconfined ones do (BuiltinOptions.SandboxAsks).
type askingShellArgs struct{ sandboxShellArgs }

func (a askingShellArgs) Target() Target { return Target{Command: a.Command} }

const shellDescription = `Run a shell command with bash -c in the workspace root; stdout and stderr are merged. ` +
	`The exit code is reported and a nonzero one marks the call as failed. ` +
	`The command and everything it started are killed when the timeout expires (default 120 s, maximum 600 s). ` +
	`Output beyond 30000 characters is cut in the middle. Stdin is empty: do not run interactive programs. ` +
	`With run_in_background the call returns a job id at once and the result arrives as a message when the command ends.`

const sandboxDescription = ` The command runs in a sandbox: it may write only in the workspace and /tmp, ` +
	`secrets (~/.ssh, keys, arbor's config) are hidden, and the network is closed except for the hosts the user allowed. ` +
	`When the sandbox blocks what the task needs, say so, or set dangerously_disable_sandbox to ask the user to run it outside.`

// shellTool runs commands. Its fields are fixed at construction.
type shellTool struct {
	dir        string
	timeout    time.Duration // when the call gives none
	maxTimeout time.Duration
	waitDelay  time.Duration
	// jobs runs background commands; nil refuses run_in_background.
	jobs *Jobs
	// sandbox confines the commands; nil runs them with the user's rights.
	sandbox *sandbox.Sandbox
	// asks keeps confined commands asking; only refuses leaving the
	// sandbox (BuiltinOptions.SandboxAsks, SandboxOnly).
	asks, only bool
	// withheld are variables the commands do without besides arbor's
	// credentials (BuiltinOptions.WithheldEnv, agentEnv); env are
	// added (BuiltinOptions.Env).
	withheld, env []string
}

func newShell(root workRoot, o BuiltinOptions) Tool {
	return newBackgroundShell(root, o, nil)
}

// newBackgroundShell is newShell whose run_in_background starts jobs in
// jobs (nil = refused).
func newBackgroundShell(root workRoot, o BuiltinOptions, jobs *Jobs) Tool {
	timeout, maxTimeout := o.ShellTimeout, o.ShellMaxTimeout
	s := &shellTool{dir: root.dir, timeout: timeout, maxTimeout: maxTimeout, waitDelay: shellWaitDelay, jobs: jobs, sandbox: o.Sandbox,
		asks: o.SandboxAsks, only: o.SandboxOnly, withheld: o.WithheldEnv, env: o.Env}
	if s.maxTimeout <= 0 {
		s.maxTimeout = DefaultShellMaxTimeout
	}
	if s.timeout <= 0 {
		s.timeout = DefaultShellTimeout
	}
	s.timeout = min(s.timeout, s.maxTimeout)
	return s.tool()
}

func (s *shellTool) tool() Tool {
	if s.sandbox == nil {
		return New("shell", shellDescription, KindExecute, func(ctx context.Context, _ Call, a shellArgs) Result {
			return s.run(ctx, a, nil)
		})
	}
	run := func(ctx context.Context, a sandboxShellArgs) Result {
		sb := s.sandbox
		if a.DangerouslyDisableSandbox {
			if s.only {
				return Errorf("commands run only in the sandbox here (sandbox.allow_unsandboxed is false); run it without dangerously_disable_sandbox")
			}
			sb = nil // approved by a person (the guard asked: Target says unsandboxed)
		}
		return s.run(ctx, shellArgs{Command: a.Command, Timeout: a.Timeout, Description: a.Description, RunInBackground: a.RunInBackground}, sb)
	}
	if s.asks {
		return New("shell", shellDescription+sandboxDescription, KindExecute, func(ctx context.Context, _ Call, a askingShellArgs) Result {
			return run(ctx, a.sandboxShellArgs)
		})
	}
	return New("shell", shellDescription+sandboxDescription, KindExecute, func(ctx context.Context, _ Call, a sandboxShellArgs) Result {
		return run(ctx, a)
	})
}

func (s *shellTool) run(ctx context.Context, a shellArgs, sb *sandbox.Sandbox) Result {
	if strings.TrimSpace(a.Command) == "" {
		return Errorf("command is empty")
	}
	timeout := s.timeout
	var notes []string
	if a.Timeout > 0 {
		timeout = time.Duration(a.Timeout) * time.Second
		if timeout > s.maxTimeout {
			notes = append(notes, fmt.Sprintf("timeout %ds exceeds the maximum; clamped to %s", a.Timeout, s.maxTimeout))
			timeout = s.maxTimeout
		}
	}
	if a.RunInBackground {
		return s.background(a, sb)
	}
	r := runCommand(ctx, sb, s.dir, a.Command, s.environ(), timeout, shellMaxOutputBytes, s.waitDelay, nil)
	var status string
	isError := true
	switch {
	case r.Cancelled:
		status = "command cancelled; it and every process it started were killed"
	case r.TimedOut:
		status = fmt.Sprintf("command timed out after %s; it and every process it started were killed", timeout)
	case r.Err != nil:
		return Errorf("cannot run command: %v", r.Err)
	default:
		if r.OutputHeld {
			notes = append(notes, fmt.Sprintf("stopped reading output %s after the command exited: a background process kept it open", s.waitDelay))
		}
		status, isError = exitStatus(r.ExitCode)
	}

	var b strings.Builder
	if text := r.Output; text != "" {
		b.WriteString(text)
		if !strings.HasSuffix(text, "\n") {
			b.WriteByte('\n')
		}
	} else {
		b.WriteString("(no output)\n")
	}
	for _, n := range append(notes, r.Notes...) {
		fmt.Fprintf(&b, "[%s]\n", n)
	}
	b.WriteString(status)
	detail := &ShellDetail{Output: strings.TrimRight(r.Output, "\n"), Interrupted: r.TimedOut || r.Cancelled}
	return Result{Content: b.String(), IsError: isError, Blocked: r.Notes, Detail: &Detail{Shell: detail}}
}

// environ is the environment of the tool's commands: arbor's without
// its credentials, then the project's variables.
func (s *shellTool) environ() []string {
	return append(agentEnv(s.withheld), s.env...)
}

// background starts a.Command as a job. Only a timeout the call gives
// applies (clamped to the maximum).
func (s *shellTool) background(a shellArgs, sb *sandbox.Sandbox) Result {
	if s.jobs == nil {
		return Errorf("run_in_background is not available in this session; run the command in the foreground")
	}
	var timeout time.Duration
	if a.Timeout > 0 {
		timeout = s.maxTimeout
		if a.Timeout < int(s.maxTimeout/time.Second) {
			timeout = time.Duration(a.Timeout) * time.Second
		}
	}
	id, err := s.jobs.Start(sb, s.dir, a.Command, s.environ(), timeout, s.waitDelay)
	if err != nil {
		return Errorf("cannot start background job: %v", err)
	}
	detail := &Detail{Shell: &ShellDetail{BackgroundID: id}}
	if !s.jobs.delivers {
		return Result{Content: fmt.Sprintf("started background job %s; read its output and exit code with job_output, stop it with job_kill", id), Detail: detail}
	}
	return Result{Content: fmt.Sprintf("started background job %s; its result will be delivered when it ends", id), Detail: detail}
}

func exitStatus(code int) (string, bool) {
	if code < 0 {
		return "command was killed by a signal", true
	}
	return fmt.Sprintf("exit code %d", code), code != 0
}

// CommandResult is the outcome of RunCommand.
type CommandResult struct {
	// Output is stdout and stderr merged, its middle cut (with a visible
	// note) beyond the cap.
	Output   string
	ExitCode int // -1 when killed by a signal
	// TimedOut and Cancelled say the command, and everything it started,
	// were killed.
	TimedOut, Cancelled bool
	// OutputHeld says a background process kept the output open after the
	// command exited; reading stopped after the wait delay.
	OutputHeld bool
	// Err is set when the command could not be run at all.
	Err error
	// Notes say what the sandbox blocked (a hidden path, a read-only
	// write, a host it refused), for the model.
	Notes []string
}

// RunCommand runs command with bash -c in dir, in its own process group so
// that a timeout or ctx's cancellation kills everything it started, and so
// that it dies with arbor (see runInGroup); the group is reported to ctx's
// group reporter (WithGroupReporter). With sb it runs confined by the
// sandbox. It runs with arbor's whole environment: it is for a person's
// own commands (the headless protocols' local shell, arbor sandbox run);
// an agent's commands (the shell tool, background jobs) run without
// arbor's credentials (agentEnv).
func RunCommand(ctx context.Context, sb *sandbox.Sandbox, dir, command string, timeout time.Duration, maxOutput int, waitDelay time.Duration) CommandResult {
	return runCommand(ctx, sb, dir, command, os.Environ(), timeout, maxOutput, waitDelay, nil)
}

// CommandLine is the command line RunCommand runs for a person's args
// (arbor sandbox -- ARGS): one argument is a shell command line, run as
// written, as the shell tool runs the model's ("ls | wc -l"); several are
// a program and its arguments, each quoted so that bash hands it over
// unchanged (bash -c 'exit 7' exits 7; "two words" stays one argument).
func CommandLine(args []string) string {
	if len(args) == 1 {
		return args[0]
	}
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = shellQuote(a)
	}
	return strings.Join(quoted, " ")
}

// runCommand is RunCommand whose output also goes to tee as it comes (a
// background job's live log) when tee is not nil.
func runCommand(ctx context.Context, sb *sandbox.Sandbox, dir, command string, env []string, timeout time.Duration, maxOutput int, waitDelay time.Duration, tee io.Writer) CommandResult {
	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out := newHeadTail(maxOutput)
	// The command waits on its stdin (startGate) until its process group
	// has been reported; its own stdin stays empty (/dev/null).
	gate, open, err := os.Pipe()
	if err != nil {
		return CommandResult{Err: err, ExitCode: -1}
	}
	defer gate.Close()
	defer open.Close()
	argv := []string{"bash", "-c", startGate + command}
	var call *sandbox.Call
	if sb != nil {
		var err error
		if call, err = sb.Wrap(dir, argv); err != nil {
			return CommandResult{Err: err, ExitCode: -1}
		}
		argv = call.Argv
	}
	cmd := exec.CommandContext(runCtx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(slices.Clip(env), "PAGER=cat", "GIT_PAGER=cat", "GIT_TERMINAL_PROMPT=0")
	cmd.Env = append(cmd.Env, envFrom(ctx)...)
	var started func()
	if call != nil {
		cmd.Env = append(cmd.Env, call.Env...)
		cmd.ExtraFiles, started = call.ExtraFiles, call.Started
	}
	var w io.Writer = out
	if tee != nil {
		w = io.MultiWriter(out, tee)
	}
	cmd.Stdout, cmd.Stderr = w, w // the same writer: one pipe, order kept
	cmd.Stdin = gate
	cmd.Cancel = func() error { return killGroup(cmd.Process.Pid) }
	cmd.WaitDelay = waitDelay
	reported := WithGroupReporter(ctx, func(pgid int) {
		reportGroup(ctx, pgid) // the intent holds the group before the command runs
		_, _ = open.Write([]byte("\n"))
		_ = open.Close()
	})
	err = runInGroup(reported, cmd, started)

	r := CommandResult{Output: out.String()}
	var exitErr *exec.ExitError
	switch {
	case ctx.Err() != nil:
		r.Cancelled, r.ExitCode = true, -1
	case errors.Is(runCtx.Err(), context.DeadlineExceeded):
		r.TimedOut, r.ExitCode = true, -1
	case errors.Is(err, exec.ErrWaitDelay):
		r.OutputHeld, r.ExitCode = true, cmd.ProcessState.ExitCode()
	case errors.As(err, &exitErr):
		r.ExitCode = exitErr.ExitCode()
	case err != nil:
		r.Err = err
	}
	if call != nil {
		r.Notes = sb.Explain(r.Output)
		r.Notes = append(r.Notes, call.Done()...)
	}
	return r
}

// startGate precedes every command: bash reads one line from its stdin,
// a pipe arbor writes to only once the command's process group has been
// reported (and so recorded in the call's intent), then gives the command
// an empty stdin. A command therefore never does anything arbor could not
// find and kill after a crash; if arbor dies before writing, the read
// ends without a line and the command is not run (exit 125). It keeps the
// command's first line on line 1, so bash's messages name the same lines.
const startGate = `IFS= read -r _ || exit 125; exec </dev/null; `

type envKey struct{}

// WithEnv returns ctx carrying variables the commands run under it get on
// top of arbor's environment (a headless client's shell_context.env).
func WithEnv(ctx context.Context, env map[string]string) context.Context {
	if len(env) == 0 {
		return ctx
	}
	kv := make([]string, 0, len(env))
	for k, v := range env {
		if k != "" && !strings.ContainsAny(k, "=\x00") {
			kv = append(kv, k+"="+v)
		}
	}
	sort.Strings(kv)
	return context.WithValue(ctx, envKey{}, append(envFrom(ctx), kv...))
}

func envFrom(ctx context.Context) []string {
	kv, _ := ctx.Value(envKey{}).([]string)
	return kv
}
