package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// MCP server transports.
const (
	MCPStdio = "stdio"
	MCPHTTP  = "http" // streamable HTTP
	MCPSSE   = "sse"  // the older HTTP+SSE transport
	// MCPSDK is an in-process server of a Claude Agent SDK program
	// (createSdkMcpServer): its JSON-RPC travels over the stream-json
	// control channel of the client that declared it.
	MCPSDK = "sdk"
)

// ErrBadMCPServer: an MCP server entry cannot be used as written.
var ErrBadMCPServer = errors.New("invalid MCP server")

// MCPServer is one external MCP server whose tools arbor's agents get.
// Values may hold ${VAR} and ${VAR:-default}; they are expanded when the
// server starts (Expand), so secrets stay in the environment.
type MCPServer struct {
	// Type is stdio, http, sse or sdk; "" means stdio when Command is set
	// and http when URL is.
	Type string `yaml:"type" json:"type,omitempty"`
	// Command, Args, Env and Cwd start a stdio server. Env adds to
	// arbor's environment; Cwd defaults to the workspace.
	Command string            `yaml:"command" json:"command,omitempty"`
	Args    []string          `yaml:"args" json:"args,omitempty"`
	Env     map[string]string `yaml:"env" json:"env,omitempty"`
	Cwd     string            `yaml:"cwd" json:"cwd,omitempty"`
	// URL and Headers reach an http or sse server.
	URL     string            `yaml:"url" json:"url,omitempty"`
	Headers map[string]string `yaml:"headers" json:"headers,omitempty"`
	// StartTimeout bounds connecting and listing tools; 0 = the default.
	StartTimeout time.Duration `yaml:"start_timeout" json:"-"`
	// ToolTimeout bounds each call of one of its tools; 0 = none.
	ToolTimeout time.Duration `yaml:"tool_timeout" json:"-"`
	// Disabled servers are listed but not started.
	Disabled bool `yaml:"disabled" json:"disabled,omitempty"`
	// Sandbox confines a stdio server as the shell's commands are (when
	// the sandbox is on); sandbox.mcp does it for every server.
	Sandbox bool `yaml:"sandbox" json:"sandbox,omitempty"`
	// EnabledTools, when not empty, offers only the server's tools named
	// in it; DisabledTools leaves out the ones named in it (after
	// EnabledTools). A name is the server's own ("create_issue") or
	// arbor's ("mcp__github__create_issue"), as Codex's enabled_tools and
	// disabled_tools.
	EnabledTools  []string `yaml:"enabled_tools" json:"enabled_tools,omitempty"`
	DisabledTools []string `yaml:"disabled_tools" json:"disabled_tools,omitempty"`
	// Source names the file that defined the server (not read from it).
	Source string `yaml:"-" json:"-"`
}

// Transport returns the server's transport, inferring it when Type is "".
func (s MCPServer) Transport() string {
	switch t := strings.ToLower(strings.TrimSpace(s.Type)); {
	case t == "streamable-http" || t == "streamable_http" || t == "streamablehttp":
		return MCPHTTP
	case t != "":
		return t
	case s.Command == "" && s.URL != "":
		return MCPHTTP
	}
	return MCPStdio
}

// Offers reports whether the server's tool remote, which arbor offers as
// name, passes the entry's enabled_tools and disabled_tools.
func (s MCPServer) Offers(remote, name string) bool {
	named := func(list []string) bool {
		for _, n := range list {
			if n = strings.TrimSpace(n); n == remote || n == name {
				return true
			}
		}
		return false
	}
	if len(s.EnabledTools) > 0 && !named(s.EnabledTools) {
		return false
	}
	return !named(s.DisabledTools)
}

// UnknownTools says which names in enabled_tools and disabled_tools name
// none of the server's tools (each given by offers as its remote name and
// the name arbor offers it as), one "key: name, name" line per list; ""
// when every name matches one. Only the server knows its tools, so this is
// checked once it has listed them, not with the config.
func (s MCPServer) UnknownTools(names [][2]string) string {
	known := map[string]bool{}
	for _, n := range names {
		known[n[0]], known[n[1]] = true, true
	}
	var lines []string
	for _, l := range []struct {
		key  string
		list []string
	}{{"enabled_tools", s.EnabledTools}, {"disabled_tools", s.DisabledTools}} {
		var unknown []string
		for _, n := range l.list {
			if n = strings.TrimSpace(n); !known[n] {
				unknown = append(unknown, n)
			}
		}
		if len(unknown) > 0 {
			lines = append(lines, l.key+": "+strings.Join(unknown, ", "))
		}
	}
	return strings.Join(lines, "; ")
}

// checkToolNames reports an empty name in enabled_tools or
// disabled_tools.
func (s MCPServer) checkToolNames() error {
	for _, l := range []struct {
		key  string
		list []string
	}{{"enabled_tools", s.EnabledTools}, {"disabled_tools", s.DisabledTools}} {
		for i, n := range l.list {
			if strings.TrimSpace(n) == "" {
				return fmt.Errorf("%s[%d] is empty: name a tool of the server", l.key, i)
			}
		}
	}
	return nil
}

// check reports what makes the entry unusable, before expansion.
func (s MCPServer) check() error {
	if err := s.checkToolNames(); err != nil {
		return err
	}
	switch s.Transport() {
	case MCPStdio:
		if strings.TrimSpace(s.Command) == "" {
			return errors.New("a stdio server needs a command")
		}
	case MCPHTTP, MCPSSE:
		if strings.TrimSpace(s.URL) == "" {
			return fmt.Errorf("an %s server needs a url", s.Transport())
		}
	case MCPSDK:
		// Nothing to start: the client that declared it runs it.
	default:
		return fmt.Errorf("unknown type %q: use stdio, http, sse or sdk", s.Type)
	}
	return nil
}

// Expand returns s with ${VAR} and ${VAR:-default} replaced in every value
// through getenv. A variable that is unset (or empty) and has no default
// is an error naming it.
func (s MCPServer) Expand(getenv func(string) string) (MCPServer, error) {
	var missing []string
	ex := func(v string) string {
		out, miss := expandVars(v, getenv)
		missing = append(missing, miss...)
		return out
	}
	out := s
	out.Command, out.Cwd, out.URL = ex(s.Command), ex(s.Cwd), ex(s.URL)
	out.Args = make([]string, len(s.Args))
	for i, a := range s.Args {
		out.Args[i] = ex(a)
	}
	out.Env = expandMap(s.Env, ex)
	out.Headers = expandMap(s.Headers, ex)
	if len(missing) > 0 {
		sort.Strings(missing)
		return MCPServer{}, fmt.Errorf("%w: environment variable %s is not set", ErrBadMCPServer, strings.Join(dedupe(missing), ", "))
	}
	return out, nil
}

func expandMap(m map[string]string, ex func(string) string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = ex(v)
	}
	return out
}

func dedupe(s []string) []string {
	var out []string
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// expandVars replaces ${NAME} and ${NAME:-default}; anything else,
// including a bare $NAME, is kept as written.
func expandVars(s string, getenv func(string) string) (string, []string) {
	var (
		b       strings.Builder
		missing []string
	)
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), missing
		}
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			b.WriteString(s)
			return b.String(), missing
		}
		b.WriteString(s[:i])
		expr := s[i+2 : i+end]
		name, def, hasDef := strings.Cut(expr, ":-")
		switch v := getenv(name); {
		case !envName().MatchString(name):
			b.WriteString(s[i : i+end+1])
		case v != "":
			b.WriteString(v)
		case hasDef:
			b.WriteString(def)
		default:
			missing = append(missing, name)
		}
		s = s[i+end+1:]
	}
}

// MCPJSONFile is <workspace>/.mcp.json, Claude Code's project MCP file;
// "" without a workspace.
func (c *Config) MCPJSONFile() string {
	if c.workspace == "" {
		return ""
	}
	return filepath.Join(c.workspace, ".mcp.json")
}

// ParseMCPJSON reads MCP servers in Claude Code's format:
// {"mcpServers": {"name": {"type", "command", "args", "env", "url",
// "headers"}}}. A bare map of servers (without "mcpServers") is accepted
// too. Keys arbor does not use are ignored, as other tools add their own.
// An entry of type sdk ({"type": "sdk", "name": …}, how Claude Agent SDK
// programs pass their in-process servers) is kept: the stream-json client
// runs it.
func ParseMCPJSON(data []byte) (map[string]MCPServer, error) {
	var doc struct {
		MCPServers map[string]MCPServer `json:"mcpServers"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadMCPServer, err)
	}
	if doc.MCPServers == nil {
		var bare map[string]MCPServer
		if err := json.Unmarshal(data, &bare); err == nil {
			doc.MCPServers = bare
		}
	}
	for _, name := range sortedKeys(doc.MCPServers) {
		if err := checkMCPServer(name, doc.MCPServers[name]); err != nil {
			return nil, err
		}
	}
	return doc.MCPServers, nil
}

// checkMCPServer validates one named entry.
func checkMCPServer(name string, s MCPServer) error {
	if !validMCPName(name) {
		return fmt.Errorf("%w %q: a server name is letters, digits, '_' and '-'", ErrBadMCPServer, name)
	}
	if err := s.check(); err != nil {
		return fmt.Errorf("%w %q: %w", ErrBadMCPServer, name, err)
	}
	return nil
}

func validMCPName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// ReadMCPConfig reads --mcp-config's value: a JSON document in Claude
// Code's format, or the path of a file holding one.
func ReadMCPConfig(v string) (map[string]MCPServer, error) {
	data := []byte(v)
	if t := strings.TrimSpace(v); !strings.HasPrefix(t, "{") {
		var err error
		if data, err = os.ReadFile(t); err != nil {
			return nil, fmt.Errorf("--mcp-config: %w", err)
		}
	}
	servers, err := ParseMCPJSON(data)
	if err != nil {
		return nil, fmt.Errorf("--mcp-config: %w", err)
	}
	return servers, nil
}

// readMCPJSON reads the project's .mcp.json; a missing file is no servers.
func readMCPJSON(path string) (map[string]MCPServer, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	servers, err := ParseMCPJSON(data)
	if err != nil {
		return nil, &FileError{Path: path, Err: err}
	}
	return servers, nil
}

// addMCPServers merges servers from src (unless an entry names its own
// source): an entry replaces the lower layer's entry of the same name
// whole.
func (c *Config) addMCPServers(servers map[string]MCPServer, src string) {
	for name, s := range servers {
		if c.MCPServers == nil {
			c.MCPServers = map[string]MCPServer{}
		}
		if s.Source == "" {
			s.Source = src
		}
		c.MCPServers[name] = s
		c.sources["mcp_servers."+name] = s.Source
	}
}

// validateMCP checks every MCP server entry.
func (c *Config) validateMCP() error {
	for _, name := range sortedKeys(c.MCPServers) {
		s := c.MCPServers[name]
		if err := checkMCPServer(name, s); err != nil {
			return c.invalid("mcp_servers."+name, err, "%v", err)
		}
		if s.StartTimeout < 0 {
			return c.invalid("mcp_servers."+name+".start_timeout", nil, "must not be negative (got %v)", s.StartTimeout)
		}
		if s.ToolTimeout < 0 {
			return c.invalid("mcp_servers."+name+".tool_timeout", nil, "must not be negative (got %v)", s.ToolTimeout)
		}
	}
	return nil
}
