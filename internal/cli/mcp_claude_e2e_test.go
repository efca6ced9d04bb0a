package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/testutil"
	"github.com/arbor-run/arbor/internal/tree/treetest"
)

// hasTool reports whether a model request offers tool name.
func hasTool(req llmtest.Request, name string) bool {
	return slices.ContainsFunc(req.Tools, func(t llm.ToolSpec) bool { return t.Name == name })
}

// TestClaudeCodeBuildsTreeThroughMCP runs the real Claude Code CLI (npm
// @anthropic-ai/claude-code, testdata/claude-code) as an MCP client of
// arbor mcp. One scripted model server answers both: Claude Code's own
// turns call mcp__arbor__spawn three times (the third blocked_by the other
// two) and mcp__arbor__wait; the children arbor runs answer as nodes #2–#4.
func TestClaudeCodeBuildsTreeThroughMCP(t *testing.T) {
	t.Parallel()
	dir := testutil.NPMPackage(t, filepath.Join("testdata", "claude-code"))
	claude := filepath.Join(dir, "node_modules", "@anthropic-ai", "claude-code", "bin", "claude.exe")
	nodes := treetest.Responder(treetest.Script{
		2: {treetest.Complete("47 endpoints")},
		3: {treetest.Complete("GraphQL halves the requests")},
		4: {treetest.Complete("migrate the read paths first")},
	})
	spawn := func(goal string, extra map[string]any) llmtest.Turn {
		in := map[string]any{"goal": goal, "prompt": "do: " + goal}
		for k, v := range extra {
			in[k] = v
		}
		return treetest.Calls(treetest.Call("mcp__arbor__spawn", in))
	}
	main := []llmtest.Turn{
		spawn("Audit the REST API", nil),
		spawn("Research GraphQL", nil),
		spawn("Recommend", map[string]any{"blocked_by": []string{"#2", "#3"}}),
		treetest.Calls(treetest.Call("mcp__arbor__wait", map[string]any{"timeout_seconds": 300})),
		{Text: "Recommendation: migrate the read paths first."},
	}
	var mu sync.Mutex
	var mainReqs []llmtest.Request
	srv := llmtest.NewServerFunc(func(req llmtest.Request) llmtest.Turn {
		if treetest.NodeOf(req) != 0 {
			return nodes(req)
		}
		if !hasTool(req, "mcp__arbor__spawn") {
			// Claude Code's side requests (titles, summaries).
			return llmtest.Turn{Text: "ok"}
		}
		mu.Lock()
		mainReqs = append(mainReqs, req)
		mu.Unlock()
		i := treetest.Turns(req)
		if i >= len(main) {
			return llmtest.Turn{Fault: &llmtest.Fault{Kind: llmtest.FaultServer, Status: 400}, Text: "no more turns for Claude Code"}
		}
		return main[i]
	})
	t.Cleanup(srv.Close)
	e := newEnv(t)
	model := e.useProvider("anthropic", srv.URL)

	cfg := map[string]any{"mcpServers": map[string]any{"arbor": map[string]any{
		"command": arborBin, "args": []string{"mcp", "-m", model, "--goal", "REST or GraphQL?"}, "env": envMap(e.vars),
	}}}
	cfgPath := filepath.Join(e.home, "mcp.json")
	b, _ := json.Marshal(cfg)
	if err := os.WriteFile(cfgPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // hang guard
	defer cancel()
	c := exec.CommandContext(ctx, claude, "-p", "Should we move from REST to GraphQL? Use arbor.",
		"--mcp-config", cfgPath, "--strict-mcp-config", "--allowedTools", "mcp__arbor",
		"--output-format", "stream-json", "--verbose", "--model", "claude-sonnet-4-5")
	c.Dir = e.workspace
	c.Env = append(slices.Clone(e.vars), "ANTHROPIC_BASE_URL="+srv.URL, "ANTHROPIC_API_KEY=dummy",
		"ENABLE_TOOL_SEARCH=false", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_AUTOUPDATER=1",
		"MCP_TOOL_TIMEOUT=300000")
	var stderr bytes.Buffer
	c.Stderr = &stderr
	out, err := c.Output()
	if err != nil {
		t.Fatalf("claude: %v\nstderr: %s\nstdout: %s", err, stderr.String(), out)
	}
	var result string
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var m struct {
			Type    string `json:"type"`
			Result  string `json:"result"`
			IsError bool   `json:"is_error"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		if m.Type == "result" {
			if m.IsError {
				t.Fatalf("claude ended with an error: %s", sc.Text())
			}
			result = m.Result
		}
	}
	if !strings.Contains(result, "migrate the read paths first") {
		t.Fatalf("claude's result %q\nstdout: %s", result, out)
	}
	// The wait result Claude Code got held all three children's results.
	mu.Lock()
	last := mainReqs[len(mainReqs)-1]
	mu.Unlock()
	waitText := last.LastUserText()
	for _, want := range []string{"All 3 nodes have ended", "47 endpoints", "GraphQL halves the requests", "migrate the read paths first"} {
		if !strings.Contains(waitText, want) {
			t.Fatalf("the wait result lacks %q:\n%s", want, waitText)
		}
	}
	// #4 waited for its dependencies and got their results.
	for _, r := range srv.Requests() {
		if treetest.NodeOf(r) == 4 && !strings.Contains(r.Messages[0].Text(), "GraphQL halves the requests") {
			t.Fatalf("#4 started without #3's result:\n%s", r.Messages[0].Text())
		}
	}
	// The run is in the store, its tree built by Claude Code.
	runs := e.run("runs")
	if runs.code != 0 || !strings.Contains(runs.stdout, "REST or GraphQL?") {
		t.Fatalf("arbor runs: %+v", runs)
	}
}

func envMap(vars []string) map[string]string {
	m := map[string]string{}
	for _, v := range vars {
		if k, val, ok := strings.Cut(v, "="); ok {
			m[k] = val
		}
	}
	return m
}
