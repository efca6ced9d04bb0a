package cli_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/store"
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
// synthesizes #2's result. What Claude Code used is charged to #2.
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
	var synthesis, readNode string
	served := &servedSpend{}
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
			return served.serve(req, child[i])
		case treetest.NodeOf(req) == 1 && treetest.Turns(req) == 2: // the root's synthesis: how much did #2 spend?
			mu.Lock()
			synthesis = req.LastUserText()
			mu.Unlock()
			return treetest.Calls(treetest.Call("read_node", map[string]any{"id": "#2"}))
		case treetest.NodeOf(req) == 1 && treetest.Turns(req) >= 3:
			mu.Lock()
			readNode = req.LastUserText()
			text := synthesis
			mu.Unlock()
			_, res, _ := strings.Cut(text, "(complete) Write the proof\n")
			res, _, _ = strings.Cut(res, "\n")
			return treetest.Complete("ROOT: " + res)
		case treetest.NodeOf(req) == 1:
			return root(req)
		}
		return served.serve(req, llmtest.Turn{Text: "ok"}) // Claude Code's side requests
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
	// What Claude Code used is charged to #2: its session records what
	// the scripted server served Claude Code, arbor tree --json shows it,
	// and the run's budget accounting (read_node's spent) counts it.
	sess := e.show(m[1] + ".2").Session
	served.check(t, sess, readNode)
	tj := e.run("tree", "--json", m[1])
	var shown struct {
		Nodes []struct {
			ID      int64      `json:"id"`
			Usage   *llm.Usage `json:"usage"`
			CostUSD float64    `json:"cost_usd"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal([]byte(tj.stdout), &shown); err != nil || len(shown.Nodes) != 2 {
		t.Fatalf("tree --json: %v\n%s", err, tj.stdout)
	}
	if n := shown.Nodes[1]; n.ID != 2 || n.Usage == nil || *n.Usage != sess.Usage || n.CostUSD != sess.CostUSD {
		t.Fatalf("tree --json shows #2 with %+v, its session %+v $%v", n, sess.Usage, sess.CostUSD)
	}
}

// servedSpend adds up the usage the scripted server serves Claude Code,
// and its cost at Claude Code's list prices.
type servedSpend struct {
	mu     sync.Mutex
	tokens int64
	cost   float64
}

// claudePrices are Claude Code's list prices (USD per million input and
// output tokens) of the models it calls here.
var claudePrices = map[string][2]float64{"claude-sonnet-4-5": {3, 15}, "claude-haiku-4-5": {1, 5}, "claude-haiku-4-5-20251001": {1, 5}}

// serve gives turn a fixed usage and counts it.
func (s *servedSpend) serve(req llmtest.Request, turn llmtest.Turn) llmtest.Turn {
	turn.Usage = llmtest.Usage{Input: 1000, Output: 100}
	p, ok := claudePrices[req.Model]
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens += 1100
	if !ok {
		s.cost = -1e9 // check reports the model
	}
	s.cost += (1000*p[0] + 100*p[1]) / 1e6
	return turn
}

// check fails unless sess (a Claude Code node's session) and readNode
// (read_node's answer for it) show exactly what was served.
func (s *servedSpend) check(t *testing.T, sess store.Session, readNode string) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cost < 0 {
		t.Fatalf("Claude Code called a model without a price in claudePrices")
	}
	if sess.Usage.Total() != s.tokens || math.Abs(sess.CostUSD-s.cost) > 1e-9 {
		t.Fatalf("the node's session used %d tokens, $%v; Claude Code was served %d tokens, $%v", sess.Usage.Total(), sess.CostUSD, s.tokens, s.cost)
	}
	if want := fmt.Sprintf("spent: $%.4f, %d tokens", s.cost, s.tokens); readNode != "" && !strings.Contains(readNode, want) {
		t.Fatalf("read_node %q lacks %q", readNode, want)
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
// cancelled with what its interrupted turn used charged, and the run
// finishes.
func TestClaudeCodeNodeStopEndsItsProcess(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	served := &servedSpend{}
	srv := llmtest.NewServerFunc(func(req llmtest.Request) llmtest.Turn {
		switch {
		case hasTool(req, "mcp__arbor__complete"): // Claude Code as #2
			if treetest.Turns(req) == 0 {
				return served.serve(req, treetest.Calls(treetest.Call("Bash", map[string]any{
					"command": "echo $$ > sleep.pid; exec sleep 300", "description": "wait", "timeout": 600000})))
			}
			return served.serve(req, llmtest.Turn{Text: "interrupted"})
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
		return served.serve(req, llmtest.Turn{Text: "ok"})
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
	// The interrupted turn's spend is charged too: arbor waited for the
	// result that ends it before ending the process.
	served.check(t, e.show(m[1]+".2").Session, "")
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

// TestClaudeCodeSpendCountsAgainstTheRunBudget: what Claude Code used as
// #2 counts against the run's --max-tokens. The root's own calls stay far
// below it; #2's turn crosses it, so the root's synthesis never starts
// and the run ends with its budget spent, saying how many tokens it used.
func TestClaudeCodeSpendCountsAgainstTheRunBudget(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	served := &servedSpend{}
	var mu sync.Mutex
	var rootTokens int64
	var synthesized bool
	srv := llmtest.NewServerFunc(func(req llmtest.Request) llmtest.Turn {
		switch {
		case hasTool(req, "mcp__arbor__complete"): // Claude Code as #2
			if treetest.Turns(req) == 0 {
				return served.serve(req, treetest.Calls(treetest.Call("mcp__arbor__complete", map[string]any{"result": "spent a lot"})))
			}
			return served.serve(req, llmtest.Turn{Text: "Done."})
		case treetest.NodeOf(req) == 1:
			mu.Lock()
			defer mu.Unlock()
			rootTokens += 11
			var turn llmtest.Turn
			switch treetest.Turns(req) {
			case 0:
				turn = treetest.Calls(treetest.Call("spawn", map[string]any{"goal": "Spend", "prompt": "Spend tokens.", "runner": "claude-code"}))
			case 1:
				turn = treetest.Complete("draft")
			default:
				synthesized = true
				turn = treetest.Complete("ROOT: the budget was not enforced")
			}
			turn.Usage = llmtest.Usage{Input: 10, Output: 1}
			return turn
		}
		return served.serve(req, llmtest.Turn{Text: "ok"})
	})
	t.Cleanup(srv.Close)
	model := claudeEnv(t, e, srv.URL)

	o := e.run("run", "--yes", "--max-tokens", "2000", "--model", model, "Spend through Claude Code")
	mu.Lock()
	defer mu.Unlock()
	served.mu.Lock()
	used := rootTokens + served.tokens
	served.mu.Unlock()
	if o.code != 1 || synthesized || !strings.Contains(o.stderr, fmt.Sprintf("used %d of 2000 tokens", used)) {
		t.Fatalf("run: %d (want 1, the budget spent; %d tokens used, synthesized %v)\nstdout: %s\nstderr: %s", o.code, used, synthesized, o.stdout, o.stderr)
	}
	tj := e.run("tree", "--json", runID(t, o.stderr))
	var shown struct {
		Run store.Run `json:"run"`
	}
	if err := json.Unmarshal([]byte(tj.stdout), &shown); err != nil || shown.Run.Status != store.RunBudget {
		t.Fatalf("tree --json: %v\n%s", err, tj.stdout)
	}
}
