package app

import (
	"context"
	"maps"
	"path/filepath"
	"slices"

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
	a.mu.Lock()
	m := a.mcp
	if m == nil {
		cfg := a.Config()
		m = mcpclient.New(mcpclient.Options{
			Servers: cfg.MCPServers, Workspace: a.Workspace, Getenv: a.lookupEnv,
			LogDir:   a.MCPLogDir(),
			OnChange: a.mcpChanged,
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
