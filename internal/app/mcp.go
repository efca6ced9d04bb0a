package app

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arbor-run/arbor/internal/config"
	"github.com/arbor-run/arbor/internal/mcpclient"
)

// MCP returns the process's MCP client manager, starting the configured
// servers on first use and waiting (each within its start timeout) until
// every one has connected or failed. Servers start once per process: a
// view made by In shares its root's. Close stops them.
func (a *App) MCP(ctx context.Context) *mcpclient.Manager {
	if a.root != nil {
		return a.root.MCP(ctx)
	}
	cfg := a.Config()
	a.mu.Lock()
	m := a.mcp
	if m == nil {
		// Stdio servers start with the settings' env too, as Claude
		// Code's do; their ${VAR} are still expanded from arbor's own
		// environment (Claude Code leaves a variable only that env sets
		// unexpanded).
		var environ []string
		if env := a.project.k.EnvList(); len(env) > 0 {
			environ = append(os.Environ(), env...)
		}
		m = mcpclient.New(mcpclient.Options{
			Servers: cfg.MCPServers, Workspace: a.Workspace, Getenv: a.lookupEnv, Environ: environ,
			LogDir:   a.MCPLogDir(),
			OnChange: a.mcpChanged, Warn: a.warnOnce,
			SDK:     a.mcpSDK,
			Sandbox: a.Sandbox, Confined: func(s config.MCPServer) bool { return a.Config().ConfinesMCP(s) },
		})
		a.mcp = m
		a.closers = append(a.closers, m.Stop)
	}
	a.mu.Unlock()
	_ = m.Ready(ctx) // a cancelled ctx leaves servers pending; their tools come when they connect
	return m
}

// MCPStatus reports the MCP servers without starting or waiting for
// them: before the first session started them, each configured server is
// pending.
func (a *App) MCPStatus() []mcpclient.ServerStatus {
	if a.root != nil {
		return a.root.MCPStatus()
	}
	a.mu.Lock()
	m := a.mcp
	a.mu.Unlock()
	if m != nil {
		return m.Status()
	}
	servers := a.Config().MCPServers
	out := make([]mcpclient.ServerStatus, 0, len(servers))
	for _, name := range slices.Sorted(maps.Keys(servers)) {
		s := servers[name]
		state := mcpclient.StatePending
		if s.Disabled {
			state = mcpclient.StateDisabled
		}
		out = append(out, mcpclient.ServerStatus{Name: name, Transport: s.Transport(), State: state, Source: s.Source})
	}
	return out
}

// MCPLogDir is where stdio MCP servers' stderr goes (mcp-<name>.log),
// beside the database.
func (a *App) MCPLogDir() string {
	return filepath.Join(filepath.Dir(a.Config().DBPath()), "logs")
}

// OnMCPChange sets a function called (it must not block) whenever an MCP
// server's state or tools change; a front end refreshes its status there.
func (a *App) OnMCPChange(fn func()) {
	if a.root != nil {
		a.root.OnMCPChange(fn)
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.mcpObservers = append(a.mcpObservers, fn)
}

func (a *App) mcpChanged() {
	a.mu.Lock()
	obs := append([]func(){}, a.mcpObservers...)
	a.mu.Unlock()
	for _, fn := range obs {
		fn()
	}
}

// ErrMCPStarted: servers can no longer be added, as the first session
// started them.
var ErrMCPStarted = errors.New("the MCP servers have started already")

// SetMCPSDK sets how in-process servers (type sdk) are reached: over the
// channel of the client program that runs them (stream-json's
// mcp_message). It must be called before the first session.
func (a *App) SetMCPSDK(dial func(server string) mcp.Transport) {
	if a.root != nil {
		a.root.SetMCPSDK(dial)
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	a.mcpSDK = dial
}

// AddMCPServers adds servers over the configured ones, as --mcp-config
// does (a client's in-process servers, named in its initialize request);
// Reload keeps them. It fails with ErrMCPStarted once a session started
// the servers.
func (a *App) AddMCPServers(servers map[string]config.MCPServer) error {
	if a.root != nil {
		return a.root.AddMCPServers(servers)
	}
	a.mu.Lock()
	started := a.mcp != nil
	ov := a.overrides
	a.mu.Unlock()
	if started {
		return ErrMCPStarted
	}
	ov.MCPServers = maps.Clone(ov.MCPServers)
	if ov.MCPServers == nil {
		ov.MCPServers = map[string]config.MCPServer{}
	}
	maps.Copy(ov.MCPServers, servers)
	// Not under mu: loading reads the environment through lookupEnv.
	cfg, err := config.Load(config.LoadOptions{Workspace: a.Workspace, Overrides: ov, Getenv: a.lookupEnv, SandboxDefault: a.sandboxDefault})
	if err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.mcp != nil {
		return ErrMCPStarted
	}
	a.overrides = ov
	a.config.Store(cfg)
	return nil
}

// reloadMCP applies cfg's MCP servers once they run: removed and changed
// ones stop, changed and added ones start, and it waits (each within its
// start timeout) until the new ones have connected or failed; the others
// are not touched.
func (a *App) reloadMCP(cfg *config.Config) {
	root := a
	if a.root != nil {
		root = a.root
	}
	root.mu.Lock()
	m := root.mcp
	root.mu.Unlock()
	if m == nil {
		return // they start with the first session, as configured then
	}
	m.Update(cfg.MCPServers)
	_ = m.Ready(context.Background())
}
