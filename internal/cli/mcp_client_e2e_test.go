package cli_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
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
func (e *env) mcpServers(t *testing.T, extra ...string) {
	t.Helper()
	dir := testutil.NPMPackage(t, "testdata/mcpservers")
	bin := func(pkg string) string {
		return filepath.Join(dir, "node_modules", "@modelcontextprotocol", pkg, "dist", "index.js")
	}
	cfg := map[string]any{"mcpServers": map[string]any{
		"everything": map[string]any{"command": "node", "args": []string{bin("server-everything"), "stdio"}},
		"fs":         map[string]any{"command": "node", "args": []string{bin("server-filesystem"), e.workspace}},
	}}
	for _, name := range extra { // entries that cannot start
		cfg["mcpServers"].(map[string]any)[name] = map[string]any{"command": "/nonexistent/" + name}
	}
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
	e.mcpServers(t, "broken")
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
	if !strings.Contains(con.text(), "arbor: MCP server broken failed: starting /nonexistent/broken") {
		t.Fatalf("the failed server should be reported:\n%s", con.text())
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

// TestStreamJSONMCPConfig: arbor run as the Claude Agent SDK runs its CLI,
// with --mcp-config (a JSON string) and --strict-mcp-config: the project's
// .mcp.json is left out, the flag's real npm server is used, the model's
// call of its tool waits for the client's can_use_tool answer, and the
// result reaches the model; mcp_status reports the server.
func TestStreamJSONMCPConfig(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dir := testutil.NPMPackage(t, "testdata/mcpservers")
	everything := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	if err := os.WriteFile(filepath.Join(e.workspace, ".mcp.json"), []byte(`{"mcpServers": {"ignored": {"command": "/nonexistent"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	flagCfg, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"everything": map[string]any{"type": "stdio", "command": "node", "args": []string{everything, "stdio"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	srv := llmtest.NewServer(
		llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "mcp__everything__get-sum", Input: map[string]any{"a": 2, "b": 40}}}},
		llmtest.Turn{Text: "The sum is 42.", Expect: "42"},
	)
	defer srv.Close()
	model := e.useProvider("anthropic", srv.URL)
	c, stdin, stdout := e.startPiped(t, "--output-format", "stream-json", "--input-format", "stream-json", "--verbose",
		"--permission-prompt-tool", "stdio", "--model", model, "--mcp-config", string(flagCfg), "--strict-mcp-config")
	lines := bufio.NewScanner(stdout)
	lines.Buffer(make([]byte, 1<<20), 1<<20)
	next := func(pred func(map[string]any, string) bool) (map[string]any, string) {
		t.Helper()
		for lines.Scan() {
			var m map[string]any
			if json.Unmarshal(lines.Bytes(), &m) == nil && pred(m, lines.Text()) {
				return m, lines.Text()
			}
		}
		t.Fatalf("output ended: %v", lines.Err())
		return nil, ""
	}
	send := func(s string) {
		if _, err := io.WriteString(stdin, s+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	send(`{"type":"control_request","request_id":"init-1","request":{"subtype":"initialize"}}`)
	send(`{"type":"user","message":{"role":"user","content":"add 2 and 40"}}`)
	_, initLine := next(func(m map[string]any, _ string) bool { return m["type"] == "system" && m["subtype"] == "init" })
	if !strings.Contains(initLine, `"mcp_servers":[{"name":"everything","status":"connected","source":"dynamic"}]`) || !strings.Contains(initLine, `"mcp__everything__get-sum"`) {
		t.Fatalf("init: %s", initLine)
	}
	req, raw := next(func(m map[string]any, _ string) bool { return m["type"] == "control_request" })
	if !strings.Contains(raw, `"subtype":"can_use_tool"`) || !strings.Contains(raw, `"tool_name":"mcp__everything__get-sum"`) {
		t.Fatalf("want can_use_tool for the MCP tool: %s", raw)
	}
	send(`{"type":"control_response","response":{"subtype":"success","request_id":"` + req["request_id"].(string) + `","response":{"behavior":"allow"}}}`)
	_, result := next(func(m map[string]any, _ string) bool { return m["type"] == "result" })
	if !strings.Contains(result, `"result":"The sum is 42."`) {
		t.Fatalf("result: %s", result)
	}
	send(`{"type":"control_request","request_id":"st-1","request":{"subtype":"mcp_status"}}`)
	_, status := next(func(m map[string]any, raw string) bool { return strings.Contains(raw, `"request_id":"st-1"`) })
	if !strings.Contains(status, `"mcpServers":[{"name":"everything","status":"connected","serverInfo":{"name":`) {
		t.Fatalf("mcp_status: %s", status)
	}
	stdin.Close()
	if err := c.Wait(); err != nil {
		t.Fatalf("arbor: %v", err)
	}
}

// TestEnvelopeRealMCPServers: arbor headless (the envelope protocol) with
// the npm servers from .mcp.json: the model's call of the filesystem
// server's tool waits for the client's confirm, the file is written, and
// status_response lists both servers connected.
func TestEnvelopeRealMCPServers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.mcpServers(t)
	target := filepath.Join(e.workspace, "env.txt")
	srv := llmtest.NewServer(
		llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "mcp__fs__write_file", Input: map[string]any{"path": target, "content": "via envelope\n"}}}},
		llmtest.Turn{Text: "Written.", Expect: "Successfully wrote"},
	)
	defer srv.Close()
	model := e.useProvider("anthropic", srv.URL)
	c, stdin, stdout := e.startPiped(t, "headless", "--model", model)
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var confirmed, sawStatus bool
	for sc.Scan() {
		var env struct {
			Type    string `json:"type"`
			Payload struct {
				RequestID   string `json:"request_id"`
				ToolName    string `json:"tool_name"`
				LastOutcome string `json:"last_outcome"`
			} `json:"payload"`
		}
		if err := json.Unmarshal(sc.Bytes(), &env); err != nil {
			t.Fatalf("stdout line is not JSON: %q", sc.Text())
		}
		switch env.Type {
		case "ready":
			fmt.Fprintln(stdin, `{"type":"send","content":"write the file"}`)
		case "confirm_request":
			if env.Payload.ToolName != "mcp__fs__write_file" {
				t.Fatalf("confirm_request %s", sc.Text())
			}
			confirmed = true
			fmt.Fprintf(stdin, `{"type":"confirm","request_id":%q,"action":"allow"}`+"\n", env.Payload.RequestID)
		case "idle":
			if env.Payload.LastOutcome != "completed" {
				t.Fatalf("idle %s", sc.Text())
			}
			fmt.Fprintln(stdin, `{"type":"status"}`)
		case "status_response":
			if !strings.Contains(sc.Text(), `"mcp_servers":[{"name":"everything","status":"connected","tools":`) ||
				!strings.Contains(sc.Text(), `{"name":"fs","status":"connected","tools":`) {
				t.Fatalf("status_response %s", sc.Text())
			}
			sawStatus = true
			stdin.Close()
		}
	}
	if err := c.Wait(); err != nil {
		t.Fatalf("exit: %v", err)
	}
	if !confirmed || !sawStatus {
		t.Fatalf("confirmed %v, status %v", confirmed, sawStatus)
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "via envelope\n" {
		t.Fatalf("env.txt = %q, %v", b, err)
	}
}
