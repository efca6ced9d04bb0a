package acp

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/arbor-run/arbor/internal/tool"
)

// The shell in the editor's terminal. A client that offers terminal/*
// runs the session's shell commands itself, where the user sees them (an
// embedded terminal in the tool call), when arbor's sandbox is not on: a
// confined command is safer than the editor's terminal and needs no
// approval, so with the sandbox on arbor keeps its own shell.

// Bounds of a terminal command.
const (
	terminalTimeout    = 120 * time.Second
	terminalMaxTimeout = 600 * time.Second
	terminalOutput     = 100_000 // bytes the client keeps
	// terminalCleanup bounds the kill and release of a terminal after
	// its command ended or was given up.
	terminalCleanup = 5 * time.Second
)

type terminalArgs struct {
	Command     string `json:"command" jsonschema_description:"The command line, run with bash -c in the workspace root, in the user's editor (a terminal the user sees)."`
	Timeout     int    `json:"timeout,omitempty" jsonschema:"minimum=0" jsonschema_description:"Timeout in seconds. Default 120, maximum 600."`
	Description string `json:"description,omitempty" jsonschema_description:"A few words saying what the command does, shown to the user."`
}

func (a terminalArgs) Target() tool.Target { return tool.Target{Command: a.Command} }

const terminalDescription = `Run a shell command (bash -c) in the workspace root, in a terminal of the user's editor, ` +
	`and return its output (stdout and stderr, the last 100 kB) and exit status.`

type createTerminalRequest struct {
	SessionID       string   `json:"sessionId"`
	Command         string   `json:"command"`
	Args            []string `json:"args"`
	Cwd             string   `json:"cwd"`
	OutputByteLimit int      `json:"outputByteLimit"`
}

type terminalRef struct {
	SessionID  string `json:"sessionId"`
	TerminalID string `json:"terminalId"`
}

type exitStatus struct {
	ExitCode *int   `json:"exitCode"`
	Signal   string `json:"signal"`
}

type terminalOutputResponse struct {
	Output     string      `json:"output"`
	Truncated  bool        `json:"truncated"`
	ExitStatus *exitStatus `json:"exitStatus"`
}

// terminalShell is the session's shell tool run in the client's terminals.
func (ss *session) terminalShell() tool.Tool {
	return tool.New("shell", terminalDescription, tool.KindExecute, func(ctx context.Context, c tool.Call, a terminalArgs) tool.Result {
		return ss.inTerminal(ctx, c.ID, a)
	})
}

func (ss *session) inTerminal(ctx context.Context, callID string, a terminalArgs) tool.Result {
	if strings.TrimSpace(a.Command) == "" {
		return tool.Errorf("command is empty")
	}
	s := ss.srv
	timeout := terminalTimeout
	if a.Timeout > 0 {
		timeout = min(time.Duration(a.Timeout)*time.Second, terminalMaxTimeout)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var created struct {
		TerminalID string `json:"terminalId"`
	}
	err := s.conn.call(ctx, "terminal/create", createTerminalRequest{SessionID: ss.id, Command: "bash", Args: []string{"-c", a.Command},
		Cwd: ss.work.Workspace, OutputByteLimit: terminalOutput}, &created)
	if err != nil {
		return tool.Errorf("the editor could not start the command: %v", err)
	}
	ref := terminalRef{SessionID: ss.id, TerminalID: created.TerminalID}
	// The call's tool_call goes first (the bus subscriber writes it),
	// then the terminal that shows it.
	s.events.Flush()
	s.update(ss.id, sessionUpdate{SessionUpdate: updateToolCallUpdate, ToolCallID: callID,
		ToolContent: []toolCallContent{{Type: "terminal", TerminalID: created.TerminalID}}})
	cleanup := func(method string) {
		cctx, ccancel := context.WithTimeout(s.ctx, terminalCleanup)
		defer ccancel()
		_ = s.conn.call(cctx, method, ref, nil)
	}
	defer cleanup("terminal/release")
	var exit exitStatus
	waitErr := s.conn.call(ctx, "terminal/wait_for_exit", ref, &exit)
	if waitErr != nil {
		cleanup("terminal/kill")
	}
	octx, ocancel := context.WithTimeout(s.ctx, terminalCleanup)
	defer ocancel()
	var out terminalOutputResponse
	if err := s.conn.call(octx, "terminal/output", ref, &out); err != nil {
		return tool.Errorf("the editor did not give the command's output: %v", err)
	}
	text := out.Output
	if out.Truncated {
		text = "[output truncated to its last part]\n" + text
	}
	switch {
	case waitErr != nil && ctx.Err() == context.DeadlineExceeded:
		return tool.Errorf("%s\n[killed: timed out after %v]", text, timeout)
	case waitErr != nil:
		return tool.Errorf("%s\n[killed: %v]", text, waitErr)
	case exit.Signal != "":
		return tool.Errorf("%s\n[killed by %s]", text, exit.Signal)
	case exit.ExitCode != nil && *exit.ExitCode != 0:
		return tool.Result{Content: fmt.Sprintf("%s\n[exit code %d]", text, *exit.ExitCode), IsError: true}
	}
	return tool.Result{Content: text}
}
