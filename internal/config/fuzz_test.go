package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/arbor-run/arbor/internal/testutil"
)

// FuzzLoad writes arbitrary bytes as the user's config.yaml, the
// project's .arbor/config.yaml and the project's .mcp.json, and checks
// what Load promises:
//
//   - no panic; an error is a clear one: a *FileError naming one of the
//     three files or a *ValidationError naming a field, both ErrInvalid;
//   - a Config Load returns is valid (validate passes again);
//   - the layers merge per key, project over user over built-in (model,
//     mode, max_turns, headless.queue_limit as the files set them), and
//     per MCP server, project config over .mcp.json over user config,
//     each server's source the file of the layer that won;
//   - a file that loads holds no key arbor does not know.
func FuzzLoad(f *testing.F) {
	for _, s := range [][3]string{
		{"", "", ""},
		{"model: anthropic/claude-sonnet-4-5\nmax_turns: 7\n", "mode: trust\nheadless: {queue_limit: 3}\n", ""},
		{"providers:\n  local:\n    type: openai\n    base_url: http://127.0.0.1:8080/v1\n    models:\n      m: {context_window: 1000, price: {input_per_mtok: 1}}\n",
			"model: local/m\npools:\n  fast: [local/m, anthropic/claude-sonnet-4-5]\nnode_models: {fast: local/m}\n", ""},
		{"mcp_servers:\n  a: {command: x}\n  b: {url: http://h/mcp}\n", "mcp_servers:\n  a: {type: sse, url: http://h/sse}\n",
			`{"mcpServers": {"b": {"command": "npx", "args": ["-y", "s"]}, "c": {"type": "http", "url": "http://c/mcp"}}}`},
		{"compaction: {threshold: 0.5, keep_recent: 2}\nretry: {max_attempts: 2, stall_timeout: 5s}\n", "question_timeout: 1m\napproval_timeout: -1s\n", "{"},
		{"store: postgres://u@h/db\n", "modle: x\n", `{"x": {"command": "y"}}`},
		{"a: &a {b: 1}\nc: *a\n", "<<: {model: x}\n", "[]"},
		{"providers: {anthropic: {api_key: sk-1234567890}}\n", "max_turns: 0\n", `{"mcpServers": {"bad name": {"command": "x"}}}`},
	} {
		f.Add([]byte(s[0]), []byte(s[1]), []byte(s[2]))
	}
	root := testutil.MemDir(f) // the files are rewritten for every input
	env := map[string]string{"HOME": filepath.Join(root, "home"), "XDG_CONFIG_HOME": filepath.Join(root, "config"),
		"XDG_STATE_HOME": filepath.Join(root, "state")}
	getenv := func(k string) string { return env[k] }
	ws := filepath.Join(root, "ws")
	files := [3]string{filepath.Join(root, "config", "arbor", "config.yaml"), filepath.Join(ws, ".arbor", "config.yaml"), filepath.Join(ws, ".mcp.json")}
	for _, p := range files {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			f.Fatal(err)
		}
	}
	// written holds what the files hold, so that an input rewrites only
	// the files it changes (the fuzzer mutates one at a time, and system
	// calls are most of an input's cost); nil is no file.
	var written [3][]byte
	f.Fuzz(func(t *testing.T, user, project, mcpJSON []byte) {
		for i, data := range [][]byte{user, project, mcpJSON} {
			if i == 2 && len(data) == 0 {
				// An empty .mcp.json is refused like any file that is not
				// JSON; no file lets the fuzzer reach the other layers.
				data = nil
			} else if data == nil {
				data = []byte{}
			}
			switch {
			case written[i] != nil && data != nil && bytes.Equal(written[i], data):
				continue
			case data == nil:
				if err := os.Remove(files[i]); err != nil && !errors.Is(err, fs.ErrNotExist) {
					t.Fatal(err)
				}
			default:
				if err := os.WriteFile(files[i], data, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			written[i] = bytes.Clone(data)
		}
		c, err := Load(LoadOptions{Workspace: ws, Getenv: getenv})
		if err != nil {
			checkLoadError(t, err, files)
			return
		}
		if err := c.validate(); err != nil {
			t.Fatalf("Load returned a config that does not validate: %v", err)
		}
		layers := []fileLayer{decodeLayer(t, user), decodeLayer(t, project)}
		base := builtin(getenv)
		want := struct {
			model, mode string
			maxTurns    int
			queueLimit  int
		}{base.Model, base.Mode, base.MaxTurns, base.Headless.QueueLimit}
		for _, l := range layers {
			if l.Model != nil {
				want.model = *l.Model
			}
			if l.Mode != nil {
				want.mode = *l.Mode
			}
			if l.MaxTurns != nil {
				want.maxTurns = *l.MaxTurns
			}
			if l.Headless.QueueLimit != nil {
				want.queueLimit = *l.Headless.QueueLimit
			}
		}
		if c.Model != strings.TrimSpace(want.model) || c.Mode != strings.TrimSpace(want.mode) ||
			c.MaxTurns != want.maxTurns || c.Headless.QueueLimit != want.queueLimit {
			t.Fatalf("merged model %q mode %q max_turns %d queue_limit %d, want %q %q %d %d",
				c.Model, c.Mode, c.MaxTurns, c.Headless.QueueLimit, want.model, want.mode, want.maxTurns, want.queueLimit)
		}
		// MCP servers: user config, then .mcp.json, then project config.
		source := map[string]string{}
		for name := range layers[0].MCPServers {
			source[name] = files[0]
		}
		if servers, err := ParseMCPJSON(mcpJSON); err == nil {
			for name := range servers {
				source[name] = files[2]
			}
		} else if len(mcpJSON) > 0 { // no file when empty
			t.Fatalf("Load accepted a .mcp.json that ParseMCPJSON refuses: %v", err)
		}
		for name := range layers[1].MCPServers {
			source[name] = files[1]
		}
		if len(source) != len(c.MCPServers) {
			t.Fatalf("%d MCP servers, the files define %d", len(c.MCPServers), len(source))
		}
		for name, s := range c.MCPServers {
			if s.Source != source[name] {
				t.Fatalf("MCP server %q from %s, want %s", name, s.Source, source[name])
			}
		}
	})
}

// fileLayer is what FuzzLoad reads of a config file itself: the keys whose
// merge it checks, decoded leniently.
type fileLayer struct {
	Model    *string `yaml:"model"`
	Mode     *string `yaml:"mode"`
	MaxTurns *int    `yaml:"max_turns"`
	Headless struct {
		QueueLimit *int `yaml:"queue_limit"`
	} `yaml:"headless"`
	MCPServers map[string]yaml.Node `yaml:"mcp_servers"`
}

// decodeLayer decodes a file Load accepted; it also checks that every key
// of its top-level mapping is one arbor knows.
func decodeLayer(t *testing.T, data []byte) fileLayer {
	t.Helper()
	var l fileLayer
	if err := yaml.Unmarshal(data, &l); err != nil {
		t.Fatalf("Load accepted a file that does not decode: %v\n%q", err, data)
	}
	var root yaml.Node
	if yaml.Unmarshal(data, &root) == nil && len(root.Content) > 0 && root.Content[0].Kind == yaml.MappingNode {
		known := yamlFields(reflect.TypeOf(fileConfig{}))
		m := root.Content[0]
		for i := 0; i+1 < len(m.Content); i += 2 {
			if k := m.Content[i]; k.Tag != "!!merge" && known[k.Value] == nil {
				t.Fatalf("Load accepted the unknown key %q\n%q", k.Value, data)
			}
		}
	}
	return l
}

// checkLoadError checks that err is a clear error: a *FileError naming
// one of files, or a *ValidationError naming a field, both ErrInvalid.
func checkLoadError(t *testing.T, err error, files [3]string) {
	t.Helper()
	var fe *FileError
	var ve *ValidationError
	switch {
	case !errors.Is(err, ErrInvalid):
		t.Fatalf("Load: %v (%T), not ErrInvalid", err, err)
	case errors.As(err, &fe):
		if fe.Path != files[0] && fe.Path != files[1] && fe.Path != files[2] || fe.Err == nil {
			t.Fatalf("FileError for %q: %v", fe.Path, err)
		}
		if !strings.HasPrefix(err.Error(), "config file "+fe.Path) {
			t.Fatalf("FileError message %q does not start with the file", err)
		}
	case errors.As(err, &ve):
		if ve.Field == "" || ve.Reason == "" || !strings.HasPrefix(err.Error(), "invalid config: "+ve.Field) {
			t.Fatalf("ValidationError without a field or reason: %q", err)
		}
	default:
		t.Fatalf("Load: %v (%T)", err, err)
	}
}

// FuzzMCPConfig gives --mcp-config arbitrary JSON, as a value and as a
// file, and checks what ReadMCPConfig promises: no panic; the value and
// the file give the same servers or the same error, which names
// --mcp-config and is ErrBadMCPServer; every server returned has a valid
// name and can be used as written (a stdio command, an http/sse URL, or
// sdk); the servers survive a round trip through Claude Code's format;
// Expand keeps every value in place or names the variables missing.
func FuzzMCPConfig(f *testing.F) {
	for _, s := range []string{
		`{"mcpServers": {"fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."], "env": {"T": "${TOKEN:-x}"}}}}`,
		`{"gh": {"type": "http", "url": "https://${HOST}/mcp", "headers": {"Authorization": "Bearer ${GH_TOKEN}"}}}`,
		`{"mcpServers": {"s": {"type": "sdk", "name": "s"}, "e": {"type": "sse", "url": "http://h/sse", "disabled": true}}}`,
		`{"mcpServers": {"x": {"type": "websocket", "url": "ws://h"}}}`,
		`{"mcpServers": {"bad name": {"command": "x"}}}`,
		`{"mcpServers": {"a": {"command": 1}}}`,
		`{"mcpServers": null, "b": {"type": "streamable-http", "url": "http://b"}}`,
		` {"MCPSERVERS": {"c": {"TYPE": "stdio", "COMMAND": "c"}}, "mcpServers": {}}`,
		`{}`, `{`, `[]`,
	} {
		f.Add([]byte(s))
	}
	path := filepath.Join(testutil.MemDir(f), "mcp.json")
	env := map[string]string{"TOKEN": "t", "HOST": "h"}
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		fromFile, ferr := ReadMCPConfig(path)
		if s := strings.TrimSpace(string(data)); strings.HasPrefix(s, "{") {
			fromValue, verr := ReadMCPConfig(string(data))
			if (ferr == nil) != (verr == nil) || ferr != nil && ferr.Error() != verr.Error() || !reflect.DeepEqual(fromFile, fromValue) {
				t.Fatalf("as a file: %v, %v; as a value: %v, %v", fromFile, ferr, fromValue, verr)
			}
		}
		if ferr != nil {
			if !errors.Is(ferr, ErrBadMCPServer) || !strings.HasPrefix(ferr.Error(), "--mcp-config: ") {
				t.Fatalf("error %q is not ErrBadMCPServer or does not name --mcp-config", ferr)
			}
			return
		}
		for name, s := range fromFile {
			if err := checkMCPServer(name, s); err != nil {
				t.Fatalf("returned a server that cannot be used: %v", err)
			}
			switch s.Transport() {
			case MCPStdio, MCPHTTP, MCPSSE, MCPSDK:
			default:
				t.Fatalf("server %q has transport %q", name, s.Transport())
			}
			ex, err := s.Expand(func(k string) string { return env[k] })
			if err != nil {
				if !errors.Is(err, ErrBadMCPServer) || !strings.Contains(err.Error(), "is not set") {
					t.Fatalf("Expand: %v", err)
				}
				continue
			}
			if len(ex.Args) != len(s.Args) || len(ex.Env) != len(s.Env) || len(ex.Headers) != len(s.Headers) {
				t.Fatalf("Expand changed the shape of %+v: %+v", s, ex)
			}
		}
		if len(fromFile) == 0 {
			return
		}
		again, err := json.Marshal(map[string]any{"mcpServers": fromFile})
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseMCPJSON(again)
		if err != nil {
			t.Fatalf("the servers do not parse back: %v\n%s", err, again)
		}
		if !reflect.DeepEqual(normalizeMCP(back), normalizeMCP(fromFile)) {
			t.Fatalf("round trip changed the servers:\n%+v\n%+v", fromFile, back)
		}
	})
}

// normalizeMCP makes empty lists and maps nil, as omitempty writes them.
func normalizeMCP(m map[string]MCPServer) map[string]MCPServer {
	out := map[string]MCPServer{}
	for k, s := range m {
		if len(s.Args) == 0 {
			s.Args = nil
		}
		if len(s.Env) == 0 {
			s.Env = nil
		}
		if len(s.Headers) == 0 {
			s.Headers = nil
		}
		out[k] = s
	}
	return out
}
