package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
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
