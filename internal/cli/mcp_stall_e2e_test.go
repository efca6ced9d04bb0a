package cli_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMCPSigtermWhileClientStopsReading: an MCP client that stopped
// reading arbor's replies (the pipe is full, a reply's write blocked) and
// then sends SIGTERM still sees `arbor mcp` exit, as the headless
// protocols do: the replies wait for the client only a grace period once
// the process is signalled.
func TestMCPSigtermWhileClientStopsReading(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	model := e.useProvider("anthropic", "http://127.0.0.1:1") // never called
	c, stdin, _ := e.startPiped(t, "mcp", "--model", model)
	defer stdin.Close()
	fmt.Fprintln(stdin, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"stalled","version":"1"}}}`)
	fmt.Fprintln(stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for i := 1; i <= 300; i++ { // a tools/list reply is kilobytes: far more than a pipe holds
		fmt.Fprintf(stdin, `{"jsonrpc":"2.0","id":%d,"method":"tools/list"}`+"\n", i)
	}
	// Nothing is read: wait until one of arbor's threads is blocked
	// writing to the full pipe.
	waitUntil(t, time.Minute, "a write to the full pipe", func() bool {
		chans, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/wchan", c.Process.Pid))
		for _, name := range chans {
			if b, err := os.ReadFile(name); err == nil && strings.Contains(string(b), "pipe_write") {
				return true
			}
		}
		return false
	})
	if err := c.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- c.Wait() }()
	select {
	case <-exited:
	case <-time.After(60 * time.Second):
		_ = c.Process.Kill()
		<-exited
		t.Fatal("arbor mcp did not exit after SIGTERM while its client had stopped reading")
	}
}
