package sandbox

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// The helper is arbor's own binary run again inside the sandbox, in front
// of the command: bubblewrap starts it with helperArg (see Main). It
//
//   - forwards 127.0.0.1:<port> to the call's proxy socket, the only way
//     out of the call's empty network namespace;
//   - watches the number of processes in the call's PID namespace and
//     kills them all past the limit (a fork bomb; as root RLIMIT_NPROC
//     does not apply, so the count is watched instead);
//   - runs the command and exits with its status.
//
// When the helper exits, bubblewrap's init (PID 1 of the namespace) exits
// and the kernel kills every process left in it: a `setsid nohup … &` dies
// with its call.

// helperArg is argv[1] of the helper.
const helperArg = "__arbor_sandbox_helper"

// helperRegistered is set by Main: this binary runs the helper, so the
// sandbox may put it in front of commands.
var helperRegistered bool

// Main runs the sandbox helper and exits when this process was started
// as one; otherwise it returns at once and the sandbox may use this
// binary as its helper. Call it first thing in main (and in TestMain of a
// test binary that runs confined commands with a network allow-list).
func Main() {
	if len(os.Args) > 1 && os.Args[1] == helperArg {
		os.Exit(runHelper(os.Args[2:], os.Stderr))
	}
	helperRegistered = true
}

// runHelper is the helper: args are max-processes, the proxy socket ("" =
// none), the port, "--", then the command.
func runHelper(args []string, diag io.Writer) int {
	if len(args) < 5 || args[3] != "--" {
		fmt.Fprintln(diag, "arbor sandbox helper: bad arguments")
		return 125
	}
	maxProcs, _ := strconv.Atoi(args[0])
	socket, port, argv := args[1], args[2], args[4:]
	if socket != "" {
		l, err := net.Listen("tcp", "127.0.0.1:"+port)
		if err != nil {
			fmt.Fprintf(diag, "arbor sandbox helper: proxy port: %v\n", err)
			return 125
		}
		go forward(l, socket) // ends with the process
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	if p, err := exec.LookPath(argv[0]); err == nil {
		cmd.Path = p
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	// Signals for the call (bubblewrap passes none on; a timeout kills the
	// namespace) are not ours to take: the command gets them.
	signal.Ignore(syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(diag, "arbor sandbox helper: %v\n", err)
		return 127
	}
	exceeded := make(chan int, 1)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	if maxProcs > 0 {
		wg.Go(func() { watch(maxProcs, stop, exceeded) })
	}
	err := cmd.Wait()
	close(stop)
	wg.Wait()
	select {
	case n := <-exceeded:
		fmt.Fprintf(diag, "\narbor sandbox: the command started more than %d processes at once (%d); all of them were killed\n", maxProcs, n)
		return 137
	default:
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	fmt.Fprintf(diag, "arbor sandbox helper: %v\n", err)
	return 125
}

// forward copies every connection on l to a new connection to the unix
// socket, both ways.
func forward(l net.Listener, socket string) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			u, err := net.Dial("unix", socket)
			if err != nil {
				return
			}
			defer u.Close()
			done := make(chan struct{}, 2)
			go func() { _, _ = io.Copy(u, c); closeWrite(u); done <- struct{}{} }()
			go func() { _, _ = io.Copy(c, u); closeWrite(c); done <- struct{}{} }()
			<-done
			<-done
		}()
	}
}

// closeWrite half-closes a connection that supports it.
func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
}

// watch counts the processes of the PID namespace (its /proc lists only
// them) until stop, and kills them all when there are more than max.
func watch(max int, stop <-chan struct{}, exceeded chan<- int) {
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		ps, err := filepath.Glob("/proc/[0-9]*")
		if err != nil || len(ps) <= max {
			continue
		}
		exceeded <- len(ps)
		// Every process this one may signal but itself and the
		// namespace's init; repeated while a bomb still forks.
		for range 50 {
			_ = syscall.Kill(-1, syscall.SIGKILL)
			if ps, _ := filepath.Glob("/proc/[0-9]*"); len(ps) <= 2 {
				break
			}
			time.Sleep(time.Millisecond)
		}
		return
	}
}
