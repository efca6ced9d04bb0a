package mcpclient

import (
	"context"
	"maps"
	"os"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arbor-run/arbor/internal/config"
	"github.com/arbor-run/arbor/internal/tool"
	"github.com/arbor-run/arbor/internal/tool/sandbox"
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
	// Warn, when set, is told of what a server's entry says that only the
	// server's tools can show wrong: names in enabled_tools or
	// disabled_tools it does not offer (a typo would otherwise leave a
	// server with no tools, or one the user meant to hide offered). Once
	// per server and list of tools; called with no lock held.
	Warn func(msg string)
	// Sandbox gives the sandbox that confines the stdio servers Confined
	// says so of (see config.Config.ConfinesMCP); asked only for those, so
	// an App makes its sandbox only when a server needs it. nil, or nil
	// from it: none is confined.
	Sandbox  func() *sandbox.Sandbox
	Confined func(config.MCPServer) bool
	// SDK connects to an in-process server (type sdk) of the client
	// program that declared it, over that client's channel (stream-json's
	// mcp_message); nil = such servers fail with ErrNoSDKClient.
	SDK func(server string) mcp.Transport
}

// Manager runs the configured MCP servers and offers their tools. It is a
// tool.Source; its methods are safe for concurrent use.
type Manager struct {
	opts    Options
	version atomic.Uint64

	startOnce sync.Once
	stopOnce  sync.Once
	wg        sync.WaitGroup // the servers' run goroutines

	mu      sync.Mutex // guards the fields below
	servers []*server  // sorted by name
	ctx     context.Context
	cancel  context.CancelFunc
	stopped bool
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
	for _, name := range slices.Sorted(maps.Keys(o.Servers)) {
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
		m.mu.Lock()
		defer m.mu.Unlock()
		m.ctx, m.cancel = context.WithCancel(context.WithoutCancel(ctx))
		for _, s := range m.servers {
			m.launch(s)
		}
	})
}

// launch starts s's goroutine; m.mu is held.
func (m *Manager) launch(s *server) {
	ctx, cancel := context.WithCancel(m.ctx)
	s.cancel = cancel
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		defer close(s.done)
		s.run(ctx)
	}()
}

// Update applies a new configuration of the servers (a config reload): a
// server whose entry was removed or changed is stopped, a changed or
// added one starts, and the others go on untouched (their connections,
// processes and tools stay). It returns once the stopped servers are
// down; Ready waits for the new ones. After Stop it does nothing.
func (m *Manager) Update(servers map[string]config.MCPServer) {
	m.mu.Lock()
	if m.stopped {
		m.mu.Unlock()
		return
	}
	old := map[string]*server{}
	for _, s := range m.servers {
		old[s.name] = s
	}
	var next, added []*server
	for _, name := range slices.Sorted(maps.Keys(servers)) {
		if s, ok := old[name]; ok && sameEntry(s.spec, servers[name]) {
			next = append(next, s)
			delete(old, name)
			continue
		}
		s := newServer(m, name, servers[name])
		next, added = append(next, s), append(added, s)
	}
	m.servers = next
	if m.ctx != nil {
		for _, s := range added {
			m.launch(s)
		}
	}
	m.mu.Unlock()
	for _, s := range old {
		if s.cancel != nil {
			s.cancel()
			<-s.done
		}
	}
	if len(old) > 0 || len(added) > 0 {
		m.changed()
	}
}

// sameEntry reports whether two entries start the same server (the file
// that declares it does not matter).
func sameEntry(a, b config.MCPServer) bool {
	a.Source, b.Source = "", ""
	return reflect.DeepEqual(a, b)
}

// list is the servers now configured.
func (m *Manager) list() []*server {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.servers
}

// Ready waits until every server has connected or failed (each within its
// start timeout), or ctx ends. It starts the servers if Start was not
// called.
func (m *Manager) Ready(ctx context.Context) error {
	m.Start(ctx)
	for _, s := range m.list() {
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
		m.mu.Lock()
		m.stopped = true
		cancel := m.cancel
		m.mu.Unlock()
		if cancel != nil {
			cancel()
		}
		m.wg.Wait()
	})
}

// Tools returns the tools of every connected server (and of a server
// restarting after a crash, whose calls fail meanwhile), in server order.
func (m *Manager) Tools() (uint64, []tool.Tool) {
	v := m.version.Load()
	var out []tool.Tool
	for _, ts := range offered(m.list()) {
		out = append(out, ts...)
	}
	return v, out
}

// offered is each server's tools as the model gets them: a tool whose
// name the model could not tell from an earlier server's (my.server and
// my_server both give mcp__my_server__…) gets a name ending with a hash,
// so that both servers' tools are offered. The names depend only on the
// servers' order and lists, so they stay the same from call to call.
func offered(servers []*server) [][]tool.Tool {
	out := make([][]tool.Tool, len(servers))
	taken := map[string]bool{}
	for i, s := range servers {
		ts := s.currentTools()
		for j, t := range ts {
			mt := t.(*mcpTool)
			if taken[nameKey(mt.info.Name)] {
				c := *mt
				c.info.Name = hashed(mt.info.Name, s.name+"\x00"+mt.remote)
				if out[i] == nil { // the server's own slice is shared
					out[i] = append([]tool.Tool(nil), ts...)
				}
				out[i][j] = &c
				mt = &c
			}
			taken[nameKey(mt.info.Name)] = true
		}
		if out[i] == nil {
			out[i] = ts
		}
	}
	return out
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
	servers := m.list()
	tools := offered(servers)
	out := make([]ServerStatus, len(servers))
	for i, s := range servers {
		out[i] = s.status()
		for j, t := range tools[i] {
			if j < len(out[i].Tools) {
				out[i].Tools[j].Name = t.Info().Name
			}
		}
	}
	return out
}

// Names returns the configured servers' names, sorted.
func (m *Manager) Names() []string {
	servers := m.list()
	out := make([]string, len(servers))
	for i, s := range servers {
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
