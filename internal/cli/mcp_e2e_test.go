package cli_test

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/tree/treetest"
)

// mcpClient starts `arbor args…` and connects an MCP client to it over
// stdio; closing the session ends the process.
func (e *env) mcpClient(t *testing.T, args ...string) *mcp.ClientSession {
	t.Helper()
	c := e.cmd(context.Background(), args...)
	c.Stdin = nil
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil).Connect(context.Background(), &mcp.CommandTransport{Command: c}, nil)
	if err != nil {
		t.Fatalf("connect to arbor %v: %v", args, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func mcpCall(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // hang guard
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String(), res.IsError
}

// TestMCPRootNodeAndLease drives a run from an MCP client over stdio and
// checks that the run has one driver at a time: while that arbor mcp
// hosts it, arbor resume and a second arbor mcp --run are refused, and a
// node-mode arbor mcp acts through it with its node's authority; once it
// ended, another arbor mcp --run attaches.
func TestMCPRootNodeAndLease(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServerFunc(treetest.Responder(treetest.Script{
		2: {treetest.Complete("endpoint count: 47")},
	}))
	t.Cleanup(srv.Close)
	e := newEnv(t)
	model := e.useProvider("anthropic", srv.URL)

	cs := e.mcpClient(t, "mcp", "-m", model, "--goal", "audit the API")
	if text, isErr := mcpCall(t, cs, "spawn", map[string]any{"goal": "Count endpoints", "prompt": "count them"}); isErr || !strings.Contains(text, "#2") {
		t.Fatalf("spawn: %q (error %v)", text, isErr)
	}
	if text, isErr := mcpCall(t, cs, "wait", map[string]any{"ids": []string{"#2"}}); isErr || !strings.Contains(text, "endpoint count: 47") {
		t.Fatalf("wait: %q (error %v)", text, isErr)
	}
	res, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "arbor://runs"})
	if err != nil {
		t.Fatal(err)
	}
	var runs []struct {
		ID   string `json:"id"`
		Goal string `json:"goal"`
	}
	if err := json.Unmarshal([]byte(res.Contents[0].Text), &runs); err != nil || len(runs) != 1 || runs[0].Goal != "audit the API" {
		t.Fatalf("arbor://runs: %s (%v)", res.Contents[0].Text, err)
	}
	run := runs[0].ID

	// One driver: resume and a second host are refused while it lives.
	if out := e.run("resume", run); out.code == 0 || !strings.Contains(out.stderr, "pid") {
		t.Fatalf("resume of a hosted run: exit %d, %s", out.code, out.stderr)
	}
	if out := e.run("mcp", "-m", model, "--run", run); out.code != 1 || !strings.Contains(out.stderr, "is being driven by pid") {
		t.Fatalf("second arbor mcp --run: exit %d, %s", out.code, out.stderr)
	}

	// Node mode goes through the owner, with #2's authority.
	node := e.mcpClient(t, "mcp", "-m", model, "--run", run, "--node", "#2")
	if text, isErr := mcpCall(t, node, "read_tree", nil); isErr || !strings.Contains(text, "#2 [complete] spawn: Count endpoints") {
		t.Fatalf("node read_tree: %q (error %v)", text, isErr)
	}
	if text, isErr := mcpCall(t, node, "stop", map[string]any{"id": "#1"}); !isErr || !strings.Contains(text, "not in your subtree") {
		t.Fatalf("node stop #1: %q (error %v)", text, isErr)
	}
	_ = node.Close()

	if err := cs.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	// The run is free again, but only an MCP client continues it.
	if out := e.run("resume", run); out.code == 0 || !strings.Contains(out.stderr, "arbor mcp --run "+run) {
		t.Fatalf("resume of an idle hosted run: exit %d, %s", out.code, out.stderr)
	}
	// Another arbor mcp attaches to it.
	again := e.mcpClient(t, "mcp", "-m", model, "--run", run)
	if text, isErr := mcpCall(t, again, "read_tree", nil); isErr || !strings.Contains(text, "endpoint count: 47") {
		t.Fatalf("read_tree after attaching again: %q (error %v)", text, isErr)
	}
	if text, isErr := mcpCall(t, again, "complete", map[string]any{"result": "47 endpoints"}); isErr {
		t.Fatalf("complete: %s", text)
	}
	_ = again.Close()
	if out := e.run("mcp", "-m", model, "--run", "no-such-run", "--node", "#2"); out.code != 1 || !strings.Contains(out.stderr, "no-such-run") {
		t.Fatalf("node of an unknown run: exit %d, %s", out.code, out.stderr)
	}
	// A node of a run nobody drives cannot act.
	idle := e.mcpClient(t, "mcp", "-m", model, "--run", run, "--node", "#2")
	if text, isErr := mcpCall(t, idle, "read_tree", nil); !isErr || !strings.Contains(text, "not being driven") {
		t.Fatalf("node of an idle run: %q (error %v)", text, isErr)
	}
}

// TestMCPHTTPToken: a non-loopback bind needs a token; with one, requests
// without it get 401 and a client that sends it works.
func TestMCPHTTPToken(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServerFunc(treetest.Responder(nil))
	t.Cleanup(srv.Close)
	e := newEnv(t)
	model := e.useProvider("anthropic", srv.URL)
	if out := e.run("mcp", "-m", model, "--http", "0.0.0.0:0"); out.code != 2 || !strings.Contains(out.stderr, "--token") {
		t.Fatalf("non-loopback bind without a token: exit %d, %s", out.code, out.stderr)
	}
	if out := e.run("mcp", "-m", model, "--http", "127.0.0.1:0", "--idle-session", "-1s"); out.code != 2 || !strings.Contains(out.stderr, "--idle-session") {
		t.Fatalf("a negative --idle-session: exit %d, %s", out.code, out.stderr)
	}
	p := e.start("mcp", "-m", model, "--http", "127.0.0.1:0", "--token", "s3cret")
	addr := regexp.MustCompile(`MCP server on (http://\S+)`)
	var url string
	waitFor(t, "the MCP server's address", func() bool {
		m := addr.FindStringSubmatch(p.stderr.String())
		if m != nil {
			url = m[1]
		}
		return m != nil
	})
	resp, err := http.Post(url, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("without the token: %s, want 401", resp.Status)
	}
	hc := &http.Client{Transport: bearerTransport{"s3cret"}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil || len(tools.Tools) != 11 {
		t.Fatalf("tools over HTTP: %v %v", tools, err)
	}
}

type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestMCPNodeOfArborRun: arbor mcp --node acts as a node of a run that
// `arbor run` drives, through the owner, with that node's authority: it
// reads the tree, is refused outside its subtree, creates and stops a
// child of its own; the run then completes in its owner.
func TestMCPNodeOfArborRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv := llmtest.NewServerFunc(treetest.Responder(treetest.Script{
		1: {
			treetest.Calls(treetest.Call("ask", map[string]any{"question": "Which colour?"})),
			treetest.Calls(treetest.Call("spawn", map[string]any{"goal": "Paint", "prompt": "paint it", "blocked_by": []string{"#2"}})),
			treetest.Complete("draft"),
			treetest.Complete("FINAL: painted"),
		},
		3: {treetest.Complete("painted"), treetest.Complete("painted; the primer was stopped")},
	}))
	defer srv.Close()
	model := e.useProvider("anthropic", srv.URL)
	owner := e.start("run", "--model", model, "paint the fence")
	var run string
	waitFor(t, "the run to spawn #3", func() bool {
		if m := runLine.FindStringSubmatch(owner.stderr.String()); m != nil {
			run = m[1]
		}
		return run != "" && strings.Contains(e.run("tree", run).stdout, "#3 [pending] spawn: Paint")
	})

	node := e.mcpClient(t, "mcp", "-m", model, "--run", run, "--node", "#3")
	if text, isErr := mcpCall(t, node, "read_tree", nil); isErr || !strings.Contains(text, "#2 [active] ask: Which colour?") {
		t.Fatalf("read_tree: %q (error %v)", text, isErr)
	}
	if text, isErr := mcpCall(t, node, "stop", map[string]any{"id": "#2"}); !isErr || !strings.Contains(text, "not in your subtree") {
		t.Fatalf("stop #2: %q (error %v)", text, isErr)
	}
	if text, isErr := mcpCall(t, node, "spawn", map[string]any{"goal": "Prime", "prompt": "prime it", "blocked_by": []string{"#2"}}); isErr || !strings.Contains(text, `"#4"`) {
		t.Fatalf("spawn: %q (error %v)", text, isErr)
	}
	if text, isErr := mcpCall(t, node, "stop", map[string]any{"id": "#4"}); isErr || !strings.Contains(text, "#4 is now cancelled") {
		t.Fatalf("stop #4: %q (error %v)", text, isErr)
	}
	_ = node.Close()
	if o := e.run("answer", run, "#2", "green"); o.code != 0 {
		t.Fatalf("answer: exit %d %s", o.code, o.stderr)
	}
	<-owner.exited
	if owner.code != 0 || strings.TrimSpace(owner.stdout.String()) != "FINAL: painted" {
		t.Fatalf("owner: exit %d %q\n%s", owner.code, owner.stdout.String(), owner.stderr.String())
	}
	if tr := e.run("tree", run).stdout; !strings.Contains(tr, "#4 [cancelled] spawn: Prime") {
		t.Fatalf("tree:\n%s", tr)
	}
}
