package cli_test

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/testutil"
	"github.com/arbor-run/arbor/internal/tree/treetest"
)

// claudeEnv installs the real Claude Code CLI (testdata/claude-code) and
// points e's arbor at it and at the scripted model server url.
func claudeEnv(t *testing.T, e *env, url string) string {
	t.Helper()
	dir := testutil.NPMPackage(t, filepath.Join("testdata", "claude-code"))
	claude := filepath.Join(dir, "node_modules", "@anthropic-ai", "claude-code", "bin", "claude.exe")
	e.useProvider("anthropic", url)
	e.vars = append(e.vars, "ARBOR_CLAUDE="+claude, "ENABLE_TOOL_SEARCH=false",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1", "MCP_TOOL_TIMEOUT=300000")
	return "anthropic/claude-sonnet-4-5"
}

// TestClaudeCodeRunsANode runs a tree whose child #2 is run by the real
// Claude Code CLI (runner claude-code) inside arbor run, on the scripted
// model server. Claude Code's permission prompts come to arbor: its first
// Bash call is approved (--yes), its second is denied by a project deny
// rule; it completes #2 through arbor mcp --node, and the root
// synthesizes #2's result.
func TestClaudeCodeRunsANode(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rules := "rules:\n  - rule: \"Bash(touch *)\"\n    action: deny\n"
	if err := os.MkdirAll(filepath.Join(e.workspace, ".arbor"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.workspace, ".arbor", "permissions.yaml"), []byte(rules), 0o644); err != nil {
		t.Fatal(err)
	}
	child := []llmtest.Turn{
		treetest.Calls(treetest.Call("Bash", map[string]any{"command": "echo approved-by-arbor > proof.txt", "description": "write the proof"})),
		treetest.Calls(treetest.Call("Bash", map[string]any{"command": "touch denied.txt", "description": "touch a file"})),
		treetest.Calls(treetest.Call("mcp__arbor__complete", map[string]any{"result": "the proof is written"})),
		{Text: "Done."},
	}
	root := treetest.Responder(treetest.Script{1: {
		treetest.Calls(treetest.Call("spawn", map[string]any{"goal": "Write the proof", "prompt": "Write proof.txt.", "runner": "claude-code"})),
		treetest.Complete("draft"),
	}})
	var mu sync.Mutex
	var childReqs []llmtest.Request
	var synthesis string
	srv := llmtest.NewServerFunc(func(req llmtest.Request) llmtest.Turn {
		switch {
		case hasTool(req, "mcp__arbor__complete"): // Claude Code's turns as #2
			mu.Lock()
			childReqs = append(childReqs, req)
			mu.Unlock()
			i := treetest.Turns(req)
			if i >= len(child) {
				return llmtest.Turn{Fault: &llmtest.Fault{Kind: llmtest.FaultServer, Status: 400}, Text: "no more turns for Claude Code"}
			}
			return child[i]
		case treetest.NodeOf(req) == 1 && treetest.Turns(req) >= 2: // the root's synthesis
			text := req.LastUserText()
			mu.Lock()
			synthesis = text
			mu.Unlock()
			_, res, _ := strings.Cut(text, "(complete) Write the proof\n")
			res, _, _ = strings.Cut(res, "\n")
			return treetest.Complete("ROOT: " + res)
		case treetest.NodeOf(req) == 1:
			return root(req)
		}
		return llmtest.Turn{Text: "ok"} // Claude Code's side requests
	})
	t.Cleanup(srv.Close)
	model := claudeEnv(t, e, srv.URL)

	o := e.run("run", "--yes", "--model", model, "Prove that Claude Code can run a node")
	if o.code != 0 {
		t.Fatalf("run: %d\nstdout: %s\nstderr: %s", o.code, o.stdout, o.stderr)
	}
	if got := strings.TrimSpace(o.stdout); got != "ROOT: the proof is written" {
		t.Fatalf("stdout %q (synthesis saw %q)\nstderr: %s", got, synthesis, o.stderr)
	}
	// The approved call ran, the denied one did not.
	b, err := os.ReadFile(filepath.Join(e.workspace, "proof.txt"))
	if err != nil || strings.TrimSpace(string(b)) != "approved-by-arbor" {
		t.Fatalf("proof.txt: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(e.workspace, "denied.txt")); !os.IsNotExist(err) {
		t.Fatalf("denied.txt exists (%v): the deny rule was not applied", err)
	}
	// Claude Code got arbor's denial as the second call's result, and its
	// first message was the node's prompt.
	mu.Lock()
	defer mu.Unlock()
	var sawDenial bool
	for _, r := range childReqs {
		if treetest.Turns(r) == 2 && strings.Contains(r.LastUserText(), "permission denied") {
			sawDenial = true
		}
	}
	if !sawDenial {
		t.Fatalf("Claude Code never saw arbor's denial; its requests' last texts: %q", lastTexts(childReqs))
	}
	if !strings.Contains(childReqs[0].Messages[0].Text(), "Write proof.txt.") {
		t.Fatalf("Claude Code's first message lacks the node's prompt: %q", childReqs[0].Messages[0].Text())
	}
	// arbor tree shows the runner of #2.
	m := runLine.FindStringSubmatch(o.stderr)
	if m == nil {
		t.Fatalf("no run id in stderr:\n%s", o.stderr)
	}
	tr := e.run("tree", m[1])
	if tr.code != 0 || !strings.Contains(tr.stdout, "#2 [complete] spawn: Write the proof (runner: claude-code)") {
		t.Fatalf("arbor tree: %+v", tr)
	}
}

func lastTexts(reqs []llmtest.Request) []string {
	out := make([]string, len(reqs))
	for i, r := range reqs {
		out[i] = r.LastUserText()
	}
	return out
}

// TestClaudeCodeNodeStopEndsItsProcess stops a node run by Claude Code
// while its Bash call runs: arbor interrupts Claude Code and ends its
// process group, so the command it started is gone too, #2 ends
// cancelled, and the run finishes.
func TestClaudeCodeNodeStopEndsItsProcess(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv := llmtest.NewServerFunc(func(req llmtest.Request) llmtest.Turn {
		switch {
		case hasTool(req, "mcp__arbor__complete"): // Claude Code as #2
			if treetest.Turns(req) == 0 {
				return treetest.Calls(treetest.Call("Bash", map[string]any{
					"command": "echo $$ > sleep.pid; exec sleep 300", "description": "wait", "timeout": 600000}))
			}
			return llmtest.Turn{Text: "interrupted"}
		case treetest.NodeOf(req) == 1:
			switch treetest.Turns(req) {
			case 0:
				return treetest.Calls(treetest.Call("spawn", map[string]any{"goal": "Wait forever", "prompt": "Sleep.", "runner": "claude-code"}))
			case 1: // wait (in the root's own shell) until #2's command runs
				return treetest.Calls(treetest.Call("shell", map[string]any{
					"command": "while ! grep -q . sleep.pid 2>/dev/null; do sleep 0.1; done", "timeout": 600}))
			case 2:
				return treetest.Calls(treetest.Call("stop", map[string]any{"id": "#2"}))
			case 3:
				return treetest.Complete("draft")
			default:
				return treetest.Complete("ROOT: " + firstLineOf(req.LastUserText(), "error: "))
			}
		}
		return llmtest.Turn{Text: "ok"}
	})
	t.Cleanup(srv.Close)
	model := claudeEnv(t, e, srv.URL)

	o := e.run("run", "--yes", "--model", model, "Stop a Claude Code node")
	if o.code != 0 {
		t.Fatalf("run: %d\nstdout: %s\nstderr: %s", o.code, o.stdout, o.stderr)
	}
	if !strings.HasPrefix(strings.TrimSpace(o.stdout), "ROOT: ") || !strings.Contains(o.stdout, "stop") {
		t.Fatalf("stdout %q\nstderr: %s", o.stdout, o.stderr)
	}
	b, err := os.ReadFile(filepath.Join(e.workspace, "sleep.pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	// The run has ended, so the stop has been carried out: the sleep
	// Claude Code started must be gone (a zombie is reaped by init).
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("the command Claude Code started (pid %d) still runs after the stop: %v", pid, err)
	}
	m := runLine.FindStringSubmatch(o.stderr)
	if m == nil {
		t.Fatalf("no run id in stderr:\n%s", o.stderr)
	}
	tr := e.run("tree", m[1])
	if !strings.Contains(tr.stdout, "#2 [cancelled] spawn: Wait forever (runner: claude-code)") {
		t.Fatalf("arbor tree: %+v", tr)
	}
}

// firstLineOf returns the rest of the first line of text starting with prefix.
func firstLineOf(text, prefix string) string {
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, prefix) {
			return strings.TrimPrefix(l, prefix)
		}
	}
	return ""
}
