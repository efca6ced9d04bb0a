package mcpclient

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arbor-run/arbor/internal/config"
	"github.com/arbor-run/arbor/internal/tool"
)

// ErrNotConnected: a call reached a server that is down (starting,
// restarting after a crash, or failed).
var ErrNotConnected = errors.New("MCP server not connected")

// ErrNoSDKClient: an in-process server (type sdk) was configured where no
// Claude Agent SDK program is connected to run it.
var ErrNoSDKClient = errors.New(`an in-process server (type "sdk") runs in the Claude Agent SDK program that declares it; only a stream-json client can provide it`)

// clientVersion is what arbor tells servers it is.
var clientInfo = &mcp.Implementation{Name: "arbor", Version: "1"}

// sdkProtocolVersion is the MCP version arbor asks an in-process server
// of a Claude Agent SDK client for, as Claude Code does.
const sdkProtocolVersion = "2025-11-25"

// stableAfter is how long a connection must last for the restart count to
// start over.
const stableAfter = time.Minute

// server is one configured MCP server. run owns its connection; the
// fields under mu are what calls and status readers see.
type server struct {
	m    *Manager
	name string
	spec config.MCPServer

	// cancel ends run (the manager's, guarded by its mu); done is closed
	// when run returned.
	cancel context.CancelFunc
	done   chan struct{}
	// settled is closed once the first start attempt ended.
	settled     chan struct{}
	settleOnce  sync.Once
	listChanged chan struct{} // buffered 1: a list_changed arrived
	// oversized counts the messages from the server that were larger
	// than maxMessage (each ended its connection): a call that fails
	// while it grows says why.
	oversized atomic.Uint64

	// secrets are what the server's configuration filled in from the
	// environment (tokens in its URL, headers, arguments or environment):
	// an error that quotes one (an HTTP client's quotes the URL) is kept
	// and shown without it. Set by run before it connects.
	secrets []string // guarded by mu

	mu       sync.Mutex // guards the fields below
	state    State
	err      string
	session  *mcp.ClientSession // nil unless connected
	tools    []tool.Tool
	infos    []ToolStatus
	info     *mcp.Implementation
	restarts int
	// unknown is the last warning of names its entry's tool lists gave
	// that it does not offer ("" = none).
	unknown string
}

func newServer(m *Manager, name string, spec config.MCPServer) *server {
	s := &server{m: m, name: name, spec: spec, settled: make(chan struct{}), done: make(chan struct{}),
		listChanged: make(chan struct{}, 1), state: StatePending}
	if spec.Disabled {
		s.state = StateDisabled
		s.settle()
	}
	return s
}

func (s *server) settle() { s.settleOnce.Do(func() { close(s.settled) }) }

// run connects and keeps the server connected until ctx ends.
func (s *server) run(ctx context.Context) {
	defer s.settle()
	if s.spec.Disabled {
		return
	}
	var filled []string
	spec, err := s.spec.Expand(func(name string) string {
		v := s.m.opts.Getenv(name)
		filled = append(filled, v)
		return v
	})
	if err != nil {
		s.fail(err)
		return
	}
	s.mu.Lock()
	for _, v := range filled {
		if len(v) >= 4 {
			s.secrets = append(s.secrets, v)
		}
	}
	s.mu.Unlock()
	for attempt := 0; ; {
		conn, err := s.connect(ctx, spec)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil && attempt == 0 && !s.everConnected():
			// A server that never started is not retried.
			s.fail(err)
			return
		case err == nil:
			s.settle()
			since := time.Now()
			down := s.serve(ctx, conn)
			if ctx.Err() != nil {
				return
			}
			if time.Since(since) >= stableAfter {
				attempt = 0
			}
			err = down
		}
		attempt++
		max := s.m.opts.MaxRestarts
		if max < 0 || attempt > max {
			s.fail(fmt.Errorf("gave up after %d restarts: %w", attempt-1, err))
			return
		}
		s.setDown(err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(s.m.opts.Backoff(attempt)):
		}
		s.mu.Lock()
		s.restarts++
		s.mu.Unlock()
	}
}

func (s *server) everConnected() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.info != nil
}

// conn is one live connection.
type conn struct {
	session *mcp.ClientSession
	// close ends the connection and whatever process it started.
	close func()
}

// connect starts the transport, initializes and lists the tools within
// the start timeout.
func (s *server) connect(ctx context.Context, spec config.MCPServer) (*conn, error) {
	timeout := s.m.opts.StartTimeout
	if spec.StartTimeout > 0 {
		timeout = spec.StartTimeout
	}
	sctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	var (
		transport mcp.Transport
		stop      = func() {}
		sopts     *mcp.ClientSessionOptions
		stderr    = func() string { return "" } // a stdio server's last line there
	)
	switch spec.Transport() {
	case config.MCPStdio:
		p, err := startProcess(s.name, spec, s.m.opts, s.scrub)
		if err != nil {
			return nil, err
		}
		transport, stop = p.transport(s.tooLarge), p.stop
		stderr = p.log.lastLine
	case config.MCPHTTP:
		transport = &mcp.StreamableClientTransport{Endpoint: spec.URL, HTTPClient: s.httpClient(spec.URL, spec.Headers)}
	case config.MCPSSE:
		transport = &mcp.SSEClientTransport{Endpoint: spec.URL, HTTPClient: s.httpClient(spec.URL, spec.Headers)}
	case config.MCPSDK:
		if s.m.opts.SDK == nil {
			return nil, ErrNoSDKClient
		}
		transport = s.m.opts.SDK(s.name)
		// The initialize handshake, as Claude Code starts it with these
		// servers (the SDK's servers know no server/discover).
		sopts = &mcp.ClientSessionOptions{ProtocolVersion: sdkProtocolVersion}
	default:
		return nil, fmt.Errorf("unknown transport %q", spec.Transport())
	}
	client := mcp.NewClient(clientInfo, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case s.listChanged <- struct{}{}:
			default: // a re-list is due already
			}
		},
	})
	cs, err := client.Connect(sctx, transport, sopts)
	if err == nil {
		var tools []*mcp.Tool
		if tools, err = listTools(sctx, cs); err == nil {
			s.connected(cs, tools)
			var once sync.Once
			return &conn{session: cs, close: func() { once.Do(func() { _ = cs.Close(); stop() }) }}, nil
		}
		_ = cs.Close()
	}
	stop() // its stderr has been read to the end
	if last := stderr(); last != "" {
		err = fmt.Errorf("%w (its stderr ended: %q)", err, last)
	}
	if errors.Is(sctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
		return nil, fmt.Errorf("did not start within %v (start_timeout): %w", timeout, err)
	}
	return nil, err
}

// serve owns a live connection: it re-lists the tools on list_changed and
// returns why the connection ended (or nil when ctx did).
func (s *server) serve(ctx context.Context, c *conn) error {
	defer c.close()
	done := make(chan error, 1)
	go func() { done <- c.session.Wait() }() // ends when c.close runs at the latest
	defer func() {
		s.mu.Lock()
		s.session = nil
		s.mu.Unlock()
	}()
	for {
		select {
		case <-ctx.Done():
			c.close()
			<-done
			return nil
		case err := <-done:
			if err == nil {
				err = errors.New("the connection closed")
			}
			return fmt.Errorf("disconnected: %w", err)
		case <-s.listChanged:
			lctx, cancel := context.WithTimeout(ctx, s.m.opts.StartTimeout)
			tools, err := listTools(lctx, c.session)
			cancel()
			if err == nil {
				s.setTools(c.session, tools)
			}
		}
	}
}

// maxTools is how many tools of one server arbor takes: more than any
// provider takes in a request. A server whose pages go on (a cursor that
// never ends) is not listed beyond it.
const maxTools = 1000

// listTools lists the pages of the server's tools, up to maxTools.
func listTools(ctx context.Context, cs *mcp.ClientSession) ([]*mcp.Tool, error) {
	var out []*mcp.Tool
	params := &mcp.ListToolsParams{}
	for {
		res, err := cs.ListTools(ctx, params)
		if err != nil {
			return nil, fmt.Errorf("listing tools: %w", err)
		}
		out = append(out, res.Tools...)
		if res.NextCursor == "" || len(out) >= maxTools {
			return out[:min(len(out), maxTools)], nil
		}
		params = &mcp.ListToolsParams{Cursor: res.NextCursor}
	}
}

// connected installs a new session and its tools.
func (s *server) connected(cs *mcp.ClientSession, tools []*mcp.Tool) {
	s.mu.Lock()
	s.session, s.state, s.err = cs, StateConnected, ""
	if r := cs.InitializeResult(); r != nil && r.ServerInfo != nil {
		s.info = r.ServerInfo
	} else {
		s.info = &mcp.Implementation{}
	}
	s.mu.Unlock()
	s.setTools(cs, tools)
	s.m.notify()
}

// setTools replaces the server's tools, those its entry's enabled_tools
// and disabled_tools let through; the manager's version changes only
// when the list the model sees does.
func (s *server) setTools(cs *mcp.ClientSession, remote []*mcp.Tool) {
	ts := make([]tool.Tool, 0, len(remote))
	infos := make([]ToolStatus, 0, len(remote))
	taken := map[string]bool{}
	names := make([][2]string, 0, len(remote))
	for _, r := range remote {
		t := newMCPTool(s, r)
		names = append(names, [2]string{r.Name, t.info.Name})
		if !s.spec.Offers(r.Name, t.info.Name) {
			continue // its entry's enabled_tools or disabled_tools
		}
		if key := nameKey(t.info.Name); taken[key] {
			// Two of its tools the model could not tell apart (get.file
			// and get_file): the later one's name ends with a hash.
			t.info.Name = hashed(t.info.Name, s.name+"\x00"+r.Name)
		}
		taken[nameKey(t.info.Name)] = true
		ts = append(ts, t)
		infos = append(infos, ToolStatus{Name: t.info.Name, Remote: r.Name, Description: t.info.Description})
	}
	unknown := s.spec.UnknownTools(names)
	s.mu.Lock()
	same := sameTools(s.tools, ts)
	if !same {
		s.tools, s.infos = ts, infos
	}
	warn := unknown != s.unknown && unknown != ""
	s.unknown = unknown
	s.mu.Unlock()
	if warn && s.m.opts.Warn != nil {
		s.m.opts.Warn(fmt.Sprintf("MCP server %s does not offer the tools its entry names in %s (its tools: %s)",
			s.name, unknown, remoteNames(remote)))
	}
	if !same {
		s.m.changed()
	}
}

// remoteNames lists tools by their servers' names, at most 20 of them.
func remoteNames(remote []*mcp.Tool) string {
	var b strings.Builder
	for i, r := range remote {
		if i == 20 {
			fmt.Fprintf(&b, " and %d more", len(remote)-i)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(r.Name)
	}
	if b.Len() == 0 {
		return "none"
	}
	return b.String()
}

func sameTools(a, b []tool.Tool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i].(*mcpTool).info, b[i].(*mcpTool).info
		if x.Name != y.Name || x.Description != y.Description || string(x.Schema) != string(y.Schema) {
			return false
		}
	}
	return true
}

// setDown marks the server as reconnecting; its tools stay offered and
// their calls fail until it is back.
func (s *server) setDown(err error) {
	s.mu.Lock()
	s.session, s.state, s.err = nil, StatePending, s.scrubLocked(err.Error())
	s.mu.Unlock()
	s.m.notify()
}

// fail gives the server up: its tools are withdrawn.
func (s *server) fail(err error) {
	s.mu.Lock()
	hadTools := len(s.tools) > 0
	s.session, s.state, s.err, s.tools, s.infos = nil, StateFailed, s.scrubLocked(err.Error()), nil, nil
	s.mu.Unlock()
	if hadTools {
		s.m.changed()
	} else {
		s.m.notify()
	}
	s.settle()
}

// scrub is msg with the server's secrets replaced by [REDACTED].
func (s *server) scrub(msg string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.scrubLocked(msg)
}

// scrubLocked is scrub with s.mu held.
func (s *server) scrubLocked(msg string) string {
	for _, v := range s.secrets {
		msg = strings.ReplaceAll(msg, v, "[REDACTED]")
		if q := url.QueryEscape(v); q != v {
			msg = strings.ReplaceAll(msg, q, "[REDACTED]")
		}
	}
	return msg
}

func (s *server) currentTools() []tool.Tool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tools
}

// current returns the live session, or why there is none.
func (s *server) current() (*mcp.ClientSession, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.session != nil {
		return s.session, nil
	}
	why := string(s.state)
	if s.err != "" {
		why += ": " + s.err
	}
	return nil, fmt.Errorf("%w: %s is %s", ErrNotConnected, s.name, why)
}

func (s *server) status() ServerStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := ServerStatus{Name: s.name, Transport: s.spec.Transport(), State: s.state, Error: s.err,
		Restarts: s.restarts, Tools: append([]ToolStatus(nil), s.infos...), Source: s.spec.Source}
	if s.info != nil {
		st.ServerName, st.ServerVersion = s.info.Name, s.info.Version
	}
	return st
}
