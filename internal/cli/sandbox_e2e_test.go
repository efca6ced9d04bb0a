package cli_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/tree/treetest"
)

// TestSandboxedTreeNeedsNoPerson: a tree of five nodes, each running shell
// commands, in default mode with the sandbox on by default (auto) and no
// one to answer (stdin is not a terminal): no approval is asked, every
// node completes, the writes in the workspace happen and the one outside
// it does not.
func TestSandboxedTreeNeedsNoPerson(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.sandboxDefault()
	// Not under /tmp, which a confined command sees as its own: a path
	// of the host's that a broken sandbox would let it write.
	outside := fmt.Sprintf("/var/tmp/arbor-sandbox-escape-%d.txt", os.Getpid())
	t.Cleanup(func() { _ = os.Remove(outside) })
	script := treetest.Script{1: {
		treetest.Calls(
			treetest.Call("shell", map[string]any{"command": "echo root > n1.txt"}),
			treetest.Call("spawn", map[string]any{"goal": "Part 2", "prompt": "do 2"}),
			treetest.Call("spawn", map[string]any{"goal": "Part 3", "prompt": "do 3"}),
			treetest.Call("spawn", map[string]any{"goal": "Part 4", "prompt": "do 4"}),
			treetest.Call("spawn", map[string]any{"goal": "Part 5", "prompt": "do 5", "blocked_by": []any{"#2", "#3"}})),
		treetest.Complete("draft"),
		treetest.Complete("all five parts done"),
	}}
	for n := 2; n <= 5; n++ {
		cmd := fmt.Sprintf("echo node%d > n%d.txt && cat n%d.txt", n, n, n)
		if n == 4 {
			cmd += " && echo escape > " + outside // refused: outside the workspace
		}
		script[int64(n)] = []llmtest.Turn{
			treetest.Calls(treetest.Call("shell", map[string]any{"command": cmd})),
			treetest.Complete(fmt.Sprintf("part %d done", n)),
		}
	}
	srv := llmtest.NewServerFunc(treetest.Responder(script))
	defer srv.Close()
	model := e.useProvider("anthropic", srv.URL)

	o := e.run("run", "--model", model, "Do the five parts")
	if o.code != 0 || strings.TrimSpace(o.stdout) != "all five parts done" {
		t.Fatalf("exit %d, stdout %q\nstderr:\n%s", o.code, o.stdout, o.stderr)
	}
	if strings.Contains(o.stderr, "approval") || strings.Contains(o.stderr, "denied") {
		t.Fatalf("the run asked for approval or was denied:\n%s", o.stderr)
	}
	if !strings.Contains(o.stderr, "#4 ⊘ sandbox: commands may write only in") {
		t.Fatalf("the plain view does not show what the sandbox blocked:\n%s", o.stderr)
	}
	for n := 1; n <= 5; n++ {
		if _, err := os.Stat(filepath.Join(e.workspace, fmt.Sprintf("n%d.txt", n))); err != nil {
			t.Fatalf("node %d's write in the workspace: %v", n, err)
		}
	}
	if _, err := os.Stat(outside); err == nil {
		t.Fatal("a node wrote outside the workspace")
	}
	// Node 4's model saw why its write outside failed.
	explained, seen := false, ""
	for _, req := range srv.Requests() {
		if treetest.NodeOf(req) == 4 {
			seen += req.LastUserText() + "\n---\n"
			explained = explained || strings.Contains(req.LastUserText(), "[sandbox: commands may write only in")
		}
	}
	if !explained {
		t.Fatalf("node 4's model was not told what the sandbox blocked:\n%s", seen)
	}
	run := runID(t, o.stderr)
	var shown treeShown
	if err := json.Unmarshal([]byte(e.run("tree", run, "--json").stdout), &shown); err != nil || len(shown.Nodes) != 5 {
		t.Fatalf("tree --json: %v, %d nodes", err, len(shown.Nodes))
	}
	for _, n := range shown.Nodes {
		if n.State != "complete" {
			t.Fatalf("#%d is %s", n.ID, n.State)
		}
	}
}

// TestSandboxRequired: where bubblewrap cannot be found, --sandbox
// required refuses to start (exit 2, saying what is missing), and auto
// says so once and runs, commands asking for approval as before.
func TestSandboxRequired(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.sandboxDefault()
	srv := llmtest.NewServer(llmtest.Turn{Text: "nothing to do"})
	defer srv.Close()
	model := e.useProvider("anthropic", srv.URL)
	noBwrap := t.TempDir() // a PATH with bash but no bwrap
	for _, tool := range []string{"bash", "git"} {
		if p, err := exec.LookPath(tool); err == nil {
			if err := os.Symlink(p, filepath.Join(noBwrap, tool)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i, v := range e.vars {
		if strings.HasPrefix(v, "PATH=") {
			e.vars[i] = "PATH=" + noBwrap
		}
	}
	o := e.run("run", "--sandbox", "required", "--model", model, "hello")
	if o.code != 2 || !strings.Contains(o.stderr, "sandbox.mode is required") || !strings.Contains(o.stderr, "apt-get install bubblewrap") {
		t.Fatalf("required without bubblewrap: exit %d\n%s", o.code, o.stderr)
	}
	o = e.run("run", "--model", model, "hello")
	if o.code != 0 || strings.Count(o.stderr, "the sandbox is unavailable") != 1 || strings.TrimSpace(o.stdout) != "nothing to do" {
		t.Fatalf("auto without bubblewrap: exit %d, stdout %q\n%s", o.code, o.stdout, o.stderr)
	}
	// The same for a headless session: required refuses before ready,
	// auto says ready and warns once.
	o = e.run("headless", "--sandbox", "required", "--model", model)
	if o.code != 2 || strings.Contains(o.stdout, "ready") || !strings.Contains(o.stderr, "sandbox.mode is required") {
		t.Fatalf("headless, required without bubblewrap: exit %d, stdout %q\n%s", o.code, o.stdout, o.stderr)
	}
	o = e.run("headless", "--model", model)
	if o.code != 0 || !strings.Contains(o.stdout, `"type":"ready"`) || strings.Count(o.stderr, "the sandbox is unavailable") != 1 {
		t.Fatalf("headless, auto without bubblewrap: exit %d, stdout %q\n%s", o.code, o.stdout, o.stderr)
	}
}

// TestSandboxBlockedEvents: what the sandbox refused reaches people, not
// only the model: a toast in the envelope protocol (with status saying the
// sandbox is on), a sandbox_blocked system line in stream-json.
func TestSandboxBlockedEvents(t *testing.T) {
	t.Parallel()
	outside := fmt.Sprintf("/var/tmp/arbor-sandbox-escape-events-%d.txt", os.Getpid())
	t.Cleanup(func() { // after the parallel subtests
		if _, err := os.Stat(outside); err == nil {
			t.Error("a command wrote outside the workspace")
		}
		_ = os.Remove(outside)
	})
	blockedCall := llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "shell", Input: map[string]any{"command": "echo x > " + outside}}}}

	t.Run("envelope", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.sandboxDefault()
		srv := llmtest.NewServer(blockedCall, llmtest.Turn{Text: "blocked, as expected"})
		defer srv.Close()
		model := e.useProvider("anthropic", srv.URL)
		c, stdin, stdout := e.startPiped(t, "headless", "--model", model)
		sc := bufio.NewScanner(stdout)
		var toast, status string
		for sc.Scan() {
			var env struct {
				Type    string          `json:"type"`
				Payload json.RawMessage `json:"payload"`
			}
			if err := json.Unmarshal(sc.Bytes(), &env); err != nil {
				t.Fatalf("stdout line is not JSON: %q", sc.Text())
			}
			switch env.Type {
			case "ready":
				fmt.Fprintln(stdin, `{"type":"status"}`)
				fmt.Fprintln(stdin, `{"type":"send","content":"write the file"}`)
			case "status_response":
				status = string(env.Payload)
			case "toast":
				toast += string(env.Payload)
			case "idle":
				stdin.Close()
			}
		}
		if err := c.Wait(); err != nil {
			t.Fatalf("exit: %v", err)
		}
		if !strings.Contains(status, `"sandbox":"on"`) {
			t.Fatalf("status_response: %s", status)
		}
		if !strings.Contains(toast, "sandbox: commands may write only in") || !strings.Contains(toast, `"level":"warn"`) {
			t.Fatalf("toasts: %s", toast)
		}
	})
	t.Run("stream-json", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		e.sandboxDefault()
		srv := llmtest.NewServer(blockedCall, llmtest.Turn{Text: "blocked, as expected"})
		defer srv.Close()
		model := e.useProvider("anthropic", srv.URL)
		o := e.run("headless", "--protocol", "stream-json", "--approval-mode", "default", "--model", model, "write the file")
		if o.code != 0 || !strings.Contains(o.stdout, `"subtype":"sandbox_blocked"`) || !strings.Contains(o.stdout, "may write only in") {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", o.code, o.stdout, o.stderr)
		}
	})
}

// TestSandboxCommand: arbor sandbox runs a command confined, passes its
// output and exit code through and names what was blocked on stderr; the
// command gets the project settings' env.
func TestSandboxCommand(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	outside := fmt.Sprintf("/var/tmp/arbor-sandbox-escape-cmd-%d.txt", os.Getpid())
	t.Cleanup(func() { _ = os.Remove(outside) })
	o := e.run("sandbox", "--", "echo inside > made && cat made && echo x > "+outside)
	if o.code != 1 || !strings.HasPrefix(o.stdout, "inside\n") || !strings.Contains(o.stderr, "arbor: sandbox: commands may write only in "+e.workspace) {
		t.Fatalf("exit %d, stdout %q\nstderr:\n%s", o.code, o.stdout, o.stderr)
	}
	if _, err := os.Stat(outside); err == nil {
		t.Fatal("arbor sandbox let the command write outside the workspace")
	}
	if o := e.run("sandbox", "--sandbox", "off", "--", "true"); o.code != 2 {
		t.Fatalf("--sandbox off: exit %d, want 2\n%s", o.code, o.stderr)
	}
	// The project settings' env, as an agent's confined command gets it.
	if err := os.MkdirAll(filepath.Join(e.workspace, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.workspace, ".claude", "settings.json"), []byte(`{"env": {"PROJECT_ENV_MARKER": "env-9d2"}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if o := e.run("sandbox", "--", "echo marker=$PROJECT_ENV_MARKER"); o.code != 0 || o.stdout != "marker=env-9d2\n" {
		t.Fatalf("the settings' env: exit %d, stdout %q\nstderr:\n%s", o.code, o.stdout, o.stderr)
	}
}

// TestSandboxCommandArgv: after --, several arguments are a program and
// its arguments, each passed on as it is, and one is a shell command line.
// Before, the arguments were joined with spaces into one command line, so
// bash -c 'exit 7' exited 0, bash -c 'echo x > f' wrote an empty line and
// grep looked for "two" instead of "two words".
func TestSandboxCommandArgv(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if err := os.WriteFile(filepath.Join(e.workspace, "t.txt"), []byte("two words\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args   []string
		code   int
		stdout string
	}{
		{[]string{"bash", "-c", "exit 7"}, 7, ""},
		{[]string{"bash", "-c", "echo x > f && cat f"}, 0, "x\n"},
		{[]string{"grep", "-c", "two words", "t.txt"}, 0, "1\n"},
		{[]string{"printf", "%s|", "it's", "$HOME", "a b", ""}, 0, "it's|$HOME|a b||"},
		{[]string{"cat t.txt | wc -l"}, 0, "2\n"},
	} {
		o := e.run(append([]string{"sandbox", "--"}, c.args...)...)
		if o.code != c.code || o.stdout != c.stdout {
			t.Fatalf("arbor sandbox -- %q: exit %d, stdout %q; want %d, %q\nstderr:\n%s", c.args, o.code, o.stdout, c.code, c.stdout, o.stderr)
		}
	}
}
