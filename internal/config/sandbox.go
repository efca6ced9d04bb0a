package config

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/arbor-run/arbor/internal/tool/sandbox"
)

// Sandbox is the sandbox section: how the commands agents run are
// confined (see internal/tool/sandbox and docs/sandbox.md).
type Sandbox struct {
	// Mode is off, auto (the default: confine where a mechanism works) or
	// required (refuse to start where none does).
	Mode string `yaml:"mode"`
	// Writable are directories commands may write besides the workspace
	// and their private /tmp.
	Writable []string `yaml:"writable"`
	// DenyRead are paths commands may not read, besides the defaults
	// (~/.ssh, ~/.aws, ~/.gnupg, ~/.netrc, arbor's config and state, …).
	DenyRead []string       `yaml:"deny_read"`
	Network  SandboxNetwork `yaml:"network"`
	// MaxProcesses ends a call's processes once it has more at once; 0 is
	// the sandbox's default.
	MaxProcesses int `yaml:"max_processes"`
	// MaxMemory ends a call's processes once they hold more memory of
	// their own together ("2GiB", "512MiB"); "" is the sandbox's default
	// (half of the machine's).
	MaxMemory string `yaml:"max_memory"`
	// MCP confines every stdio MCP server as the shell's commands are (a
	// server's own sandbox: true confines that one).
	MCP bool `yaml:"mcp"`
	// Hooks confines the command hooks of the settings files
	// (.claude/settings.json) as the shell's commands are.
	Hooks bool `yaml:"hooks"`
	// AutoAllow lets a confined shell command run without asking (default
	// true; false: the mode decides, as without a sandbox).
	AutoAllow *bool `yaml:"auto_allow"`
	// AllowUnsandboxed lets a call ask a person to run outside the sandbox
	// (dangerously_disable_sandbox; default true).
	AllowUnsandboxed *bool `yaml:"allow_unsandboxed"`
}

// AutoAllows reports whether a confined command runs without asking.
func (s Sandbox) AutoAllows() bool { return s.AutoAllow == nil || *s.AutoAllow }

// AllowsUnsandboxed reports whether a call may ask to leave the sandbox.
func (s Sandbox) AllowsUnsandboxed() bool { return s.AllowUnsandboxed == nil || *s.AllowUnsandboxed }

// SandboxNetwork is what confined commands may reach.
type SandboxNetwork struct {
	// Allow lists hosts ("example.com", "*.example.com", "127.0.0.1:8080");
	// empty: no network.
	Allow []string `yaml:"allow"`
}

type fileSandbox struct {
	Mode     *string  `yaml:"mode"`
	Writable []string `yaml:"writable"`
	DenyRead []string `yaml:"deny_read"`
	Network  struct {
		Allow []string `yaml:"allow"`
	} `yaml:"network"`
	MaxProcesses     *int    `yaml:"max_processes"`
	MaxMemory        *string `yaml:"max_memory"`
	MCP              *bool   `yaml:"mcp"`
	Hooks            *bool   `yaml:"hooks"`
	AutoAllow        *bool   `yaml:"auto_allow"`
	AllowUnsandboxed *bool   `yaml:"allow_unsandboxed"`
}

// applySandbox merges a file's sandbox section. A project file may
// narrow the sandbox (deny more, fewer processes, required) but not widen
// it: what would widen it (mode off, writable paths, allowed hosts, more
// processes) is ignored with a warning, so that cloning a repository never
// lets it loosen the user's own settings.
func (c *Config) applySandbox(fs fileSandbox, src string) {
	project := src == c.ProjectConfigFile()
	widen := func(key string) {
		c.warnings = append(c.warnings, fmt.Sprintf("%s: sandbox.%s is ignored: a project file may narrow the sandbox, not widen it; put it in %s to agree", src, key, c.UserConfigFile()))
	}
	if fs.Mode != nil {
		if project && strings.EqualFold(strings.TrimSpace(*fs.Mode), "off") {
			widen("mode: off")
		} else {
			set(c, &c.Sandbox.Mode, fs.Mode, "sandbox.mode", src)
		}
	}
	if len(fs.Writable) > 0 {
		if project {
			widen("writable")
		} else {
			c.Sandbox.Writable = append(c.Sandbox.Writable, c.absAll(fs.Writable)...)
			c.sources["sandbox.writable"] = src
		}
	}
	if len(fs.Network.Allow) > 0 {
		if project {
			widen("network.allow")
		} else {
			c.Sandbox.Network.Allow = append(c.Sandbox.Network.Allow, fs.Network.Allow...)
			c.sources["sandbox.network.allow"] = src
		}
	}
	if len(fs.DenyRead) > 0 {
		c.Sandbox.DenyRead = append(c.Sandbox.DenyRead, c.absAll(fs.DenyRead)...)
		c.sources["sandbox.deny_read"] = src
	}
	for _, b := range []struct {
		v   *bool
		dst **bool
		key string
	}{{fs.AutoAllow, &c.Sandbox.AutoAllow, "auto_allow"}, {fs.AllowUnsandboxed, &c.Sandbox.AllowUnsandboxed, "allow_unsandboxed"}} {
		switch {
		case b.v == nil:
		case project && *b.v:
			widen(b.key + ": true")
		default:
			v := *b.v
			*b.dst = &v
			c.sources["sandbox."+b.key] = src
		}
	}
	if fs.MaxProcesses != nil {
		now := c.Sandbox.MaxProcesses
		if now <= 0 {
			now = sandbox.DefaultMaxProcesses
		}
		if project && (*fs.MaxProcesses > now || *fs.MaxProcesses == 0) {
			widen("max_processes")
		} else {
			set(c, &c.Sandbox.MaxProcesses, fs.MaxProcesses, "sandbox.max_processes", src)
		}
	}
	for _, b := range []struct {
		v   *bool
		dst *bool
		key string
	}{{fs.MCP, &c.Sandbox.MCP, "mcp"}, {fs.Hooks, &c.Sandbox.Hooks, "hooks"}} {
		if b.v == nil {
			continue
		}
		if project && !*b.v {
			widen(b.key + ": false")
		} else {
			set(c, b.dst, b.v, "sandbox."+b.key, src)
		}
	}
	if fs.MaxMemory != nil {
		if project && !narrowsMemory(*fs.MaxMemory, c.Sandbox.MaxMemory) {
			widen("max_memory")
		} else {
			set(c, &c.Sandbox.MaxMemory, fs.MaxMemory, "sandbox.max_memory", src)
		}
	}
}

// narrowsMemory reports whether a project's max_memory is a valid size no
// larger than the one in force (now; "" is the sandbox's default). An
// invalid one is taken, so that validation names it.
func narrowsMemory(project, now string) bool {
	p, err := sandbox.ParseSize(project)
	if err != nil {
		return true
	}
	limit := sandbox.DefaultMaxMemory()
	if n, err := sandbox.ParseSize(now); now != "" && err == nil && n > 0 {
		limit = n
	}
	return p > 0 && p <= limit
}

// ConfinesMCP reports whether the stdio MCP server s runs confined (when
// the sandbox is on).
func (c *Config) ConfinesMCP(s MCPServer) bool { return c.Sandbox.MCP || s.Sandbox }

// applySandboxOverrides merges what the launching program set (the
// Claude Agent SDK's sandbox option), at the flag layer.
func (c *Config) applySandboxOverrides(o *Sandbox) {
	if o == nil {
		return
	}
	if o.Mode != "" {
		c.Sandbox.Mode = o.Mode
		c.sources["sandbox.mode"] = "flag --settings"
	}
	c.Sandbox.Writable = append(c.Sandbox.Writable, c.absAll(o.Writable)...)
	c.Sandbox.DenyRead = append(c.Sandbox.DenyRead, c.absAll(o.DenyRead)...)
	c.Sandbox.Network.Allow = append(c.Sandbox.Network.Allow, o.Network.Allow...)
	if o.AutoAllow != nil {
		c.Sandbox.AutoAllow = o.AutoAllow
	}
	if o.AllowUnsandboxed != nil {
		c.Sandbox.AllowUnsandboxed = o.AllowUnsandboxed
	}
}

func (c *Config) absAll(ps []string) []string {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, c.absPath(p))
		}
	}
	return out
}

// SandboxDenyRead is every path confined commands may not read: keys and
// credentials under the home directory, arbor's config and state
// directories (API keys, transcripts), and the config's own entries.
func (c *Config) SandboxDenyRead() []string {
	home := homeDir(c.env)
	var out []string
	if home != "" {
		for _, p := range []string{".ssh", ".aws", ".gnupg", ".netrc", ".config/gcloud", ".azure", ".kube",
			".docker/config.json", ".git-credentials", ".npmrc", ".pypirc"} {
			out = append(out, filepath.Join(home, p))
		}
	}
	if d := c.inConfigHome(""); d != "" {
		out = append(out, filepath.Clean(d))
	}
	state := c.stateHome
	if state == "" {
		state = StateHome(c.env)
	}
	if state != "" {
		out = append(out, filepath.Join(state, "arbor"))
	}
	for _, p := range c.Sandbox.DenyRead {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}
