package config

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestMCPServers(t *testing.T) {
	t.Parallel()

	t.Run("layers merge per server, project over .mcp.json over user", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		writeFile(t, b.userFile(), `
mcp_servers:
  github:
    url: https://api.example.com/mcp
    headers: {Authorization: "Bearer ${GITHUB_TOKEN}"}
  fs:
    command: user-fs
`)
		writeFile(t, filepath.Join(b.workspace, ".mcp.json"), `{
  "mcpServers": {
    "fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."], "env": {"A": "1"}},
    "docs": {"type": "sse", "url": "http://localhost:9/sse", "x-other-tool": true}
  }
}`)
		writeFile(t, b.projectFile(), `
mcp_servers:
  docs:
    type: http
    url: http://localhost:8/mcp
    start_timeout: 5s
    tool_timeout: 2m
`)
		c := b.mustLoad(t, Overrides{})
		equal(t, "servers", len(c.MCPServers), 3)
		gh := c.MCPServers["github"]
		equal(t, "github transport", gh.Transport(), MCPHTTP)
		equal(t, "github header kept unexpanded", gh.Headers["Authorization"], "Bearer ${GITHUB_TOKEN}")
		equal(t, "github source", gh.Source, b.userFile())
		fs := c.MCPServers["fs"]
		equal(t, "fs command from .mcp.json", fs.Command, "npx")
		equal(t, "fs args", strings.Join(fs.Args, " "), "-y @modelcontextprotocol/server-filesystem .")
		equal(t, "fs env", fs.Env["A"], "1")
		equal(t, "fs transport", fs.Transport(), MCPStdio)
		equal(t, "fs source", fs.Source, filepath.Join(b.workspace, ".mcp.json"))
		docs := c.MCPServers["docs"]
		equal(t, "docs replaced whole by the project file", docs.Transport(), MCPHTTP)
		equal(t, "docs url", docs.URL, "http://localhost:8/mcp")
		equal(t, "docs start timeout", docs.StartTimeout, 5*time.Second)
		equal(t, "docs tool timeout", docs.ToolTimeout, 2*time.Minute)
	})

	t.Run("invalid entries name the server", func(t *testing.T) {
		t.Parallel()
		for name, body := range map[string]string{
			"no command":   "mcp_servers:\n  broken:\n    args: [x]\n",
			"unknown type": "mcp_servers:\n  broken:\n    type: websocket\n    url: ws://x\n",
			"bad name":     "mcp_servers:\n  \"bro ken\":\n    command: x\n",
		} {
			b := setup(t)
			writeFile(t, b.projectFile(), body)
			_, err := b.load(Overrides{})
			var ve *ValidationError
			if !errors.As(err, &ve) || !errors.Is(err, ErrBadMCPServer) {
				t.Fatalf("%s: got %v, want a ValidationError wrapping ErrBadMCPServer", name, err)
			}
			if !strings.HasPrefix(ve.Field, "mcp_servers.") {
				t.Fatalf("%s: field %q", name, ve.Field)
			}
		}
	})

	t.Run("enabled_tools and disabled_tools choose the tools", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		writeFile(t, b.projectFile(), `
mcp_servers:
  gh:
    url: https://api.example.com/mcp
    enabled_tools: [list_issues, mcp__gh__get_issue, create_issue]
    disabled_tools: [create_issue]
  all:
    command: x
`)
		writeFile(t, filepath.Join(b.workspace, ".mcp.json"), `{"mcpServers": {"fs": {"command": "x", "disabled_tools": ["write"]}}}`)
		c := b.mustLoad(t, Overrides{})
		gh := c.MCPServers["gh"]
		for _, tc := range []struct {
			remote string
			want   bool
		}{{"list_issues", true}, {"get_issue", true}, {"create_issue", false}, {"delete_repo", false}} {
			equal(t, "gh offers "+tc.remote, gh.Offers(tc.remote, "mcp__gh__"+tc.remote), tc.want)
		}
		equal(t, "a server without lists offers all", c.MCPServers["all"].Offers("anything", "mcp__all__anything"), true)
		fs := c.MCPServers["fs"]
		equal(t, ".mcp.json's disabled_tools", fs.Offers("write", "mcp__fs__write"), false)
		equal(t, ".mcp.json's other tools", fs.Offers("read", "mcp__fs__read"), true)

		writeFile(t, b.projectFile(), "mcp_servers:\n  gh:\n    command: x\n    disabled_tools: [ok, \" \"]\n")
		_, err := b.load(Overrides{})
		var ve *ValidationError
		if !errors.As(err, &ve) || !strings.Contains(err.Error(), "disabled_tools[1] is empty") {
			t.Fatalf("an empty tool name: got %v", err)
		}
	})

	t.Run("unknown key in yaml is an error", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		writeFile(t, b.projectFile(), "mcp_servers:\n  a:\n    comand: x\n")
		_, err := b.load(Overrides{})
		if !errors.Is(err, ErrUnknownKey) {
			t.Fatalf("got %v, want ErrUnknownKey", err)
		}
	})

	t.Run("malformed .mcp.json names the file", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		path := writeFile(t, filepath.Join(b.workspace, ".mcp.json"), `{"mcpServers": {`)
		_, err := b.load(Overrides{})
		var fe *FileError
		if !errors.As(err, &fe) || fe.Path != path {
			t.Fatalf("got %v, want a FileError for %s", err, path)
		}
	})
}

func TestMCPExpand(t *testing.T) {
	t.Parallel()
	env := map[string]string{"TOKEN": "s3cret", "HOST": "example.com"}
	getenv := func(k string) string { return env[k] }
	s := MCPServer{
		Command: "${BIN:-node}", Args: []string{"--host=${HOST}", "$HOST", "${not a var}"},
		Env: map[string]string{"T": "${TOKEN}"}, URL: "https://${HOST}/mcp",
		Headers: map[string]string{"Authorization": "Bearer ${TOKEN}"},
	}
	got, err := s.Expand(getenv)
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "default", got.Command, "node")
	equal(t, "args", strings.Join(got.Args, "|"), "--host=example.com|$HOST|${not a var}")
	equal(t, "env", got.Env["T"], "s3cret")
	equal(t, "url", got.URL, "https://example.com/mcp")
	equal(t, "header", got.Headers["Authorization"], "Bearer s3cret")
	equal(t, "original untouched", s.Env["T"], "${TOKEN}")

	_, err = MCPServer{Command: "x", Headers: map[string]string{"A": "${MISSING_ONE}", "B": "${MISSING_ONE}${OTHER}"}}.Expand(getenv)
	if !errors.Is(err, ErrBadMCPServer) || !strings.Contains(err.Error(), "MISSING_ONE, OTHER is not set") {
		t.Fatalf("got %v", err)
	}
}

func TestParseMCPJSON(t *testing.T) {
	t.Parallel()
	servers, err := ParseMCPJSON([]byte(`{"a": {"command": "x"}, "b": {"type": "http", "url": "http://h/mcp"}}`))
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "bare map", len(servers), 2)
	equal(t, "b", servers["b"].URL, "http://h/mcp")
	if _, err := ParseMCPJSON([]byte(`{"mcpServers": {"a": {"type": "http"}}}`)); !errors.Is(err, ErrBadMCPServer) {
		t.Fatalf("http without url: %v", err)
	}
}

func TestMCPConfigFlag(t *testing.T) {
	t.Parallel()
	b := setup(t)
	writeFile(t, b.projectFile(), "mcp_servers:\n  fromfile:\n    command: x\n")
	path := writeFile(t, filepath.Join(b.home, "extra.json"), `{"mcpServers": {"b": {"type": "sse", "url": "http://h/sse"}}}`)
	a, err := ReadMCPConfig(`{"mcpServers": {"a": {"command": "server-a"}}}`)
	if err != nil {
		t.Fatal(err)
	}
	fb, err := ReadMCPConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	a["b"] = fb["b"]
	c := b.mustLoad(t, Overrides{MCPServers: a})
	equal(t, "merged", len(c.MCPServers), 3)
	equal(t, "flag source", c.MCPServers["a"].Source, "flag --mcp-config")
	c = b.mustLoad(t, Overrides{MCPServers: a, StrictMCP: true})
	equal(t, "strict keeps the flag's only", len(c.MCPServers), 2)

	sdk, err := ReadMCPConfig(`{"mcpServers": {"inproc": {"type": "sdk", "name": "inproc"}}}`)
	if err != nil {
		t.Fatalf("sdk server: %v", err)
	}
	equal(t, "sdk transport", sdk["inproc"].Transport(), MCPSDK)
	if _, err := ReadMCPConfig(filepath.Join(b.home, "missing.json")); err == nil {
		t.Fatal("a missing file must fail")
	}
}
