package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/testutil"
)

// mcpServers installs the real MCP servers from npm and writes the
// workspace's .mcp.json (Claude Code's format) running them: everything
// (the reference test server) and filesystem (rooted at the workspace).
func (e *env) mcpServers(t *testing.T) {
	t.Helper()
	dir := testutil.NPMPackage(t, "testdata/mcpservers")
	bin := func(pkg string) string {
		return filepath.Join(dir, "node_modules", "@modelcontextprotocol", pkg, "dist", "index.js")
	}
	cfg := map[string]any{"mcpServers": map[string]any{
		"everything": map[string]any{"command": "node", "args": []string{bin("server-everything"), "stdio"}},
		"fs":         map[string]any{"command": "node", "args": []string{bin("server-filesystem"), e.workspace}},
	}}
	data, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.workspace, ".mcp.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestMCPListRealServers: arbor mcp list starts the npm servers and shows
// their tools; a broken entry is reported failed.
func TestMCPListRealServers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.mcpServers(t)
	o := e.run("mcp", "list", "--json")
	if o.code != 0 {
		t.Fatalf("exit %d\n%s", o.code, o.stderr)
	}
	var servers []struct {
		Name  string
		State string
		Tools []struct{ Name string }
	}
	if err := json.Unmarshal([]byte(o.stdout), &servers); err != nil {
		t.Fatalf("%v\n%s", err, o.stdout)
	}
	if len(servers) != 2 || servers[0].Name != "everything" || servers[0].State != "connected" || servers[1].State != "connected" {
		t.Fatalf("servers = %+v", servers)
	}
	has := func(i int, name string) bool {
		for _, tl := range servers[i].Tools {
			if tl.Name == name {
				return true
			}
		}
		return false
	}
	if !has(0, "mcp__everything__echo") || !has(1, "mcp__fs__write_file") {
		t.Fatalf("tools = %+v", servers)
	}
	plain := e.run("mcp", "list")
	if !strings.Contains(plain.stdout, "everything  connected  stdio") || !strings.Contains(plain.stdout, "    mcp__fs__write_file  ") {
		t.Fatalf("table:\n%s", plain.stdout)
	}
}

// TestRunCallsRealMCPServers: a scripted model calls the npm servers'
// tools through arbor run on a terminal; each call waits for the user's
// approval (MCP tools ask by default), and the results reach the model.
func TestRunCallsRealMCPServers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.mcpServers(t)
	target := filepath.Join(e.workspace, "hello.txt")
	srv := llmtest.NewServer(
		llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "mcp__fs__write_file", Input: map[string]any{"path": target, "content": "written over MCP\n"}}}},
		llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "mcp__everything__echo", Input: map[string]any{"message": "ping"}}}, Expect: "Successfully wrote"},
		llmtest.Turn{Text: "Wrote the file and heard the echo.", Expect: "Echo: ping"},
	)
	defer srv.Close()
	model := e.useProvider("anthropic", srv.URL)
	con, wait := startOnTerminal(t, e, "run", "--plain", "--model", model, "use the MCP tools")
	con.expect("[y] yes", 1)
	if !strings.Contains(con.text(), "mcp__fs__write_file") {
		t.Fatalf("the prompt should name the MCP tool:\n%s", con.text())
	}
	con.send("y\n")
	con.expect("[y] yes", 2)
	con.send("y\n")
	stdout, code := wait()
	if code != 0 || strings.TrimSpace(stdout) != "Wrote the file and heard the echo." {
		t.Fatalf("exit %d stdout %q\n%s", code, stdout, con.text())
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "written over MCP\n" {
		t.Fatalf("hello.txt = %q, %v", b, err)
	}
	reqs := srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d model requests", len(reqs))
	}
	offered := map[string]bool{}
	for _, tl := range reqs[0].Tools {
		offered[tl.Name] = true
	}
	if !offered["mcp__everything__echo"] || !offered["mcp__fs__write_file"] || !offered["read_file"] {
		t.Fatalf("tools offered: %v", offered)
	}
}
