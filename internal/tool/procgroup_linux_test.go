package tool

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/tool/sandbox"
)

// liveGroup returns the commands of the processes of group pgid that have
// not exited (zombies, which only wait to be reaped, are left out).
func liveGroup(pgid int) []string {
	paths, _ := filepath.Glob("/proc/[0-9]*/stat")
	var out []string
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid pgrp …; comm may contain spaces.
		s := string(b)
		open, end := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || end < open {
			continue
		}
		f := strings.Fields(s[end+1:])
		if len(f) < 3 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		if g, _ := strconv.Atoi(f[2]); g == pgid {
			out = append(out, s[open+1:end])
		}
	}
	return out
}

// waitGroup polls until cond holds for group pgid's live commands. The
// 10 s deadline only bounds a failing test.
func waitGroup(t *testing.T, pgid int, what string, cond func([]string) bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		live := liveGroup(pgid)
		if cond(live) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process group %d: %s; live: %q", pgid, what, live)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func countSleeps(n int) func([]string) bool {
	return func(live []string) bool {
		c := 0
		for _, cmd := range live {
			if cmd == "sleep" {
				c++
			}
		}
		return c == n
	}
}

func empty(live []string) bool { return len(live) == 0 }

// twoSleeps leaves a background sleep and a foreground one, each its own
// process under bash.
const twoSleeps = `sleep 300 & sleep 300; echo never`

func TestRunCommandGroup(t *testing.T) {
	t.Parallel()

	t.Run("CancelKillsEveryProcessOfTheGroup", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		started := make(chan int, 2)
		ctx = WithGroupReporter(ctx, func(pgid int) { started <- pgid })
		done := make(chan CommandResult, 1)
		go func() { done <- RunCommand(ctx, nil, t.TempDir(), twoSleeps, time.Hour, 1000, shellWaitDelay) }()

		pgid := <-started
		t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
		waitGroup(t, pgid, "want two sleeps running", countSleeps(2))
		cancel()
		r := <-done
		if !r.Cancelled {
			t.Fatalf("result %+v, want cancelled", r)
		}
		waitGroup(t, pgid, "want every process gone after the cancel", empty)
		if len(started) != 0 {
			t.Fatalf("the group was reported more than once")
		}
	})

	t.Run("NoReporterNeeded", func(t *testing.T) {
		t.Parallel()
		r := RunCommand(context.Background(), nil, t.TempDir(), "echo ok", time.Minute, 1000, shellWaitDelay)
		if r.Err != nil || r.Output != "ok\n" || r.ExitCode != 0 {
			t.Fatalf("result %+v", r)
		}
	})

	t.Run("DiesWithArbor", func(t *testing.T) {
		t.Parallel()
		// A child test process stands for arbor: it runs the command and
		// is SIGKILLed while both sleeps run. Pdeathsig kills bash; the
		// reaper kills the sleeps.
		pgid, kill := startHelper(t, "running")
		waitGroup(t, pgid, "want bash and two sleeps running", func(live []string) bool {
			return len(live) == 3 && countSleeps(2)(live)
		})
		kill()
		waitGroup(t, pgid, "want every process gone after arbor was killed", empty)
	})

	t.Run("LeftoverOfAnEndedCommandDiesWithArbor", func(t *testing.T) {
		t.Parallel()
		// The command ends, leaving a sleep behind in its group: the group
		// stays listed with the reaper.
		pgid, kill := startHelper(t, "ended")
		waitGroup(t, pgid, "want only the leftover sleep", func(live []string) bool {
			return len(live) == 1 && countSleeps(1)(live)
		})
		kill()
		waitGroup(t, pgid, "want the leftover gone after arbor was killed", empty)
	})
}

// startHelper starts TestHelperRunCommand in a child process standing for
// arbor, running the helper command named by mode, and returns the
// command's process group and a function that SIGKILLs the child.
func startHelper(t *testing.T, mode string) (pgid int, kill func()) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperRunCommand$")
	// The helper is killed, so its own t.TempDir is never removed: it
	// makes them under this test's, which is.
	cmd.Env = append(os.Environ(), "ARBOR_TOOL_HELPER="+mode, "TMPDIR="+t.TempDir())
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("helper: %v", err)
	}
	pgid, err = strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "pgid ")))
	if err != nil {
		t.Fatalf("helper said %q", line)
	}
	t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
	return pgid, func() {
		t.Helper()
		if err := cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		_ = cmd.Wait()
	}
}

// TestHelperRunCommand is the process startHelper starts: it runs a
// command and waits to be killed.
func TestHelperRunCommand(t *testing.T) {
	ctx := WithGroupReporter(context.Background(), func(pgid int) { fmt.Printf("pgid %d\n", pgid) })
	switch os.Getenv("ARBOR_TOOL_HELPER") {
	case "running":
		RunCommand(ctx, nil, t.TempDir(), twoSleeps, time.Hour, 1000, shellWaitDelay)
		t.Fatal("the command ended; it should have been killed with this process")
	case "ended":
		// The sleep keeps no output pipe open, so the command ends at once.
		r := RunCommand(ctx, nil, t.TempDir(), "sleep 300 >/dev/null 2>&1 &", time.Hour, 1000, shellWaitDelay)
		if r.ExitCode != 0 || r.OutputHeld {
			t.Fatalf("result %+v", r)
		}
		select {} // until killed
	default:
		marker, ok := strings.CutPrefix(os.Getenv("ARBOR_TOOL_HELPER"), "sandboxed:")
		if !ok {
			t.Skip("only run by startHelper")
		}
		// A confined call leaves a sleep in a session of its own, then
		// runs until this process is killed.
		ws := t.TempDir()
		sb, err := sandbox.New(sandbox.Policy{Workspace: ws})
		if err != nil {
			t.Fatal(err)
		}
		RunCommand(ctx, sb, ws, "setsid nohup sleep "+marker+" >/dev/null 2>&1 & sleep 3600", time.Hour, 1000, shellWaitDelay)
		t.Fatal("the command ended; it should have been killed with this process")
	}
}

func TestKillLeftoverGroup(t *testing.T) {
	t.Parallel()

	start := func(t *testing.T) int {
		t.Helper()
		cmd := exec.Command("bash", "-c", twoSleeps)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		pgid := cmd.Process.Pid
		t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL); _ = cmd.Wait() })
		waitGroup(t, pgid, "want two sleeps running", countSleeps(2))
		return pgid
	}

	t.Run("KillsALiveGroup", func(t *testing.T) {
		t.Parallel()
		pgid := start(t)
		killed, err := KillLeftoverGroup(pgid, time.Now().Add(-time.Minute))
		if err != nil || !killed {
			t.Fatalf("KillLeftoverGroup = %v, %v; want killed", killed, err)
		}
		waitGroup(t, pgid, "want every process gone", empty)
	})

	t.Run("SparesAGroupFromBeforeTheBoot", func(t *testing.T) {
		t.Parallel()
		pgid := start(t)
		boot, ok := bootTime()
		if !ok {
			t.Skip("no boot time")
		}
		killed, err := KillLeftoverGroup(pgid, boot.Add(-time.Hour))
		if err != nil || killed {
			t.Fatalf("KillLeftoverGroup = %v, %v; want spared", killed, err)
		}
		waitGroup(t, pgid, "want the sleeps still running", countSleeps(2))
	})

	t.Run("GoneOrInvalidGroup", func(t *testing.T) {
		t.Parallel()
		for _, pgid := range []int{0, 1, -5} {
			if killed, err := KillLeftoverGroup(pgid, time.Now()); killed || err != nil {
				t.Fatalf("KillLeftoverGroup(%d) = %v, %v", pgid, killed, err)
			}
		}
		cmd := exec.Command("true")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Run(); err != nil {
			t.Fatal(err)
		}
		if killed, err := KillLeftoverGroup(cmd.Process.Pid, time.Now()); killed || err != nil {
			t.Fatalf("KillLeftoverGroup of an ended group = %v, %v", killed, err)
		}
	})
}

// TestCommandWaitsForItsGroupToBeReported: a command does nothing before
// its process group has been reported (the agent records it in the call's
// intent there), so a crash in between leaves nothing unrecorded; its
// stdin stays empty.
func TestCommandWaitsForItsGroupToBeReported(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ran := filepath.Join(dir, "ran")
	var early []string
	ctx := WithGroupReporter(context.Background(), func(pgid int) {
		// Without the gate the command races this look: give it the time
		// to lose.
		for range 20 {
			if _, err := os.Stat(ran); err == nil {
				early = append(early, fmt.Sprintf("group %d: the command ran before its group was reported", pgid))
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
	r := RunCommand(ctx, nil, dir, "touch ran; cat; echo \"line $LINENO\"", time.Minute, 1000, shellWaitDelay)
	if len(early) > 0 {
		t.Fatal(early[0])
	}
	if r.Err != nil || r.ExitCode != 0 || r.Output != "line 1\n" {
		t.Fatalf("result %+v; want exit 0, an empty stdin and the command's own line 1", r)
	}
	if _, err := os.Stat(ran); err != nil {
		t.Fatalf("the command did not run: %v", err)
	}
}
