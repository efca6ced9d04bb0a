package tool

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"time"
)

// Process groups: every tool process (the shell tool, background jobs, the
// headless protocols' local shell — all through RunCommand) is started as
// the leader of a new process group, so that one kill reaches everything
// the command started. Three things make the groups die with arbor:
//
//   - cancellation and timeouts kill the group (RunCommand);
//   - on Linux the direct child (bash) gets SIGKILL when arbor dies
//     (Pdeathsig), however it dies;
//   - the reaper (reaper.go), a small bash process that outlives arbor by
//     a moment, kills every group still listed when arbor's end of its
//     pipe closes — this reaches grandchildren (bash → sleep), which
//     Pdeathsig does not, and works on every Unix.
//
// A tool call can also report its group through its context
// (WithGroupReporter): the agent loop records it in the call's intent so
// that resuming after a crash kills a group that survived all of the above
// (the reaper was killed with arbor, say) before reporting the call as
// interrupted (KillLeftoverGroup).

type groupReporterKey struct{}

// WithGroupReporter returns a context under which every tool process
// started calls report with its process group id, once, right after it
// started and before the tool waits for it. report must not block for
// long: the command is running meanwhile.
func WithGroupReporter(ctx context.Context, report func(pgid int)) context.Context {
	return context.WithValue(ctx, groupReporterKey{}, report)
}

func reportGroup(ctx context.Context, pgid int) {
	if report, ok := ctx.Value(groupReporterKey{}).(func(int)); ok && report != nil {
		report(pgid)
	}
}

// runInGroup starts cmd as the leader of a new process group, calls
// started (when not nil) once it started or failed to, reports the group
// through ctx, lists it with the reaper, and waits for cmd.
//
// Pdeathsig is sent when the *thread* that forked the child exits, not
// the process: a Go thread ends when a goroutine that locked it exits
// without unlocking, and any goroutine could be scheduled on the forking
// thread and do that. Locking the thread from before the fork until the
// child has been waited for makes the forking thread ours alone for the
// child's whole life, so only arbor's death (or the end of this call)
// ends it. The cost is one OS thread per running tool process, which Wait
// would mostly hold anyway.
func runInGroup(ctx context.Context, cmd *exec.Cmd, started func()) error {
	cmd.SysProcAttr = groupAttr()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	err := cmd.Start()
	if started != nil {
		started()
	}
	if err != nil {
		return err
	}
	pgid := cmd.Process.Pid
	unlist := reap.list(pgid)
	reportGroup(ctx, pgid)
	err = cmd.Wait()
	// A process that outlived the command in its group (a server started
	// with &) stays listed, so that it still dies with arbor.
	if !groupAlive(pgid) {
		unlist()
	}
	return err
}

// killGroup kills the process group pgid; os.ErrProcessDone when it has
// no process left.
func killGroup(pgid int) error {
	err := syscall.Kill(-pgid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return os.ErrProcessDone
	}
	return err
}

// groupExists reports whether the process group pgid has a process (a
// zombie counts).
func groupExists(pgid int) bool {
	return !errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH)
}

// KillLeftoverGroup kills what is left of the process group pgid that a
// tool call recorded (as Intent.PGID) when it started at startedAt, in an
// earlier arbor process that is gone. It reports whether it killed a
// group; a group that no longer exists is not an error.
//
// Residual risk: a process group id is a pid, and pids are reused. The
// group is killed only if it has a live process and, where the system
// says when it booted (Linux), only if the call started after the boot —
// a group id from before a reboot names someone else's group. Within one
// boot, the tool's group may have emptied and its id been taken by a new
// group leader (a shell job, a daemon) before the resume; that needs the
// pid counter to wrap around in between (at pid_max, 32768 on some
// systems) and is not detected.
func KillLeftoverGroup(pgid int, startedAt time.Time) (bool, error) {
	if pgid < 2 || !groupAlive(pgid) {
		return false, nil
	}
	if boot, ok := bootTime(); ok && startedAt.Before(boot) {
		return false, nil
	}
	switch err := killGroup(pgid); {
	case errors.Is(err, os.ErrProcessDone):
		return false, nil
	case err != nil:
		return false, err
	}
	// SIGKILL takes effect when each process next runs: on a busy
	// machine a resume would otherwise report the group killed while a
	// process of it still runs for a moment.
	for deadline := time.Now().Add(groupDeathWait); groupAlive(pgid) && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	return true, nil
}

// groupDeathWait bounds how long KillLeftoverGroup waits for the killed
// group's processes to be gone (a process in uninterruptible sleep dies
// only when that ends).
const groupDeathWait = 2 * time.Second

// RunInGroup runs cmd as the leader of a new process group that dies with
// arbor, as the tools' processes do (Pdeathsig on Linux, the reaper), for
// long-lived helpers such as MCP servers. started is called with the group
// id once cmd runs (a caller kills the group with KillGroup); RunInGroup
// returns when cmd has exited. Give cmd's stdin and stdout as *os.File
// pipes whose other ends the caller holds, so Wait does not close them
// under a reader.
func RunInGroup(cmd *exec.Cmd, started func(pgid int)) error {
	return runInGroup(WithGroupReporter(context.Background(), started), cmd, nil)
}

// KillGroup kills the process group pgid; nil when it had no process left.
func KillGroup(pgid int) error {
	if err := killGroup(pgid); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}
