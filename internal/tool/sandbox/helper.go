package sandbox

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
)

// The helper is arbor's own binary run again inside the sandbox, in front
// of a command that may reach the network (an allow-list is set):
// bubblewrap starts it with helperArg (see Main). It forwards
// 127.0.0.1:<port> to the call's proxy socket, the only way out of the
// call's empty network namespace, runs the command and exits with its
// status. A call with no network needs no helper: starting arbor's binary
// costs tens of milliseconds, bubblewrap alone a few.
//
// When the command (or the helper) exits, bubblewrap's init (PID 1 of the
// namespace) exits and the kernel kills every process left in it: a
// `setsid nohup … &` dies with its call.

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
	if len(os.Args) > 1 && os.Args[1] == seccompArg {
		os.Exit(runSeccomp(os.Args[2:]))
	}
	helperRegistered = true
}

// runHelper is the helper: args are the proxy socket ("" = none), the
// port, "--", then the command.
func runHelper(args []string, diag io.Writer) int {
	if len(args) < 4 || args[2] != "--" {
		fmt.Fprintln(diag, "arbor sandbox helper: bad arguments")
		return 125
	}
	socket, port, argv := args[0], args[1], args[3:]
	if socket != "" {
		l, err := net.Listen("tcp", "127.0.0.1:"+port)
		if err != nil {
			fmt.Fprintf(diag, "arbor sandbox helper: proxy port: %v\n", err)
			return 125
		}
		go forward(l, socket) // ends with the process
	}
	// The command runs under the seccomp filter (seccomp.go), which this
	// process, the relay, must not have: it makes Unix sockets.
	cmd := exec.Command(helperPath, append([]string{seccompArg, "--"}, argv...)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	// Signals for the call (bubblewrap passes none on; a timeout kills the
	// namespace) are not ours to take: the command gets them.
	signal.Ignore(syscall.SIGINT, syscall.SIGQUIT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGPIPE)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(diag, "arbor sandbox helper: %v\n", err)
		return 127
	}
	err := cmd.Wait()
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
