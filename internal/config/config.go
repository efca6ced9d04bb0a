// Package config turns built-in defaults, the user's and the project's
// config.yaml, a few environment variables and command-line flags into one
// validated Config, and resolves model references ("anthropic/claude-sonnet-4-5",
// "gpt-5", "script:demo.yaml") against it.
//
// Only the composition root (internal/app) calls Load; every other package
// receives the values it needs as options, never the Config itself.
//
// Layers, lowest to highest precedence:
//
//  1. built-ins (providers anthropic, openai, ollama; a price and context
//     window table for well-known models; ANTHROPIC_BASE_URL and
//     OPENAI_BASE_URL fill the vendors' base_url);
//  2. the user file $XDG_CONFIG_HOME/arbor/config.yaml (~/.config/…);
//  3. the project's <workspace>/.mcp.json (MCP servers only, Claude Code's
//     format), then the project file <workspace>/.arbor/config.yaml;
//  4. the environment: ARBOR_MODEL, ARBOR_STORE, ARBOR_MODE, ARBOR_SANDBOX;
//  5. flags (Overrides).
//
// Invariants: a key a layer does not mention keeps the value of the layer
// below; maps (providers, a provider's models, pools) merge per key, so a
// project file can add one model's price without repeating its provider; a
// key no layer knows is an error naming the file and the key; every
// environment lookup goes through LoadOptions.Getenv; a Config returned by
// Load is valid and is not modified afterwards, so it is safe for
// concurrent use.
package config

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/arbor-run/arbor/internal/llm"
)

// Config is the merged, validated configuration.
type Config struct {
	// Model is the default model reference, "provider/name"; "" lets
	// DefaultModelRef infer one from the API keys present.
	Model string `yaml:"model"`
	// Mode is the permission mode name (see internal/permission).
	Mode string `yaml:"mode"`
	// AddDirs are Overrides.AddDirs, absolute: roots the tools may read
	// and write as they do the workspace (not a setting of the files).
	AddDirs []string `yaml:"-"`
	// Store is "" for SQLite at the default path, a postgres:// URL, or a
	// SQLite file path (made absolute by Load; see DBPath).
	Store string `yaml:"store"`
	// MaxTurns caps the steps of one agent loop.
	MaxTurns int `yaml:"max_turns"`
	// QuestionTimeout and ApprovalTimeout, when positive, close a question
	// (declined) or an approval (denied) nobody answered in time; 0 waits
	// until answered.
	QuestionTimeout time.Duration       `yaml:"question_timeout"`
	ApprovalTimeout time.Duration       `yaml:"approval_timeout"`
	Providers       map[string]Provider `yaml:"providers"`
	Pools           map[string][]string `yaml:"pools"` // named model pools, refs in fallback order
	// NodeModels are the models a tree's nodes may choose for their
	// children (spawn and fork take one of these names): name → ref.
	NodeModels map[string]string `yaml:"node_models"`
	// NodeRunner runs the tree nodes whose spawn or fork names no runner:
	// "arbor" (arbor's own agent loop, also for "") or "claude-code".
	NodeRunner string `yaml:"node_runner"`
	// ClaudePath is the Claude Code executable of the claude-code runner
	// (env ARBOR_CLAUDE wins; "" = claude on PATH).
	ClaudePath string     `yaml:"claude_path"`
	Compaction Compaction `yaml:"compaction"`
	Retry      Retry      `yaml:"retry"`
	Headless   Headless   `yaml:"headless"`
	// MCPServers are the external MCP servers whose tools every agent
	// gets, by name: from the user file, the project's .mcp.json (Claude
	// Code's format) and the project file, later ones replacing an entry
	// of the same name whole.
	MCPServers map[string]MCPServer `yaml:"mcp_servers"`
	// Sandbox confines the commands agents run.
	Sandbox Sandbox `yaml:"sandbox"`
	// Cluster is the timing of run and node leases (every engine that
	// drives a run, and arbor worker).
	Cluster Cluster `yaml:"cluster"`
	// Telemetry says where OpenTelemetry traces and metrics go.
	Telemetry Telemetry `yaml:"telemetry"`

	getenv     func(string) string
	workspace  string
	configHome string
	stateHome  string
	sources    map[string]string // dotted field path → layer that set it
	warnings   []string
}

// Provider is one model backend.
type Provider struct {
	// Type is the wire protocol: "anthropic" or "openai" (any Chat
	// Completions compatible server).
	Type    string `yaml:"type"`
	BaseURL string `yaml:"base_url"`
	// APIKeyEnv names the environment variable holding the key.
	APIKeyEnv string `yaml:"api_key_env"`
	// APIKey is a literal key; discouraged, APIKeyEnv is preferred.
	APIKey string           `yaml:"api_key"`
	Models map[string]Model `yaml:"models"`
}

// Model is what arbor knows about one model of a provider.
type Model struct {
	// Price is nil when the cost is unknown.
	Price         *llm.Price `yaml:"price"`
	ContextWindow int64      `yaml:"context_window"`
	// MaxOutput is the most output tokens per call; 0 = provider default.
	MaxOutput int64 `yaml:"max_output"`
	// Images false says the model takes no image input: view_image is
	// not offered to it and an image sent to it is refused. Unset: it
	// takes images.
	Images *bool `yaml:"images"`
}

// Compaction says when and how an agent's transcript is compacted.
type Compaction struct {
	// Threshold is the fraction of the context window at which a
	// transcript is compacted, in (0, 1].
	Threshold float64 `yaml:"threshold"`
	// KeepRecent is how many recent messages are kept verbatim.
	KeepRecent int `yaml:"keep_recent"`
}

// Retry bounds retries of failed model calls.
type Retry struct {
	// MaxAttempts counts the first call too; at least 1.
	MaxAttempts int `yaml:"max_attempts"`
	// StallTimeout is how long a stream may stay silent; written as a Go
	// duration ("60s", "2m").
	StallTimeout time.Duration `yaml:"stall_timeout"`
}

// Headless configures the headless protocols (arbor headless).
type Headless struct {
	// QueueLimit bounds the work a session queues behind its running turn
	// (sends, deliveries, model and session switches); past it a command
	// is refused with a queue_full error. 0 = no limit.
	QueueLimit int `yaml:"queue_limit"`
}

// Cluster is the timing of leases: how long a run's or a node's lease
// outlives its holder's last renewal, how often a holder renews it, and
// how often an idle arbor worker looks for jobs that no notification
// announced. A worker on another machine takes a dead holder's work over
// about LeaseTTL after its last renewal. Bounds (validate): Heartbeat
// at least MinHeartbeat, LeaseTTL at least three heartbeats (two may be
// missed), Poll between MinPoll and MaxPoll.
type Cluster struct {
	LeaseTTL  time.Duration `yaml:"lease_ttl"`
	Heartbeat time.Duration `yaml:"heartbeat"`
	Poll      time.Duration `yaml:"poll"`
}

// Bounds and defaults of Cluster.
const (
	DefaultLeaseTTL  = 6 * time.Second
	DefaultHeartbeat = 2 * time.Second
	DefaultPoll      = 250 * time.Millisecond
	MinHeartbeat     = 100 * time.Millisecond
	MinLeaseBeats    = 3
	MinPoll          = 10 * time.Millisecond
	MaxPoll          = time.Minute
)

// Overrides are the values given as flags; a zero field is unset.
type Overrides struct {
	Model, Store, Mode string
	// Sandbox is --sandbox: off, auto or required.
	Sandbox string
	// SandboxSettings are a launching program's sandbox settings (the
	// Claude Agent SDK's sandbox option), merged at this layer.
	SandboxSettings *Sandbox
	MaxTurns        int
	// MCPServers are added over the files' (stream-json --mcp-config);
	// StrictMCP keeps only them (--strict-mcp-config).
	MCPServers map[string]MCPServer
	StrictMCP  bool
	// AddDirs are directories the launching program lets the tools read
	// and write besides the workspace (Claude Code's --add-dir, qwen's
	// --include-directories).
	AddDirs []string
	// Cluster's non-zero fields are arbor worker's --lease-ttl,
	// --heartbeat and --poll.
	Cluster Cluster
}

// LoadOptions say where Load looks.
type LoadOptions struct {
	// Workspace is the project directory; "" = no project file.
	Workspace string
	Overrides Overrides
	// Getenv reads the environment; nil = os.Getenv.
	Getenv func(string) string
	// SandboxDefault is sandbox.mode where no layer sets it: the command's
	// own default ("" is off: a program embedding arbor opts in).
	SandboxDefault string
	// ConfigHome and StateHome replace the XDG directories; "" = derived
	// from XDG_CONFIG_HOME / XDG_STATE_HOME / HOME through Getenv.
	ConfigHome, StateHome string
}

// Load builds the Config from every layer and validates it.
func Load(o LoadOptions) (*Config, error) {
	getenv := o.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	c := builtin(getenv)
	c.getenv = getenv
	c.Sandbox.Mode = o.SandboxDefault
	if c.Sandbox.Mode == "" {
		c.Sandbox.Mode = "off"
	}
	c.configHome = o.ConfigHome
	if c.configHome == "" {
		c.configHome = ConfigHome(getenv)
	}
	c.stateHome = o.StateHome
	if c.stateHome == "" {
		c.stateHome = StateHome(getenv)
	}
	if o.Workspace != "" {
		ws, err := filepath.Abs(o.Workspace)
		if err != nil {
			return nil, &ValidationError{Field: "workspace", Reason: err.Error(), Err: err}
		}
		c.workspace = ws
	}
	c.sources = map[string]string{}

	var files []string
	if c.configHome != "" {
		files = append(files, c.UserConfigFile())
	}
	if c.workspace != "" {
		files = append(files, c.ProjectConfigFile())
	}
	for _, path := range files {
		if path == c.ProjectConfigFile() {
			servers, err := readMCPJSON(c.MCPJSONFile())
			if err != nil {
				return nil, err
			}
			c.addMCPServers(servers, c.MCPJSONFile())
		}
		fc, info, err := readFile(path)
		if err != nil {
			return nil, err
		}
		if fc == nil {
			continue
		}
		c.apply(fc, path)
		c.warnLiteralKeys(fc, path, info)
	}

	for _, e := range []struct {
		name string
		dst  *string
		key  string
	}{
		{"ARBOR_MODEL", &c.Model, "model"},
		{"ARBOR_STORE", &c.Store, "store"},
		{"ARBOR_MODE", &c.Mode, "mode"},
		{"ARBOR_SANDBOX", &c.Sandbox.Mode, "sandbox.mode"},
	} {
		if v := getenv(e.name); v != "" {
			*e.dst = v
			c.sources[e.key] = "environment (" + e.name + ")"
		}
	}

	ov := o.Overrides
	for _, f := range []struct {
		v, flag, key string
		dst          *string
	}{
		{ov.Model, "--model", "model", &c.Model},
		{ov.Store, "--store", "store", &c.Store},
		{ov.Mode, "--mode", "mode", &c.Mode},
		{ov.Sandbox, "--sandbox", "sandbox.mode", &c.Sandbox.Mode},
	} {
		if f.v != "" {
			*f.dst = f.v
			c.sources[f.key] = "flag " + f.flag
		}
	}
	if ov.MaxTurns != 0 {
		c.MaxTurns = ov.MaxTurns
		c.sources["max_turns"] = "flag --max-turns"
	}
	for _, f := range []struct {
		v    time.Duration
		flag string
		dst  *time.Duration
		key  string
	}{
		{ov.Cluster.LeaseTTL, "--lease-ttl", &c.Cluster.LeaseTTL, "cluster.lease_ttl"},
		{ov.Cluster.Heartbeat, "--heartbeat", &c.Cluster.Heartbeat, "cluster.heartbeat"},
		{ov.Cluster.Poll, "--poll", &c.Cluster.Poll, "cluster.poll"},
	} {
		if f.v != 0 {
			*f.dst = f.v
			c.sources[f.key] = "flag " + f.flag
		}
	}
	if ov.StrictMCP {
		c.MCPServers = nil
	}
	c.addMCPServers(ov.MCPServers, "flag --mcp-config")
	c.applySandboxOverrides(ov.SandboxSettings)
	// Directories added at launch are roots like the workspace: the
	// permission engine's and the sandbox's writable ones.
	c.AddDirs = c.absAll(ov.AddDirs)
	c.Sandbox.Writable = append(c.Sandbox.Writable, c.AddDirs...)

	c.Model = strings.TrimSpace(c.Model)
	c.Mode = strings.TrimSpace(c.Mode)
	c.Store = strings.TrimSpace(c.Store)
	if c.Store != "" && !isURL(c.Store) {
		c.Store = c.absPath(c.Store)
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// Warnings are problems that do not stop arbor but that the user should
// hear about, such as a literal api_key in a file others can read.
func (c *Config) Warnings() []string { return c.warnings }

func (c *Config) env(name string) string {
	if c.getenv == nil {
		return os.Getenv(name)
	}
	return c.getenv(name)
}

// sourceOf names the layer that set field, or the nearest enclosing field
// that a layer mentioned; values no layer mentioned are built-in.
func (c *Config) sourceOf(field string) string {
	for f := field; f != ""; {
		if s, ok := c.sources[f]; ok {
			return s
		}
		i := strings.LastIndexAny(f, ".[")
		if i < 0 {
			break
		}
		f = f[:i]
	}
	return "built-in"
}

// warnLiteralKeys notes api_key values in a file that is readable by
// anyone but its owner.
func (c *Config) warnLiteralKeys(fc *fileConfig, path string, info fs.FileInfo) {
	if info == nil || info.Mode().Perm()&0o077 == 0 {
		return
	}
	for _, name := range sortedKeys(fc.Providers) {
		if p := fc.Providers[name]; p.APIKey != nil && *p.APIKey != "" {
			c.warnings = append(c.warnings,
				path+" holds a literal api_key for provider "+name+" and is readable by others (mode "+
					info.Mode().Perm().String()+"): use api_key_env, or chmod 600 the file")
		}
	}
}
