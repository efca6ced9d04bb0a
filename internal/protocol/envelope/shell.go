package envelope

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/arbor-run/arbor/internal/tool"
)

// Limits of local_shell.
const (
	shellTimeout   = 120 * time.Second
	shellOutputCap = 64 << 10
	shellWaitDelay = 2 * time.Second
)

// localShell starts the command in the workspace; its result is pushed as
// local_shell_result when it ends. It is not a turn: cancel does not stop
// it, the end of input does.
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
	s.shells.Go(func() {
		s.wire.push(evLocalShellResult, runShell(ctx, s.ws().Workspace, command), nil)
	})
	return nil
}

func runShell(ctx context.Context, dir, command string) localShellResult {
	res := tool.RunCommand(ctx, dir, command, shellTimeout, shellOutputCap, shellWaitDelay)
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
