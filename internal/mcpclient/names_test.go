package mcpclient

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/config"
	"github.com/arbor-run/arbor/internal/tool"
)

// validName is the providers' rule for tool names (Anthropic's and
// OpenAI's): ^[a-zA-Z0-9_-]{1,64}$.
func validName(s string) bool {
	if len(s) < 1 || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// TestToolsTheProvidersAccept: a server whose tools have names too long
// for the providers, names that sanitize to the same name, an empty name,
// input schemas that are not an object schema, a huge description and a
// huge schema offers every tool under a name the providers accept, unique,
// with an object schema and a bounded description: one bad tool must not
// make every model request of the session fail with 400. Each call still
// reaches the server's own tool.
func TestToolsTheProvidersAccept(t *testing.T) {
	t.Parallel()
	b := setup(t, map[string]config.MCPServer{"a-rather-long-server-name": hostileServer(t, "names")}, nil)
	if st := b.m.Status()[0]; st.State != StateConnected {
		t.Fatalf("status = %+v", st)
	}
	_, tools := b.m.Tools()
	if len(tools) != 12 {
		t.Fatalf("%d tools, want all 12", len(tools))
	}
	seen := map[string]string{}
	for _, tl := range tools {
		info, remote := tl.Info(), tl.(*mcpTool).remote
		if !strings.HasPrefix(info.Name, "mcp__a-rather-long-server-name__") {
			t.Errorf("tool %q is offered as %q, which rules naming its server do not reach", remote, info.Name)
		}
		if !validName(info.Name) {
			t.Errorf("tool %q is offered as %q, which the providers refuse", remote, info.Name)
		}
		if prev, ok := seen[info.Name]; ok {
			t.Errorf("tools %q and %q are both offered as %q", prev, remote, info.Name)
		}
		seen[info.Name] = remote
		var schema map[string]any
		if err := json.Unmarshal(info.Schema, &schema); err != nil || schema["type"] != "object" {
			t.Errorf("tool %q: schema %.200s is not an object schema", remote, info.Schema)
		}
		if p, ok := schema["properties"]; ok {
			if _, isObj := p.(map[string]any); !isObj {
				t.Errorf("tool %q: properties %.200v is not an object", remote, p)
			}
		}
		if r, ok := schema["required"]; ok {
			if _, isArr := r.([]any); !isArr {
				t.Errorf("tool %q: required %.200v is not an array", remote, r)
			}
		}
		if len(info.Description) > maxDescription+200 || len(info.Schema) > maxSchema {
			t.Errorf("tool %q: description of %d bytes, schema of %d", remote, len(info.Description), len(info.Schema))
		}
	}
	for _, ts := range b.m.Status()[0].Tools {
		if len(ts.Description) > maxDescription+200 {
			t.Errorf("the status of %s holds a description of %d bytes", ts.Remote, len(ts.Description))
		}
	}
	if t.Failed() {
		return
	}
	for name, remote := range seen {
		if res := call(t, b.tool(t, name), `{}`); res.IsError || res.Content != "called "+remote {
			t.Fatalf("%s = %+v, want the call of %q", name, res, remote)
		}
	}
	if d := b.tool(t, ToolName("a-rather-long-server-name", "wordy")).Info().Description; !strings.HasSuffix(d, "[description cut: 1048576 bytes in all]") {
		t.Fatalf("the cut description does not say so: …%s", d[len(d)-100:])
	}
}

// TestEndlessToolList: a server whose tools/list hands out a next page
// for ever connects with its first maxTools tools, rather than listing
// (and holding them all in memory) until its start timeout.
func TestEndlessToolList(t *testing.T) {
	t.Parallel()
	b := setup(t, map[string]config.MCPServer{"pages": hostileServer(t, "pages")}, nil)
	st := b.m.Status()[0]
	if st.State != StateConnected || len(st.Tools) != 1000 {
		t.Fatalf("status: %s, %q, %d tools", st.State, st.Error, len(st.Tools))
	}
	if res := call(t, b.tool(t, "mcp__pages__t999"), `{}`); res.Content != "called t999" {
		t.Fatalf("t999 = %+v", res)
	}
}

// TestServersWhoseNamesClash: two servers whose names sanitize to the
// same (my.server, my_server) both offer all their tools, under names the
// model can tell apart, each call reaching its own server; the first
// server (by name) keeps the plain names.
func TestServersWhoseNamesClash(t *testing.T) {
	t.Parallel()
	b := setup(t, map[string]config.MCPServer{"my.server": stdioServer(t, nil), "my_server": hostileServer(t, "chatty")}, nil)
	_, tools := b.m.Tools()
	reg := tool.NewRegistry()
	reg.AddSource(b.m, nil)
	if got := len(reg.Names()); got != len(tools) || len(tools) != 7 {
		t.Fatalf("the registry offers %d of the %d tools, want 7", got, len(tools))
	}
	for i, st := range b.m.Status() {
		for j, ts := range st.Tools {
			if ts.Name != tools[i*6+j].Info().Name {
				t.Fatalf("status names %s %s, the model gets %s", st.Name, ts.Name, tools[i*6+j].Info().Name)
			}
		}
	}
	if res := call(t, b.tool(t, "mcp__my_server__echo"), `{"text":"a"}`); res.Content != "echo: a" {
		t.Fatalf("my.server's echo = %+v", res)
	}
	for _, tl := range tools {
		if tl.(*mcpTool).srv.name == "my_server" {
			if res := call(t, tl, `{}`); res.Content != "called echo" || !validName(tl.Info().Name) {
				t.Fatalf("my_server's echo as %s = %+v", tl.Info().Name, res)
			}
		}
	}
}
