package cli_test

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/testutil"
	"github.com/arbor-run/arbor/internal/tree/treetest"
)

// inspector runs the MCP Inspector's CLI mode (npm
// @modelcontextprotocol/inspector, testdata/mcp-inspector) with args and
// returns its stdout.
func inspector(t *testing.T, dir string, args ...string) string {
	t.Helper()
	c := exec.Command("node", append([]string{filepath.Join("node_modules", "@modelcontextprotocol", "inspector", "cli", "build", "cli.js"), "--cli"}, args...)...)
	c.Dir = dir
	out, err := c.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("inspector %v: %v\n%s\n%s", args, err, out, stderr)
	}
	return string(out)
}

// toolText is the text of a tools/call result the inspector printed.
func toolText(t *testing.T, out string) (string, bool) {
	t.Helper()
	var res struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &res); err != nil || len(res.Content) == 0 {
		t.Fatalf("tools/call output: %v\n%s", err, out)
	}
	return res.Content[0].Text, res.IsError
}

// TestMCPInspectorConformance: the MCP Inspector lists arbor mcp's tools
// over stdio and, over streamable HTTP with a bearer token, calls spawn
// (three children, one blocked_by the others), wait and read_tree, with
// the children run by the scripted model.
func TestMCPInspectorConformance(t *testing.T) {
	t.Parallel()
	dir := testutil.NPMPackage(t, filepath.Join("testdata", "mcp-inspector"))
	srv := llmtest.NewServerFunc(treetest.Responder(treetest.Script{
		2: {treetest.Complete("47 endpoints")},
		3: {treetest.Complete("GraphQL halves the requests")},
		4: {treetest.Complete("migrate the read paths first")},
	}))
	t.Cleanup(srv.Close)
	e := newEnv(t)
	model := e.useProvider("anthropic", srv.URL)

	// stdio: the inspector starts arbor mcp itself.
	args := []string{}
	for _, v := range e.vars {
		args = append(args, "-e", v)
	}
	args = append(args, arborBin, "mcp", "-m", model, "--method", "tools/list")
	var list struct {
		Tools []struct {
			Name        string `json:"name"`
			Description string `json:"description"`
		} `json:"tools"`
	}
	out := inspector(t, dir, args...)
	if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &list); err != nil {
		t.Fatalf("tools/list: %v\n%s", err, out)
	}
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	if want := []string{"ask", "complete", "fork", "modify", "pause", "read_node", "read_tree", "resume", "spawn", "stop", "wait"}; !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}

	// Streamable HTTP: one server, so one run across the calls.
	p := e.start("mcp", "-m", model, "--goal", "REST or GraphQL?", "--http", "127.0.0.1:0", "--token", "t0ken")
	addr := regexp.MustCompile(`MCP server on (http://\S+)`)
	var url string
	waitFor(t, "the MCP server's address", func() bool {
		if m := addr.FindStringSubmatch(p.stderr.String()); m != nil {
			url = m[1]
		}
		return url != ""
	})
	callTool := func(name string, toolArgs ...string) (string, bool) {
		a := []string{url, "--transport", "http", "--header", "Authorization: Bearer t0ken", "--method", "tools/call", "--tool-name", name}
		for _, ta := range toolArgs {
			a = append(a, "--tool-arg", ta)
		}
		return toolText(t, inspector(t, dir, a...))
	}
	for i, goal := range []string{"Audit the REST API", "Research GraphQL"} {
		text, isErr := callTool("spawn", "goal="+goal, "prompt=do it")
		if want := []string{`"#2"`, `"#3"`}[i]; isErr || !strings.Contains(text, want) {
			t.Fatalf("spawn %s: %q (error %v), want %s", goal, text, isErr, want)
		}
	}
	if text, isErr := callTool("spawn", "goal=Recommend", "prompt=decide", `blocked_by=["#2", "#3"]`); isErr || !strings.Contains(text, `"#4"`) {
		t.Fatalf("spawn blocked_by: %q (error %v)", text, isErr)
	}
	text, isErr := callTool("wait", "timeout_seconds=120")
	for _, want := range []string{"All 3 nodes have ended", "47 endpoints", "GraphQL halves the requests", "migrate the read paths first"} {
		if isErr || !strings.Contains(text, want) {
			t.Fatalf("wait lacks %q (error %v):\n%s", want, isErr, text)
		}
	}
	text, isErr = callTool("read_tree")
	if isErr || !strings.Contains(text, "#4 [complete] spawn: Recommend") || !strings.Contains(text, "#1 [active] host: REST or GraphQL?") {
		t.Fatalf("read_tree (error %v):\n%s", isErr, text)
	}
	// #4 started with its dependencies' results.
	for _, r := range srv.Requests() {
		if treetest.NodeOf(r) == 4 && !strings.Contains(r.Messages[0].Text(), "47 endpoints") {
			t.Fatalf("#4 started without #2's result:\n%s", r.Messages[0].Text())
		}
	}
}
