package envelope

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Limits of local_shell.
const (
	shellTimeout   = 120 * time.Second
	shellOutputCap = 64 << 10
	shellWaitDelay = 2 * time.Second
)

// cappedBuffer keeps the first max bytes written and counts the rest.
type cappedBuffer struct {
	b       strings.Builder
	max     int
	dropped int
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	room := c.max - c.b.Len()
	if room >= len(p) {
		c.b.Write(p)
		return len(p), nil
	}
	if room > 0 {
		c.b.Write(p[:room])
	}
	c.dropped += len(p) - max(room, 0)
	return len(p), nil
}

func (c *cappedBuffer) String() string {
	if c.dropped == 0 {
		return c.b.String()
	}
	return fmt.Sprintf("%s\n[output truncated: %d more bytes]", c.b.String(), c.dropped)
}

// localShell starts the command in the workspace; its result is pushed as
// local_shell_result when it ends. It is not a turn: cancel does not stop
// it, the end of input does.
func (s *server) localShell(ctx context.Context, c localShellCmd) error {
	command := c.Command
	if strings.TrimSpace(command) == "" {
		command = c.Content
	}
	if strings.TrimSpace(command) == "" {
		return fmt.Errorf("%w: command is empty", errBadCommand)
	}
	s.shells.Go(func() {
		s.push(evLocalShellResult, runShell(ctx, s.app.Workspace, command), nil)
	})
	return nil
}

func runShell(ctx context.Context, dir, command string) localShellResult {
	ctx, cancel := context.WithTimeout(ctx, shellTimeout)
	defer cancel()
	out := &cappedBuffer{max: shellOutputCap}
	cmd := exec.CommandContext(ctx, "bash", "-c", command)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = shellWaitDelay
	err := cmd.Run()
	r := localShellResult{Command: command, Output: out.String()}
	if err != nil {
		r.Failed = true
		r.Error = err.Error()
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			r.Error = fmt.Sprintf("timed out after %s", shellTimeout)
		}
	}
	return r
}
