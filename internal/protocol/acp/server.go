package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/protocol"
)

// Options configure a server; the CLI fills them from its flags.
type Options struct {
	// Model is the model of new sessions; "" = the configured default.
	Model string
	// Version is arbor's, for initialize's agentInfo.
	Version string
	// Quiet gives memory back while no prompt runs and the client is
	// silent; nil is protocol.NewQuiet(protocol.QuietAfter, nil).
	Quiet *protocol.Quiet
}

// Server is one ACP connection over a pair of streams.
type Server struct {
	app  *app.App
	opts Options
	conn *conn
	diag io.Writer
	// events translates the bus's events into session/update
	// notifications; a prompt flushes it before it answers.
	events *agent.Subscription
	// ctx ends when the connection ends; arbor's requests to the client
	// and the sessions' runners use it.
	ctx context.Context
	// work counts the goroutines that answer requests (session/new,
	// session/load) and permission requests; Serve waits for them.
	work sync.WaitGroup
	// quiet gives memory back once no prompt runs and no input came for
	// a while (protocol.Quiet): input disarms it, the end of the last
	// running prompt arms it.
	quiet *protocol.Quiet

	mu sync.Mutex // guards the fields below
	// caps are the client's, from initialize.
	caps        clientCapabilities
	initialized bool
	sessions    map[string]*session
	// asks are the permission requests out to the client, by interaction
	// id: their cancel ends the wait when the interaction ends otherwise.
	asks map[string]context.CancelFunc
	// closing is set when the input ended: a session opened afterwards is
	// closed at once.
	closing bool
	// prompts is how many prompt turns run, over all sessions.
	prompts int
}

// Serve runs the protocol until in ends or ctx is cancelled. Then every
// session's running prompt is cancelled (its tool processes with it), the
// requests to the client still waiting are answered as refused, the
// sessions' trees are released, and Serve returns once nothing it started
// runs any more.
func Serve(ctx context.Context, a *app.App, in io.Reader, out, diag io.Writer, o Options) error {
	ob := protocol.NewOutbox(out, func(err error) { fmt.Fprintf(diag, "arbor: acp: write: %v\n", err) })
	// The last lines are written; once signalled, a client that stopped
	// reading gets a grace period only.
	defer ob.CloseAfter(ctx)
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	s := &Server{app: a, opts: o, conn: newConn(ob), diag: diag, ctx: ctx, quiet: o.Quiet,
		sessions: map[string]*session{}, asks: map[string]context.CancelFunc{}}
	if s.quiet == nil {
		s.quiet = protocol.NewQuiet(protocol.QuietAfter, nil)
	}
	defer s.quiet.Close()
	s.events = a.Bus.Subscribe(s.translate)
	defer s.events.Close()

	err := protocol.NewReader(in, 0).Untyped().Each(ctx, s.handle, s.badLine)
	// The client is gone (or arbor stops): nothing it asked for can be
	// answered any more, and nothing may go on running for it.
	stop()
	s.conn.close()
	s.mu.Lock()
	s.closing = true
	sessions := make([]*session, 0, len(s.sessions))
	for _, ss := range s.sessions {
		sessions = append(sessions, ss)
	}
	s.mu.Unlock()
	for _, ss := range sessions {
		ss.close()
	}
	s.work.Wait()
	s.events.Flush()
	if err != nil {
		return fmt.Errorf("acp: read input: %w", err)
	}
	return nil
}

// badLine answers a line that is no JSON object as JSON-RPC asks: a
// parse error (or an invalid request: a batch, a bare value) with id null.
func (s *Server) badLine(le *protocol.LineError) {
	fmt.Fprintf(s.diag, "arbor: acp: input %v\n", le)
	code := codeParseError
	if errors.Is(le.Err, protocol.ErrNotObject) {
		code = codeInvalidRequest
	}
	s.send(s.conn.fail(nil, code, fmt.Sprintf("%v", le)))
}

// handle dispatches one input line; it always goes back to reading.
func (s *Server) handle(line protocol.Line) bool {
	s.quiet.Busy()
	var m message
	if err := json.Unmarshal(line.Raw, &m); err != nil {
		s.send(s.conn.fail(nil, codeInvalidRequest, fmt.Sprintf("line %d is no JSON-RPC message: %v", line.Number, err)))
		return true
	}
	hasID := len(m.ID) > 0 && string(m.ID) != "null"
	switch {
	case m.JSONRPC != "2.0":
		s.send(s.conn.fail(m.ID, codeInvalidRequest, fmt.Sprintf(`line %d: "jsonrpc" must be "2.0"`, line.Number)))
	case m.Method == "" && hasID:
		if !s.conn.deliver(m) {
			fmt.Fprintf(s.diag, "arbor: acp: line %d: an answer to no request of arbor's (id %s) ignored\n", line.Number, m.ID)
		}
	case m.Method == "":
		s.send(s.conn.fail(m.ID, codeInvalidRequest, fmt.Sprintf("line %d has neither a method nor an id", line.Number)))
	case !hasID:
		s.notification(m)
	default:
		s.request(m)
	}
	return true
}

// send reports a write that could not be queued (a value that does not
// encode: a bug).
func (s *Server) send(err error) {
	if err != nil {
		fmt.Fprintf(s.diag, "arbor: acp: %v\n", err)
	}
}

// request answers one of the client's requests. Those that wait on the
// store, the model or MCP servers are answered from a runner job or a
// goroutine of their own, so the reader always goes back to reading.
func (s *Server) request(m message) {
	if m.Method != "initialize" && m.Method != "authenticate" && !s.isInitialized() {
		s.send(s.conn.fail(m.ID, codeInvalidRequest, m.Method+" before initialize: send initialize first"))
		return
	}
	switch m.Method {
	case "initialize":
		s.initialize(m)
	case "authenticate":
		// arbor reads its keys from the environment and config; there is
		// nothing to do at the client's request.
		s.send(s.conn.respond(m.ID, struct{}{}))
	case "session/new":
		s.goRequest(m, s.newSession)
	case "session/load":
		s.goRequest(m, s.loadSession)
	case "session/prompt":
		s.prompt(m)
	case "session/set_mode":
		s.setMode(m)
	case "session/set_config_option":
		s.setConfigOption(m)
	case "session/close":
		s.goRequest(m, s.closeSession)
	case "session/list":
		s.goRequest(m, s.listSessions)
	case "session/resume":
		s.goRequest(m, s.resumeSession)
	default:
		s.send(s.conn.fail(m.ID, codeMethodNotFound, fmt.Sprintf("method %q is not one arbor implements", m.Method)))
	}
}

// notification handles one of the client's notifications; unknown ones
// are ignored, as JSON-RPC asks.
func (s *Server) notification(m message) {
	switch m.Method {
	case "session/cancel":
		var p sessionRef
		if err := json.Unmarshal(m.Params, &p); err != nil {
			fmt.Fprintf(s.diag, "arbor: acp: session/cancel: %v\n", err)
			return
		}
		if ss := s.session(p.SessionID); ss != nil {
			ss.cancel()
		} else {
			fmt.Fprintf(s.diag, "arbor: acp: session/cancel: no session %q\n", p.SessionID)
		}
	default:
		fmt.Fprintf(s.diag, "arbor: acp: notification %q ignored\n", m.Method)
	}
}

// goRequest answers m from a goroutine Serve waits for.
func (s *Server) goRequest(m message, answer func(message) (any, *rpcError)) {
	s.work.Add(1)
	go func() {
		defer s.work.Done()
		res, rerr := answer(m)
		if rerr != nil {
			s.send(s.conn.fail(m.ID, rerr.Code, rerr.Message))
			return
		}
		if t, ok := res.(answerThen); ok {
			s.send(s.conn.respond(m.ID, t.res))
			t.then()
			return
		}
		s.send(s.conn.respond(m.ID, res))
	}()
}

// answerThen is an answer with what follows it (the notifications of a
// session the answer gives the client).
type answerThen struct {
	res  any
	then func()
}

func (s *Server) isInitialized() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.initialized
}

// initialize records the client's capabilities and answers with arbor's.
func (s *Server) initialize(m message) {
	var p initializeRequest
	if err := json.Unmarshal(m.Params, &p); err != nil {
		s.send(s.conn.fail(m.ID, codeInvalidParams, "initialize: "+err.Error()))
		return
	}
	s.mu.Lock()
	s.caps, s.initialized = p.ClientCapabilities, true
	s.mu.Unlock()
	s.send(s.conn.respond(m.ID, initializeResponse{
		ProtocolVersion: protocolVersion,
		AgentCapabilities: agentCapabilities{LoadSession: true,
			PromptCapabilities:  promptCapabilities{EmbeddedContext: true},
			MCPCapabilities:     mcpCapabilities{HTTP: true, SSE: true},
			SessionCapabilities: sessionCapabilities{Close: &struct{}{}, List: &struct{}{}, Resume: &struct{}{}}},
		AuthMethods: []authMethod{{ID: "environment", Name: "API key in the environment",
			Description: "arbor reads its model keys (ANTHROPIC_API_KEY, OPENAI_API_KEY, …) from the environment and its config file; set them where the editor starts arbor"}},
		AgentInfo: implementation{Name: "arbor", Title: "arbor", Version: s.opts.Version},
	}))
}

func (s *Server) capabilities() clientCapabilities {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.caps
}

// session returns the open session id, nil if there is none.
func (s *Server) session(id string) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sessions[id]
}

// sessionParams decodes m's params into v and returns the open session
// *id names (id points into v); when either fails, the request is
// answered with the error and it returns nil.
func (s *Server) sessionParams(m message, v any, id *string) *session {
	e := params(m, v)
	var ss *session
	if e == nil {
		if ss = s.session(*id); ss == nil {
			e = unknownSession(m.Method, *id)
		}
	}
	if e != nil {
		s.send(s.conn.fail(m.ID, e.Code, e.Message))
	}
	return ss
}

// params decodes m's params into v, or says why it cannot.
func params(m message, v any) *rpcError {
	if len(m.Params) == 0 {
		return &rpcError{Code: codeInvalidParams, Message: m.Method + ": params are missing"}
	}
	if err := json.Unmarshal(m.Params, v); err != nil {
		return &rpcError{Code: codeInvalidParams, Message: m.Method + ": " + err.Error()}
	}
	return nil
}

// unknownSession is the error for a request naming no open session.
func unknownSession(method, id string) *rpcError {
	return &rpcError{Code: codeNotFound, Message: fmt.Sprintf("%s: no open session %q (session/new or session/load opens one)", method, id)}
}

// Help is `arbor acp --help`'s text.
const Help = `Run arbor as an ACP agent for an editor (Zed, JetBrains IDEs, Neovim and
Emacs plugins): JSON-RPC 2.0 on stdin/stdout, one message a line. Sessions
are arbor's stored sessions (session/load continues them); a session's tree
shows as the plan; --mode is the first mode of every session and --model its
model. Diagnostics go to stderr. See docs/acp.md.`
