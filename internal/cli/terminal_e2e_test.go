package cli_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/tree/treetest"
)

// console is the user's side of a pseudo-terminal running arbor.
type console struct {
	t      *testing.T
	master *os.File
	mu     sync.Mutex // guards seen
	seen   bytes.Buffer
	more   chan struct{}
}

func newConsole(t *testing.T, master *os.File) *console {
	c := &console{t: t, master: master, more: make(chan struct{}, 1)}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			if n > 0 {
				c.mu.Lock()
				c.seen.Write(buf[:n])
				c.mu.Unlock()
				select {
				case c.more <- struct{}{}:
				default:
				}
			}
			if err != nil {
				return
			}
		}
	}()
	return c
}

func (c *console) text() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.seen.String()
}

// expect waits until the terminal has shown want n times in all.
func (c *console) expect(want string, n int) {
	c.t.Helper()
	deadline := time.After(30 * time.Second) // a failure bound, not a timing assertion
	for strings.Count(c.text(), want) < n {
		select {
		case <-c.more:
		case <-deadline:
			c.t.Fatalf("terminal never showed %q %d times; it shows:\n%s", want, n, c.text())
		}
	}
}

func (c *console) send(s string) {
	c.t.Helper()
	if _, err := io.WriteString(c.master, s); err != nil {
		c.t.Fatal(err)
	}
}

func startOnTerminal(t *testing.T, e *env, args ...string) (*console, func() (string, int)) {
	t.Helper()
	cmd := e.cmd(context.Background(), args...)
	master, tty, err := pty.Open()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { master.Close() })
	var out bytes.Buffer
	cmd.Stdin, cmd.Stderr, cmd.Stdout = tty, tty, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	con := newConsole(t, master)
	return con, func() (string, int) {
		err := cmd.Wait()
		code := 0
		if err != nil {
			code = cmd.ProcessState.ExitCode()
		}
		return out.String(), code
	}
}

func TestTerminalApprovalAlways(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv := llmtest.NewServer(
		llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "shell", Input: map[string]any{"command": "echo one > one.txt"}}}},
		llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "shell", Input: map[string]any{"command": "echo one more > two.txt"}}}},
		llmtest.Turn{Text: "Both files written."},
	)
	defer srv.Close()
	model := e.useProvider("anthropic", srv.URL)
	con, wait := startOnTerminal(t, e, "run", "--plain", "--model", model, "write two files")
	con.expect("[y] yes", 1)
	if !strings.Contains(con.text(), "echo one > one.txt") || !strings.Contains(con.text(), "shell(echo one *)") {
		t.Fatalf("prompt should show the command and the rule 'always' saves:\n%s", con.text())
	}
	con.send("a\n")
	stdout, code := wait()
	if code != 0 || strings.TrimSpace(stdout) != "Both files written." {
		t.Fatalf("exit %d stdout %q\n%s", code, stdout, con.text())
	}
	if n := strings.Count(con.text(), "[y] yes"); n != 1 {
		t.Fatalf("'always' should cover the second command; prompted %d times", n)
	}
	for _, f := range []string{"one.txt", "two.txt"} {
		if _, err := os.Stat(filepath.Join(e.workspace, f)); err != nil {
			t.Fatal(err)
		}
	}
}

func TestTerminalApprovalYesAndNo(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv := llmtest.NewServer(
		llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "write_file", Input: map[string]any{"path": "a.txt", "content": "a"}}}},
		llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "write_file", Input: map[string]any{"path": "b.txt", "content": "b"}}}},
		llmtest.Turn{Text: "Wrote a.txt; b.txt was refused.", Expect: "not b please"},
	)
	defer srv.Close()
	model := e.useProvider("openai", srv.URL)
	con, wait := startOnTerminal(t, e, "run", "--plain", "--model", model, "write files")
	con.expect("[y] yes", 1)
	con.send("y\n")
	con.expect("[y] yes", 2)
	con.send("n\n")
	con.expect("reason for the agent", 1)
	con.send("not b please\n")
	stdout, code := wait()
	if code != 0 || !strings.Contains(stdout, "b.txt was refused") {
		t.Fatalf("exit %d stdout %q\n%s", code, stdout, con.text())
	}
	if _, err := os.Stat(filepath.Join(e.workspace, "a.txt")); err != nil {
		t.Fatal("approved write did not happen")
	}
	if _, err := os.Stat(filepath.Join(e.workspace, "b.txt")); !os.IsNotExist(err) {
		t.Fatal("denied write happened")
	}
}

// TestLiveViewAnswersAsk runs a tree on a terminal: the live view shows
// the tree and the ask node's question, and a typed option number answers
// it.
func TestLiveViewAnswersAsk(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv := llmtest.NewServerFunc(treetest.Responder(treetest.Script{
		1: {
			treetest.Calls(
				treetest.Call("ask", map[string]any{"question": "Which region?", "options": []any{"us-east", "eu-west"}, "default": "us-east"}),
				treetest.Call("spawn", map[string]any{"goal": "Deploy", "prompt": "Deploy to the chosen region.", "blocked_by": []any{"#2"}})),
			treetest.Complete("draft"),
			treetest.Complete("Deployed."),
		},
		3: {treetest.Complete("deployed")},
	}))
	defer srv.Close()
	model := e.useProvider("anthropic", srv.URL)
	con, wait := startOnTerminal(t, e, "run", "--model", model, "deploy the service")
	con.expect("Which region?", 1)
	con.expect("eu-west", 1)
	con.send("2\r")
	stdout, code := wait()
	if code != 0 || strings.TrimSpace(stdout) != "Deployed." {
		t.Fatalf("exit %d stdout %q\n%s", code, stdout, con.text())
	}
	for _, req := range srv.Requests() {
		if treetest.NodeOf(req) == 3 && !strings.Contains(req.Messages[0].Text(), "eu-west") {
			t.Fatalf("#3 should get the answer:\n%s", req.Messages[0].Text())
		}
	}
	if !strings.Contains(con.text(), "Deploy") || !strings.Contains(con.text(), "#3") {
		t.Fatalf("the view should show the tree:\n%s", con.text())
	}
}
