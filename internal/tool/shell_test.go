package tool

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/testutil"
)

// killOnCleanup removes a process the test deliberately let escape.
func killOnCleanup(t *testing.T, pid int) {
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
}

func parsePIDs(t *testing.T, s string) []int {
	t.Helper()
	var pids []int
	for _, f := range strings.Fields(s) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("bad pid %q in %q", f, s)
		}
		pids = append(pids, pid)
	}
	return pids
}

func shellCall(command string, timeout int) Call {
	raw, _ := json.Marshal(shellArgs{Command: command, Timeout: timeout})
	return Call{ID: "sh", Input: raw}
}

func TestShell(t *testing.T) {
	t.Parallel()

	t.Run("RunsInWorkspaceMergingOutput", func(t *testing.T) {
		t.Parallel()
		f := setupTools(t)
		got := reqOK(t, f.call("shell", shellArgs{Command: "pwd; echo out; echo err >&2; echo again"}))
		reqEqual(t, got, f.root+"\nout\nerr\nagain\nexit code 0")
	})

	t.Run("NonzeroExitIsError", func(t *testing.T) {
		t.Parallel()
		f := setupTools(t)
		reqEqual(t, reqErr(t, f.call("shell", shellArgs{Command: "echo nope; exit 3"})), "nope\nexit code 3")
	})

	t.Run("NoOutput", func(t *testing.T) {
		t.Parallel()
		f := setupTools(t)
		reqEqual(t, reqOK(t, f.call("shell", shellArgs{Command: "true"})), "(no output)\nexit code 0")
		reqContains(t, reqErr(t, f.call("shell", shellArgs{Command: "  "})), "command is empty")
	})

	t.Run("StdinIsEmpty", func(t *testing.T) {
		t.Parallel()
		f := setupTools(t)
		reqEqual(t, reqOK(t, f.call("shell", shellArgs{Command: "cat; echo done"})), "done\nexit code 0")
	})

	t.Run("TruncatesKeepingHeadAndTail", func(t *testing.T) {
		t.Parallel()
		f := setupTools(t)
		got := reqOK(t, f.call("shell", shellArgs{Command: `echo START; head -c 100000 /dev/zero | tr '\0' x; echo; echo END`}))
		if len(got) > shellMaxOutputBytes+100 {
			t.Fatalf("output is %d bytes, cap is %d", len(got), shellMaxOutputBytes)
		}
		if !strings.HasPrefix(got, "START\nxxx") || !strings.HasSuffix(got, "xxx\nEND\nexit code 0") {
			t.Fatalf("head or tail lost: %q … %q", got[:20], got[len(got)-30:])
		}
		// 6 (START\n) + 100000 + 1 + 4 (END\n) written, 30000 kept.
		reqContains(t, got, "\n[… 70011 bytes truncated …]\n")
	})

	t.Run("ClampsTimeout", func(t *testing.T) {
		t.Parallel()
		tl := (&shellTool{dir: t.TempDir(), timeout: time.Second, maxTimeout: 5 * time.Second, waitDelay: shellWaitDelay}).tool()
		got := reqOK(t, tl.Run(context.Background(), shellCall("echo hi", 100000)))
		reqEqual(t, got, "hi\n[timeout 100000s exceeds the maximum; clamped to 5s]\nexit code 0")
	})

	t.Run("TimeoutKillsProcessGroup", func(t *testing.T) {
		t.Parallel()
		f := setupTools(t)
		script := `sleep 100 & echo $! >> pids; (sleep 100; echo never) & echo $! >> pids; echo $$ >> pids; echo started; wait`
		res := f.call("shell", shellArgs{Command: script, Timeout: 1})
		got := reqErr(t, res)
		reqEqual(t, got, "started\ncommand timed out after 1s; it and every process it started were killed")
		pids := parsePIDs(t, f.read("pids"))
		reqEqual(t, len(pids), 3)
		for _, pid := range pids {
			testutil.RequireExited(t, pid, 10*time.Second)
		}
	})

	t.Run("CancelKillsProcessGroup", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		fifo := filepath.Join(dir, "ready")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Fatal(err)
		}
		tl := newShell(newWorkRoot(dir, nil), BuiltinOptions{})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()

		done := make(chan Result, 1)
		go func() { done <- tl.Run(ctx, shellCall(`sleep 100 & s=$!; echo "$$ $s" > ready; wait`, 0)) }()
		ready := make(chan string, 1)
		go func() {
			data, _ := os.ReadFile(fifo) // blocks until the script has written
			ready <- string(data)
		}()

		var pids []int
		select {
		case s := <-ready:
			pids = parsePIDs(t, s)
			cancel()
		case res := <-done:
			t.Fatalf("command ended before it was cancelled: %s", res.Content)
		}
		got := reqErr(t, <-done)
		reqEqual(t, got, "(no output)\ncommand cancelled; it and every process it started were killed")
		reqEqual(t, len(pids), 2)
		for _, pid := range pids {
			testutil.RequireExited(t, pid, 10*time.Second)
		}
	})

	t.Run("ReturnsWhenEscapedProcessHoldsPipe", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		fifo := filepath.Join(dir, "ready")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Fatal(err)
		}
		// setsid puts the sleeper in its own session, out of reach of the
		// group kill; it inherits stdout and keeps the pipe open.
		tl := (&shellTool{dir: dir, timeout: time.Minute, maxTimeout: time.Minute, waitDelay: 50 * time.Millisecond}).tool()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan Result, 1)
		// The sleeper reports itself only once it is in its own session.
		go func() { done <- tl.Run(ctx, shellCall(`setsid bash -c 'echo $$ > ready; exec sleep 100' & wait`, 0)) }()
		ready := make(chan string, 1)
		go func() {
			data, _ := os.ReadFile(fifo)
			ready <- string(data)
		}()
		var pid int
		select {
		case s := <-ready:
			pid = parsePIDs(t, s)[0]
			killOnCleanup(t, pid)
			cancel()
		case res := <-done:
			t.Fatalf("command ended before it was cancelled: %s", res.Content)
		}
		reqContains(t, reqErr(t, <-done), "command cancelled")
		// Run returned although the escaped process still holds the pipe.
		if err := syscall.Kill(pid, 0); err != nil {
			t.Fatalf("the escaped process is gone (%v); the test did not exercise WaitDelay", err)
		}
	})

	t.Run("BackgroundProcessHoldingPipeAfterExit", func(t *testing.T) {
		t.Parallel()
		tl := (&shellTool{dir: t.TempDir(), timeout: time.Minute, maxTimeout: time.Minute, waitDelay: 50 * time.Millisecond}).tool()
		res := tl.Run(context.Background(), shellCall(`sleep 100 & echo $!`, 0))
		got := reqOK(t, res)
		pidLine, rest, _ := strings.Cut(got, "\n")
		killOnCleanup(t, parsePIDs(t, pidLine)[0])
		reqEqual(t, rest, "[stopped reading output 50ms after the command exited: a background process kept it open]\nexit code 0")
	})
}
