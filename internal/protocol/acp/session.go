package acp

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/config"
	"github.com/arbor-run/arbor/internal/permission"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/tree"
)

// session is one ACP session: an arbor session (its agent, on the one
// agent loop) that hosts a tree run of the same id (tree.Host), so the
// agent's spawn/fork/ask tools make child nodes the engine runs; the
// tree's nodes are the session's plan. Its runner owns the agent: every
// prompt runs on it, one at a time.
type session struct {
	id   string
	srv  *Server
	work *app.App // the session's view of the App: its cwd, permission mode
	sess *app.Session
	host *tree.Host
	// runner runs the prompts; cancel ends the running one.
	runner *app.Runner

	mu sync.Mutex // guards the fields below
	// gen counts session/cancel: a prompt queued before the last cancel
	// answers cancelled without running.
	gen int64
	// nodes are the tree's nodes but the root, by id, for the plan.
	nodes map[int64]tree.NodeView
	// model is the agent's model ref (the children's too).
	model string
	// ended are the results of the children that ended since the last
	// prompt: the next prompt gives them to the agent.
	ended []string
	// source is what the SessionStart hooks are told at the next prompt
	// ("startup" for a new session, "resume" for a loaded one; "" once
	// they ran); started is set once they did, for SessionEnd.
	source  string
	started bool
}

// takeSource returns the SessionStart source of the prompt that runs now,
// "" after the first.
func (ss *session) takeSource() string {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	src := ss.source
	if src != "" {
		ss.source, ss.started = "", true
	}
	return src
}

// modes are arbor's permission modes, offered as the session's modes.
var modes = []sessionMode{
	{ID: string(permission.ModeDefault), Name: "Default", Description: "reads run; edits and commands ask first"},
	{ID: string(permission.ModeAutoEdit), Name: "Accept edits", Description: "reads and edits run; commands ask first"},
	{ID: string(permission.ModePlan), Name: "Plan", Description: "read-only: nothing is changed"},
	{ID: string(permission.ModeTrust), Name: "Trust", Description: "everything no rule denies runs without asking"},
}

func (s *Server) newSession(m message) (any, *rpcError) {
	var p newSessionRequest
	if e := params(m, &p); e != nil {
		return nil, e
	}
	ss, e := s.open(p.Cwd, p.MCPServers, "")
	if e != nil {
		return nil, e
	}
	return answerThen{res: newSessionResponse{SessionID: ss.id, Modes: ss.modeState(), ConfigOptions: ss.configOptions()},
		then: func() { s.announceCommands(ss) }}, nil
}

func (s *Server) loadSession(m message) (any, *rpcError) { return s.reopen(m, true) }

// resumeSession is session/load without the replay: the editor shows the
// conversation it kept.
func (s *Server) resumeSession(m message) (any, *rpcError) { return s.reopen(m, false) }

// reopen opens a stored session again for session/load (replay: its
// conversation is sent as updates before the answer) or session/resume.
func (s *Server) reopen(m message, replay bool) (any, *rpcError) {
	var p loadSessionRequest
	if e := params(m, &p); e != nil {
		return nil, e
	}
	if p.SessionID == "" {
		return nil, &rpcError{Code: codeInvalidParams, Message: m.Method + ": sessionId is empty"}
	}
	if s.session(p.SessionID) != nil {
		return nil, &rpcError{Code: codeInvalidRequest, Message: fmt.Sprintf("%s: session %s is open already", m.Method, p.SessionID)}
	}
	ss, e := s.open(p.Cwd, p.MCPServers, p.SessionID)
	if e != nil {
		return nil, e
	}
	if replay {
		ss.replay()
	}
	return answerThen{res: loadSessionResponse{Modes: ss.modeState(), ConfigOptions: ss.configOptions()},
		then: func() { s.announceCommands(ss) }}, nil
}

// open opens a new session (id "") or loads stored session id, with the
// client's MCP servers, in cwd.
func (s *Server) open(cwd string, servers []mcpServer, id string) (*session, *rpcError) {
	if !filepath.IsAbs(cwd) {
		return nil, &rpcError{Code: codeInvalidParams, Message: fmt.Sprintf("cwd %q is not an absolute path", cwd)}
	}
	if err := s.addMCP(servers); err != nil {
		return nil, &rpcError{Code: codeInvalidParams, Message: err.Error()}
	}
	work, err := s.app.In(cwd)
	if err != nil {
		return nil, &rpcError{Code: codeInternalError, Message: fmt.Sprintf("workspace %s: %v", cwd, err)}
	}
	opened := false
	defer func() {
		if !opened {
			work.Close()
		}
	}()
	ss := &session{srv: s, work: work, runner: app.NewRunner(0), nodes: map[int64]tree.NodeView{}, source: "startup"}
	if id != "" {
		ss.source = "resume"
	}
	if id != "" {
		st, err := s.app.Store.GetSession(s.ctx, id)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return nil, &rpcError{Code: codeNotFound, Message: fmt.Sprintf("arbor has no stored session %q", id)}
		case err != nil:
			return nil, &rpcError{Code: codeInternalError, Message: err.Error()}
		case st.OwnedByNode():
			return nil, &rpcError{Code: codeInvalidParams, Message: fmt.Sprintf("session %s is a tree node's; load the session it belongs to", id)}
		}
	}
	start := func(sid string) (struct{}, error) {
		ss.id = sid
		return struct{}{}, ss.start(s.ctx, id != "")
	}
	if id != "" {
		_, err = start(id)
	} else {
		_, err = app.WithNewID(start)
		id = ss.id
	}
	if err != nil {
		var held *store.LeaseHeldError
		if errors.As(err, &held) {
			return nil, &rpcError{Code: codeInvalidRequest, Message: fmt.Sprintf("session %s is driven by another arbor process (%v)", id, err)}
		}
		return nil, &rpcError{Code: codeInternalError, Message: err.Error()}
	}
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		ss.close()
		return nil, &rpcError{Code: codeInternalError, Message: "arbor acp is stopping: the client disconnected"}
	}
	s.sessions[id] = ss
	s.mu.Unlock()
	opened = true
	return ss, nil
}

// start hosts the session's tree and makes (or resumes) its agent.
func (ss *session) start(ctx context.Context, resume bool) error {
	s := ss.srv
	engine := ss.work.HostEngine(ss.modelRef)
	so := app.SessionOptions{Model: s.opts.Model, System: hostedSystem,
		// Nobody could answer these: ACP v1 puts no question to the user.
		Hide: func(name string) bool { return name == "ask_user" || name == "ask" }}
	if caps := s.capabilities(); caps.FS.ReadTextFile && caps.FS.WriteTextFile {
		so.Files = clientFiles{ss}
	}
	if resume {
		so.Model = "" // the session's own, unless the client switches
	}
	if s.capabilities().Terminal && ss.work.Sandbox() == nil {
		so.Tools = append(so.Tools, ss.terminalShell())
	}
	host, err := engine.Host(ctx, tree.HostOptions{ID: ss.id, SessionID: ss.id, Model: so.Model, Workspace: ss.work.Workspace, New: !resume})
	if err != nil {
		return err
	}
	so.Tools = append(so.Tools, host.Tools()...)
	var sess *app.Session
	if resume {
		sess, err = ss.work.ResumeSession(ctx, ss.id, so)
	} else {
		sess, err = ss.work.CreateSession(ctx, ss.id, so)
	}
	if err != nil {
		host.Close()
		return err
	}
	ss.sess, ss.host, ss.model = sess, host, sess.Model.Ref.Ref
	for _, n := range host.Nodes() {
		if n.ID != 1 {
			ss.nodes[n.ID] = n
		}
	}
	ss.runner.Start(ctx)
	host.Start()
	return nil
}

// hostedSystem tells the session's agent about its tree tools.
const hostedSystem = `You can delegate to sub-agents, which work in parallel: spawn(goal, prompt, blocked_by?)
starts one with a clean context (give it everything it needs in prompt); fork(...) also gives it
the results of the sub-agents that have completed; read_tree and read_node show them. The user
sees them as the plan. Delegate only work that is independent or large; do small things yourself.`

// close cancels the running prompt, lets the queued ones answer
// cancelled, and releases the tree: its running children are left
// interrupted, as a hosted run is, so a later session/load continues
// them. Then it closes the session's view of the App (its sandbox and
// that sandbox's temporary directory). It returns when all have ended.
func (ss *session) close() {
	ss.cancelPrompts()
	ss.runner.Close()
	if ss.host != nil { // nil when start failed
		ss.host.Close()
	}
	ss.mu.Lock()
	started := ss.started
	ss.mu.Unlock()
	if started {
		ss.work.EndSession(context.Background(), ss.id, "other")
	}
	ss.work.Close()
}

// closeSession answers session/close: the session is closed as if
// cancelled (close), and its resources are released; a later session/load
// opens it again. An id that is not open is Resource not found (-32002),
// which the ACP SDK's client takes as closed already.
func (s *Server) closeSession(m message) (any, *rpcError) {
	var p sessionRef
	if e := params(m, &p); e != nil {
		return nil, e
	}
	s.mu.Lock()
	ss := s.sessions[p.SessionID]
	delete(s.sessions, p.SessionID)
	s.mu.Unlock()
	if ss == nil {
		return nil, unknownSession(m.Method, p.SessionID)
	}
	ss.close()
	return struct{}{}, nil
}

// cancel ends the running prompt, every queued one and the running
// sub-agents (session/cancel).
func (ss *session) cancel() {
	ss.cancelPrompts()
	ss.host.StopAll()
}

func (ss *session) cancelPrompts() {
	ss.mu.Lock()
	ss.gen++
	ss.mu.Unlock()
	ss.runner.Cancel(errCancelled)
}

var errCancelled = errors.New("the client cancelled the prompt")

func (ss *session) generation() int64 {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.gen
}

func (ss *session) modelRef() string {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.model
}

func (ss *session) modeState() modeState {
	return modeState{CurrentModeID: string(ss.work.Permissions.Mode()), AvailableModes: modes}
}

// configOptions offers the model: the session's, and the config's
// node_models.
func (ss *session) configOptions() []configOption {
	cur := ss.modelRef()
	refs := []string{cur}
	nm := ss.work.Config().NodeModels
	for _, n := range slices.Sorted(maps.Keys(nm)) {
		if r, err := ss.work.Config().Resolve(nm[n]); err == nil && !slices.Contains(refs, r.Ref) {
			refs = append(refs, r.Ref)
		}
	}
	opts := make([]selectOption, len(refs))
	for i, r := range refs {
		opts[i] = selectOption{Value: r, Name: r}
	}
	return []configOption{{ID: "model", Name: "Model", Category: "model", Type: "select", CurrentValue: cur, Options: opts}}
}

func (s *Server) setMode(m message) {
	var p setModeRequest
	ss := s.sessionParams(m, &p, &p.SessionID)
	if ss == nil {
		return
	}
	mode, err := permission.ParseMode(p.ModeID)
	if err != nil || !slices.ContainsFunc(modes, func(md sessionMode) bool { return md.ID == string(mode) }) {
		s.send(s.conn.fail(m.ID, codeInvalidParams, fmt.Sprintf("session/set_mode: unknown mode %q", p.ModeID)))
		return
	}
	ss.work.Permissions.SetMode(mode)
	s.send(s.conn.respond(m.ID, struct{}{}))
	s.update(ss.id, sessionUpdate{SessionUpdate: updateCurrentMode, CurrentModeID: string(mode)})
}

func (s *Server) setConfigOption(m message) {
	var p setConfigOptionRequest
	ss := s.sessionParams(m, &p, &p.SessionID)
	if ss == nil {
		return
	}
	if p.ConfigID != "model" {
		s.send(s.conn.fail(m.ID, codeInvalidParams, fmt.Sprintf("session/set_config_option: unknown option %q (arbor has model)", p.ConfigID)))
		return
	}
	md, err := ss.work.Model(p.Value)
	if err != nil {
		s.send(s.conn.fail(m.ID, codeInvalidParams, fmt.Sprintf("session/set_config_option: model %q: %v", p.Value, err)))
		return
	}
	// SetModel may be called while a turn runs: the next model call uses it.
	ss.sess.Agent.SetModel(md.Provider, md.Ref.Name, md.Ref.Ref, md.Ref.Price, md.Ref.ContextWindow)
	ss.mu.Lock()
	ss.model = md.Ref.Ref
	ss.mu.Unlock()
	s.send(s.conn.respond(m.ID, setConfigOptionResponse{ConfigOptions: ss.configOptions()}))
}

// addMCP adds the client's MCP servers to arbor's before the first
// session starts them; later sessions may name the same servers again.
func (s *Server) addMCP(servers []mcpServer) error {
	if len(servers) == 0 {
		return nil
	}
	add := map[string]config.MCPServer{}
	for _, sv := range servers {
		c := config.MCPServer{Type: sv.Type, Command: sv.Command, Args: sv.Args, URL: sv.URL}
		if c.Type == "" {
			c.Type = "stdio"
		}
		for _, e := range sv.Env {
			if c.Env == nil {
				c.Env = map[string]string{}
			}
			c.Env[e.Name] = e.Value
		}
		for _, h := range sv.Headers {
			if c.Headers == nil {
				c.Headers = map[string]string{}
			}
			c.Headers[h.Name] = h.Value
		}
		add[sv.Name] = c
	}
	err := s.app.AddMCPServers(add)
	if errors.Is(err, app.ErrMCPStarted) {
		known := map[string]bool{}
		for _, st := range s.app.MCPStatus() {
			known[st.Name] = true
		}
		var missing []string
		for n := range add {
			if !known[n] {
				missing = append(missing, n)
			}
		}
		if len(missing) > 0 {
			slices.Sort(missing)
			return fmt.Errorf("MCP servers %s: arbor connects the MCP servers of its first session for the whole process; start another arbor acp for these", strings.Join(missing, ", "))
		}
		return nil
	}
	return err
}
