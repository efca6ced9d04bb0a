package envelope

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/arbor-run/arbor/internal/tool"
	"github.com/arbor-run/arbor/internal/tool/sandbox"
)

// Limits of local_shell.
const (
	shellTimeout   = 120 * time.Second
	shellOutputCap = 64 << 10
	shellWaitDelay = 2 * time.Second
)

// localShell starts the command in the workspace; its result is pushed as
// local_shell_result when it ends. It is not a turn, but cancel stops it
// (its result then says cancelled), as does the end of input.
func (s *server) localShell(ctx context.Context, c localShellCmd) error {
	if s.opts.NoLocalShell {
		return fmt.Errorf("local_shell %w: arbor was started with --no-local-shell", errUnavailable)
	}
	command := c.Command
	if strings.TrimSpace(command) == "" {
		command = c.Content
	}
	if strings.TrimSpace(command) == "" {
		return fmt.Errorf("%w: command is empty", errBadCommand)
	}
	ctx, stop := context.WithCancel(ctx)
	s.shellMu.Lock()
	s.shellN++
	id := s.shellN
	if s.shellStops == nil {
		s.shellStops = map[int]context.CancelFunc{}
	}
	s.shellStops[id] = stop
	s.shellMu.Unlock()
	s.shells.Go(func() {
		defer func() {
			s.shellMu.Lock()
			delete(s.shellStops, id)
			s.shellMu.Unlock()
			stop()
		}()
		ws := s.ws()
		// The project settings' env, as an agent's commands get it.
		ctx := tool.WithEnv(ctx, ws.Project().Env)
		s.wire.push(evLocalShellResult, runShell(ctx, ws.Sandbox(), ws.Workspace, command), nil)
	})
	return nil
}

// stopShells cancels every running local_shell command. shellMu is held
// with no other lock.
func (s *server) stopShells() {
	s.shellMu.Lock()
	defer s.shellMu.Unlock()
	for _, stop := range s.shellStops {
		stop()
	}
}

func runShell(ctx context.Context, sb *sandbox.Sandbox, dir, command string) localShellResult {
	res := tool.RunCommand(ctx, sb, dir, command, shellTimeout, shellOutputCap, shellWaitDelay)
	r := localShellResult{Command: command, Output: res.Output}
	switch {
	case res.Err != nil:
		r.Failed, r.Error = true, res.Err.Error()
	case res.TimedOut:
		r.Failed, r.Error = true, fmt.Sprintf("timed out after %s", shellTimeout)
	case res.Cancelled:
		r.Failed, r.Error = true, "cancelled"
	case res.ExitCode != 0:
		r.Failed, r.Error = true, fmt.Sprintf("exit status %d", res.ExitCode)
	}
	return r
}
