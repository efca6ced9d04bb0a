package streamjson

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arbor-run/arbor/internal/config"
	"github.com/arbor-run/arbor/internal/mcpclient"
)

// mcpServerInfo is what an MCP server said it is.
type mcpServerInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// mcpToolInfo is one tool of a server in mcp_status, by its own name.
type mcpToolInfo struct {
	Name string `json:"name"`
}

// mcpStatusResponse answers the mcp_status control request (the Claude
// Agent SDK's mcpServerStatus()).
type mcpStatusResponse struct {
	MCPServers []mcpServer `json:"mcpServers"`
}

// mcpServers reports the app's MCP servers as Claude Code does: status
// connected, pending, failed (or disabled), transport, source, tools.
func (s *Server) mcpServers() []mcpServer {
	out := []mcpServer{}
	userFile := s.app.Config().UserConfigFile()
	for _, st := range s.app.MCPStatus() {
		m := mcpServer{Name: st.Name, Status: string(st.State), Error: st.Error, Transport: st.Transport,
			Source: mcpSource(st, userFile)}
		if st.State == mcpclient.StateConnected {
			m.ServerInfo = &mcpServerInfo{Name: st.ServerName, Version: st.ServerVersion}
		}
		for _, t := range st.Tools {
			m.Tools = append(m.Tools, mcpToolInfo{Name: t.Remote})
		}
		out = append(out, m)
	}
	return out
}

// mcpSource names where a server was declared as Claude Code does: sdk
// (the client runs it), dynamic (--mcp-config), user or project.
func mcpSource(st mcpclient.ServerStatus, userFile string) string {
	switch {
	case st.Transport == config.MCPSDK:
		return "sdk"
	case strings.HasPrefix(st.Source, "flag "):
		return "dynamic"
	case st.Source == userFile:
		return "user"
	}
	return "project"
}

// initMCPServers is system/init's mcp_servers: name, status and source,
// as Claude Code writes them.
func (s *Server) initMCPServers() []mcpServer {
	out := s.mcpServers()
	for i := range out {
		out[i] = mcpServer{Name: out[i].Name, Status: out[i].Status, Source: out[i].Source}
	}
	return out
}

// In-process MCP servers of a Claude Agent SDK client (createSdkMcpServer)
// run in the client. Their JSON-RPC travels over the control channel, as
// Claude Code carries it: each message arbor's MCP client sends is a
// control_request {subtype: mcp_message, server_name, message}, and the
// answer to a call comes back in the control_response as mcp_response;
// what the server sends on its own (list_changed) arrives as the client's
// mcp_message request, which arbor acknowledges. When the client's
// initialize carries a server's manifest (its answers to initialize and
// tools/list, which the SDK asked for itself), arbor answers those two
// from it and only the calls go over the channel, as Claude Code does.

// sdkManifest is what an in-process server answered the SDK.
type sdkManifest struct {
	InitializeResult json.RawMessage `json:"initializeResult"`
	ToolsListResult  json.RawMessage `json:"toolsListResult,omitempty"`
}

// mcpMessageOut is arbor's mcp_message control request.
type mcpMessageOut struct {
	Type      string        `json:"type"` // "control_request"
	RequestID string        `json:"request_id"`
	Request   mcpMessageReq `json:"request"`
}

type mcpMessageReq struct {
	Subtype    string          `json:"subtype"` // "mcp_message"
	ServerName string          `json:"server_name"`
	Message    json.RawMessage `json:"message"`
}

// mcpReply is the body of a control_response to an mcp_message.
type mcpReply struct {
	MCPResponse json.RawMessage `json:"mcp_response"`
}

// mcpAck is how an mcp_message that needs no answer is acknowledged,
// the same both ways.
var mcpAck = mcpReply{MCPResponse: json.RawMessage(`{"jsonrpc":"2.0","result":{},"id":0}`)}

// errInputEnded: the client's input ended, so its servers can no longer
// be reached.
var errInputEnded = errors.New("the client's input ended")

// sdkServers routes the in-process servers' messages. Its lock is held
// only to read and change its maps, never across a write.
type sdkServers struct {
	mu        sync.Mutex
	next      int
	calls     map[string]sdkCall     // arbor's request id → who waits for the answer
	conns     map[string]*sdkConn    // the live connection of each server
	manifests map[string]sdkManifest // by server, until its first connection
	ended     bool
}

// sdkCall is an mcp_message arbor sent: conn gets the answer to a call
// (id valid); an acknowledged notification or response has none.
type sdkCall struct {
	conn *sdkConn
	id   jsonrpc.ID
}

// declareSDKServers takes initialize's sdkMcpServers: each becomes an MCP
// server of type sdk, reached through this client.
func (s *Server) declareSDKServers(names []string, manifests map[string]sdkManifest) error {
	if len(names) == 0 {
		return nil
	}
	servers := map[string]config.MCPServer{}
	for _, n := range names {
		servers[n] = config.MCPServer{Type: config.MCPSDK, Source: "initialize (sdkMcpServers)"}
	}
	if err := s.app.AddMCPServers(servers); err != nil {
		return fmt.Errorf("initialize: in-process MCP servers %s: %w", strings.Join(names, ", "), err)
	}
	r := &s.sdk
	r.mu.Lock()
	defer r.mu.Unlock()
	for n, m := range manifests {
		if r.manifests == nil {
			r.manifests = map[string]sdkManifest{}
		}
		r.manifests[n] = m
	}
	return nil
}

// sdkTransport is the app's way to an in-process server of this client.
func (s *Server) sdkTransport(server string) mcp.Transport {
	return sdkTransport{s: s, server: server}
}

type sdkTransport struct {
	s      *Server
	server string
}

func (t sdkTransport) Connect(context.Context) (mcp.Connection, error) {
	r := &t.s.sdk
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ended {
		return nil, errInputEnded
	}
	c := &sdkConn{s: t.s, server: t.server, wake: make(chan struct{}, 1)}
	if m, ok := r.manifests[t.server]; ok {
		c.manifest = &m
		delete(r.manifests, t.server) // a later connection handshakes over the channel
	}
	if old := r.conns[t.server]; old != nil {
		old.end()
	}
	if r.conns == nil {
		r.conns = map[string]*sdkConn{}
	}
	r.conns[t.server] = c
	return c, nil
}

// sdkConn is one connection to an in-process server: what arrives for it
// is queued (unbounded, so the reader never waits) until the MCP client
// reads it.
type sdkConn struct {
	s      *Server
	server string
	wake   chan struct{} // room for one signal: the queue or closed changed

	mu       sync.Mutex // guards the fields below
	queue    []jsonrpc.Message
	closed   bool
	manifest *sdkManifest // answers initialize and the first tools/list
}

func (c *sdkConn) SessionID() string { return "" }

func (c *sdkConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		c.mu.Lock()
		if len(c.queue) > 0 {
			m := c.queue[0]
			c.queue = c.queue[1:]
			c.mu.Unlock()
			return m, nil
		}
		closed := c.closed
		c.mu.Unlock()
		if closed {
			return nil, io.EOF
		}
		select {
		case <-c.wake:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// put queues a message for Read; after Close it is dropped.
func (c *sdkConn) put(m jsonrpc.Message) {
	c.mu.Lock()
	if !c.closed {
		c.queue = append(c.queue, m)
	}
	c.mu.Unlock()
	c.signal()
}

func (c *sdkConn) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// end closes the connection: Read returns EOF once the queue is empty.
func (c *sdkConn) end() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.signal()
}

func (c *sdkConn) Close() error {
	c.end()
	r := &c.s.sdk
	r.mu.Lock()
	if r.conns[c.server] == c {
		delete(r.conns, c.server)
	}
	r.mu.Unlock()
	return nil
}

func (c *sdkConn) Write(_ context.Context, m jsonrpc.Message) error {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return mcp.ErrConnectionClosed
	}
	if c.fromManifest(m) {
		return nil
	}
	raw, err := jsonrpc.EncodeMessage(m)
	if err != nil {
		return err
	}
	var call sdkCall
	if req, ok := m.(*jsonrpc.Request); ok && req.ID.IsValid() {
		call = sdkCall{conn: c, id: req.ID}
	}
	r := &c.s.sdk
	r.mu.Lock()
	if r.ended {
		r.mu.Unlock()
		return errInputEnded
	}
	r.next++
	rid := "arbor-mcp-" + strconv.Itoa(r.next)
	if r.calls == nil {
		r.calls = map[string]sdkCall{}
	}
	r.calls[rid] = call
	r.mu.Unlock()
	c.s.write(mcpMessageOut{Type: "control_request", RequestID: rid,
		Request: mcpMessageReq{Subtype: "mcp_message", ServerName: c.server, Message: raw}})
	return nil
}

// fromManifest answers m from the manifest the client sent, when it can:
// the SDK initialized its server itself, so notifications/initialized is
// not repeated either.
func (c *sdkConn) fromManifest(m jsonrpc.Message) bool {
	req, ok := m.(*jsonrpc.Request)
	c.mu.Lock()
	man := c.manifest
	if !ok || man == nil {
		c.mu.Unlock()
		return false
	}
	var result json.RawMessage
	switch {
	case req.Method == "initialize" && req.ID.IsValid():
		result = man.InitializeResult
	case req.Method == "notifications/initialized" && !req.ID.IsValid():
		c.mu.Unlock()
		return true
	case req.Method == "tools/list" && req.ID.IsValid() && len(man.ToolsListResult) > 0:
		result = man.ToolsListResult
		c.manifest = nil // a later list (after list_changed) asks the server
	default:
		c.mu.Unlock()
		return false
	}
	c.mu.Unlock()
	c.put(&jsonrpc.Response{ID: req.ID, Result: result})
	return true
}

// mcpAnswer takes the client's control_response to one of arbor's
// mcp_message requests; it reports whether the id was one.
func (s *Server) mcpAnswer(rid, subtype string, body json.RawMessage, errText string) bool {
	if !strings.HasPrefix(rid, "arbor-mcp-") {
		return false
	}
	r := &s.sdk
	r.mu.Lock()
	call, ok := r.calls[rid]
	delete(r.calls, rid)
	r.mu.Unlock()
	if !ok {
		fmt.Fprintf(s.diag, "arbor: stream-json: control_response for unknown mcp_message %q ignored\n", rid)
		return true
	}
	if call.conn == nil {
		return true // an acknowledgement
	}
	if subtype == "error" {
		call.conn.put(&jsonrpc.Response{ID: call.id, Error: &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the client failed: " + errText}})
		return true
	}
	var reply mcpReply
	msg, err := func() (jsonrpc.Message, error) {
		if err := json.Unmarshal(body, &reply); err != nil {
			return nil, err
		}
		return jsonrpc.DecodeMessage(reply.MCPResponse)
	}()
	if err != nil {
		msg = &jsonrpc.Response{ID: call.id, Error: &jsonrpc.Error{Code: jsonrpc.CodeParseError, Message: fmt.Sprintf("the client's mcp_response: %v", err)}}
	}
	call.conn.put(msg)
	return true
}

// mcpMessage takes an mcp_message the client sends: what one of its
// in-process servers sends on its own (a notification, a request, or its
// answer to arbor's request).
func (s *Server) mcpMessage(id string, p controlPayload) {
	r := &s.sdk
	r.mu.Lock()
	c := r.conns[p.ServerName]
	r.mu.Unlock()
	if c == nil {
		s.fail(id, fmt.Errorf("mcp_message: no in-process MCP server %q is connected", p.ServerName))
		return
	}
	m, err := jsonrpc.DecodeMessage(p.Message)
	if err != nil {
		s.fail(id, fmt.Errorf("mcp_message: %w", err))
		return
	}
	c.put(m)
	s.succeed(id, mcpAck)
}

// endSDKServers closes the in-process servers' connections when the
// client's input ends: nothing can reach them any more.
func (s *Server) endSDKServers() {
	r := &s.sdk
	r.mu.Lock()
	r.ended = true
	conns := r.conns
	r.conns = nil
	r.mu.Unlock()
	for _, c := range conns {
		c.end()
	}
}
