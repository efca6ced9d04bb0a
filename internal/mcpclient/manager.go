package mcpclient

import (
	"context"
	"os"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/arbor-run/arbor/internal/config"
	"github.com/arbor-run/arbor/internal/tool"
)

// Defaults of Options.
const (
	DefaultStartTimeout = 30 * time.Second
	DefaultMaxRestarts  = 5
)

// Options configure a Manager.
type Options struct {
	// Servers by name (config.Config.MCPServers).
	Servers map[string]config.MCPServer
	// Workspace is where stdio servers run unless their cwd says otherwise.
	Workspace string
	// Getenv expands ${VAR} in the servers' values; nil = os.Getenv.
	Getenv func(string) string
	// Environ is the environment stdio servers start with, before their
	// env; nil = os.Environ().
	Environ []string
	// LogDir receives each stdio server's stderr as mcp-<name>.log; "" =
	// discarded.
	LogDir string
	// StartTimeout bounds connecting and listing the tools of a server
	// whose entry sets none; 0 = DefaultStartTimeout.
	StartTimeout time.Duration
	// MaxRestarts is how many reconnections in a row a server gets after
	// it went down before it is given up as failed; 0 =
	// DefaultMaxRestarts, negative = none.
	MaxRestarts int
	// Backoff is the wait before reconnection attempt n (1-based); nil =
	// 500ms doubling up to 30s.
	Backoff func(n int) time.Duration
	// OnChange, when set, is called after a server's state or tools
	// changed (a status view refreshes). It must not block.
	OnChange func()
}

// Manager runs the configured MCP servers and offers their tools. It is a
// tool.Source; its methods are safe for concurrent use.
type Manager struct {
	opts    Options
	servers []*server // sorted by name
	version atomic.Uint64

	startOnce sync.Once
	stopOnce  sync.Once
	cancel    context.CancelFunc
	wg        sync.WaitGroup // the servers' run goroutines
}

// New returns a Manager for o.Servers; Start starts them.
func New(o Options) *Manager {
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Environ == nil {
		o.Environ = os.Environ()
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = DefaultStartTimeout
	}
	if o.MaxRestarts == 0 {
		o.MaxRestarts = DefaultMaxRestarts
	}
	if o.Backoff == nil {
		o.Backoff = defaultBackoff
	}
	m := &Manager{opts: o}
	names := make([]string, 0, len(o.Servers))
	for name := range o.Servers {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		m.servers = append(m.servers, newServer(m, name, o.Servers[name]))
	}
	return m
}

func defaultBackoff(n int) time.Duration {
	d := 500 * time.Millisecond
	for i := 1; i < n && d < 30*time.Second; i++ {
		d *= 2
	}
	return min(d, 30*time.Second)
}

// Start starts every server, concurrently, and returns at once; Ready
// waits for them. Later calls do nothing. ctx bounds the servers' lives
// as Stop does.
func (m *Manager) Start(ctx context.Context) {
	m.startOnce.Do(func() {
		ctx, m.cancel = context.WithCancel(context.WithoutCancel(ctx))
		for _, s := range m.servers {
			m.wg.Add(1)
			go func() {
				defer m.wg.Done()
				s.run(ctx)
			}()
		}
	})
}

// Ready waits until every server has connected or failed (each within its
// start timeout), or ctx ends. It starts the servers if Start was not
// called.
func (m *Manager) Ready(ctx context.Context) error {
	m.Start(ctx)
	for _, s := range m.servers {
		select {
		case <-s.settled:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Stop disconnects every server and kills what the stdio servers left
// running, then waits for the servers' goroutines. It is safe to call
// twice, and before Start.
func (m *Manager) Stop() {
	m.startOnce.Do(func() {}) // a later Start starts nothing
	m.stopOnce.Do(func() {
		if m.cancel != nil {
			m.cancel()
		}
		m.wg.Wait()
	})
}

// Tools returns the tools of every connected server (and of a server
// restarting after a crash, whose calls fail meanwhile), in server order.
func (m *Manager) Tools() (uint64, []tool.Tool) {
	v := m.version.Load()
	var out []tool.Tool
	for _, s := range m.servers {
		out = append(out, s.currentTools()...)
	}
	return v, out
}

// changed notes that some server's tools changed.
func (m *Manager) changed() {
	m.version.Add(1)
	m.notify()
}

// notify tells the OnChange observer.
func (m *Manager) notify() {
	if m.opts.OnChange != nil {
		m.opts.OnChange()
	}
}

// Status reports every server, sorted by name.
func (m *Manager) Status() []ServerStatus {
	out := make([]ServerStatus, len(m.servers))
	for i, s := range m.servers {
		out[i] = s.status()
	}
	return out
}

// Names returns the configured servers' names, sorted.
func (m *Manager) Names() []string {
	out := make([]string, len(m.servers))
	for i, s := range m.servers {
		out[i] = s.name
	}
	return slices.Clip(out)
}

// State is a server's connection state, as Claude Code reports it.
type State string

const (
	// StatePending: starting, or reconnecting after it went down.
	StatePending State = "pending"
	// StateConnected: its tools are offered and calls reach it.
	StateConnected State = "connected"
	// StateFailed: it did not start in time, or went down for good.
	StateFailed State = "failed"
	// StateDisabled: its entry says disabled: true.
	StateDisabled State = "disabled"
)

// ServerStatus describes one server.
type ServerStatus struct {
	Name      string
	Transport string // stdio, http, sse
	State     State
	// Error says why it failed or is reconnecting.
	Error string
	// ServerName and ServerVersion are what the server said it is.
	ServerName, ServerVersion string
	// Restarts counts reconnections after it went down.
	Restarts int
	Tools    []ToolStatus
	// Source names the config file of its entry.
	Source string
}

// ToolStatus is one tool of a server.
type ToolStatus struct {
	// Name is the name the model sees (mcp__server__tool); Remote the
	// server's own.
	Name, Remote, Description string
}
