package envelope

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/tool"
	"github.com/arbor-run/arbor/internal/tree"
)

// Sub-agents.
//
// Every session the server opens is the root of a hosted tree run with the
// session's id (tree.Host): the main agent gets the root's tree tools
// (spawn, fork, ask, read_tree, read_node, stop, pause, resume, modify) and
// its children are the tree's nodes, run by the engine in parallel and
// persisted, so -r/-c and /resume continue them. A child's task_id is its
// node's session id ("<session>.<node>"), stable across processes; its
// agent_id names one runtime of it ("agent-N", numbered per process), and
// a task whose runtime is rebuilt in this process (its session resumed
// again) reports the old one as previous_agent_id.
//
// agent_started is pushed when a node's agent is built, agent_done when a
// node that had one ends (summary: its result, or its error), agent_notify
// when a node calls notify. What reaches the main agent's inbox — the end
// of each of its own children (but those stopped) and the notifications
// addressed to it — is delivered as one user message per batch, in a turn
// of its own, like a background result. idle waits for global quiescence:
// no main turn queued or running, nothing in the inbox, and no node of
// the tree that can still progress (paused nodes wait for the main agent
// and do not count). cancel stops every child that has not ended.

// subAgent is a node of the current session's tree that has (had) an agent.
type subAgent struct {
	agentID, taskID, agentType string
	node, parent               int64
}

// subAgents is the current session's tree as the server sees it. Runner
// jobs replace the tree (adopt); translate keeps it current from the
// tree's events.
type subAgents struct {
	mu sync.Mutex // guards the fields below
	// cur is the current session's tree; byTask (by task id) and byNode
	// are its nodes that have an agent in this process, tasks the task
	// ids of its nodes, live the nodes that can still progress.
	cur    *tree.Host
	byTask map[string]*subAgent
	byNode map[int64]*subAgent
	tasks  map[int64]string
	live   map[int64]bool
	// seq numbers the agent ids; former maps a task id to its last agent
	// id, for the whole process.
	seq    int
	former map[string]string
	// lastError is each task's last error message pushed, so that a
	// retried node failing alike does not push the same error twice.
	lastError map[string]string
}

func newSubAgents() *subAgents {
	return &subAgents{former: map[string]string{}, lastError: map[string]string{}}
}

// newError reports whether msg is not the error last pushed for task,
// and records it.
func (t *subAgents) newError(task, msg string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.lastError[task] == msg {
		return false
	}
	t.lastError[task] = msg
	return true
}

// host returns the current tree.
func (t *subAgents) host() *tree.Host {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.cur
}

// mine reports whether run runID is the current tree.
func (t *subAgents) mine(runID string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.cur != nil && runID == t.cur.RunID()
}

// liveCount is the number of nodes that can still progress.
func (t *subAgents) liveCount() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.live)
}

// ofSession returns the sub-agent whose session is id, nil for the main
// agent's (mainSession) and unknown sessions.
func (t *subAgents) ofSession(id, mainSession string) *subAgent {
	if id == "" || id == mainSession {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.byTask[id]
}

// parent names a node's parent as agent and task ids: the main agent's
// are both ""; a node whose agent is not running in this process
// has a task id but no agent id.
func (t *subAgents) parent(parent int64) (agentID, taskID string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.parentLocked(parent)
}

func (t *subAgents) parentLocked(parent int64) (agentID, taskID string) {
	if parent == 1 {
		return mainAgent, ""
	}
	if p := t.byNode[parent]; p != nil {
		return p.agentID, p.taskID
	}
	return "", t.tasks[parent]
}

// trackLocked records a node's task id and whether it can progress.
func (t *subAgents) trackLocked(n tree.NodeView) {
	if n.SessionID != "" {
		t.tasks[n.ID] = n.SessionID
	}
	if !n.State.Terminal() && n.State != tree.StatePaused {
		t.live[n.ID] = true
	} else {
		delete(t.live, n.ID)
	}
}

// adopt makes o's tree the current one: its state so far is read before
// it starts, and the events published afterwards keep it current. It is
// called with ctl.mu held, except by Serve before anything runs.
func (t *subAgents) adopt(o opened) {
	t.mu.Lock()
	t.cur = o.host
	t.byTask, t.byNode = map[string]*subAgent{}, map[int64]*subAgent{}
	t.tasks, t.live = map[int64]string{}, map[int64]bool{}
	for _, n := range o.host.Nodes() {
		t.trackLocked(n)
	}
	t.mu.Unlock()
	o.host.Start()
}

// started records the agent built for node n and returns it with its
// former agent id.
func (t *subAgents) started(n tree.NodeView) (a *subAgent, prev string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.seq++
	a = &subAgent{agentID: fmt.Sprintf("agent-%d", t.seq), taskID: n.SessionID,
		agentType: agentType(n), node: n.ID, parent: n.ParentID}
	prev = t.former[a.taskID]
	t.former[a.taskID] = a.agentID
	t.byTask[a.taskID] = a
	t.byNode[a.node] = a
	t.tasks[a.node] = a.taskID
	return a, prev
}

// hostedSystem tells the main agent how to delegate.
const hostedSystem = `You can delegate to sub-agents, which work in parallel while you keep talking
with the user. spawn(goal, prompt, blocked_by?) starts one with a clean context (give it
everything it needs in prompt); fork(...) also gives it the results of the sub-agents that
have completed; ask(question, ...) puts a question to the user as a node that others can
be blocked_by; read_tree and read_node show them; stop, pause, resume and modify control
them. Do not wait or poll for them: when one ends, its result is sent to you as a
message, and sub-agents may send you progress notes the same way. Delegate only work that
is independent or large; do small things yourself.`

// opened is a session the server opened with what belongs to it.
type opened struct {
	sess *app.Session
	jobs *tool.Jobs
	host *tree.Host
}

// open opens a new session (id "") or resumes stored session id with
// its hosted tree, not yet started (adoptLocked starts it). Errors of a
// resume wrap store.ErrNotFound for an unknown id. On failure so.Jobs is
// closed.
func (s *server) open(ctx context.Context, id string, so app.SessionOptions) (opened, error) {
	o, err := s.tryOpen(ctx, id, so)
	if err != nil {
		so.Jobs.Close()
	}
	return o, err
}

func (s *server) tryOpen(ctx context.Context, id string, so app.SessionOptions) (opened, error) {
	engine := s.ws().HostEngine(func() string {
		s.ctl.mu.Lock()
		defer s.ctl.mu.Unlock()
		return s.ctl.model
	})
	if id != "" {
		s.hostClosers.Wait() // the session's tree may still be closing
		st, err := s.app.Store.GetSession(ctx, id)
		switch {
		case errors.Is(err, store.ErrNotFound):
			return opened{}, fmt.Errorf("session %s %w", id, store.ErrNotFound) // as Chord says it
		case err != nil:
			return opened{}, fmt.Errorf("session %s: %w", id, err)
		}
		if st.OwnedByNode() {
			return opened{}, fmt.Errorf("session %s is a tree node's (a sub-agent's); resume the conversation it belongs to", id)
		}
		return s.openWith(ctx, engine, id, so, true)
	}
	// A fresh session is created without reading the store: an id drawn
	// before is a conflict of the run's or the session's insert.
	return app.WithNewID(func(id string) (opened, error) { return s.openWith(ctx, engine, id, so, false) })
}

// openWith hosts run id and opens its session; on failure it releases
// the host (not so.Jobs).
func (s *server) openWith(ctx context.Context, engine *tree.Engine, id string, so app.SessionOptions, resume bool) (opened, error) {
	work := s.ws()
	if !resume {
		// A session that cannot start (no model, no key) stores no run.
		m, err := work.Model(so.Model)
		if err != nil {
			return opened{}, err
		}
		so.Model = m.Ref.Ref
	}
	host, err := engine.Host(ctx, tree.HostOptions{ID: id, SessionID: id, Model: so.Model, Workspace: work.Workspace, New: !resume})
	if err != nil {
		return opened{}, err
	}
	so.Tools = append(so.Tools, host.Tools()...)
	so.System = strings.TrimSpace(so.System + "\n\n" + hostedSystem)
	var sess *app.Session
	if resume {
		sess, err = work.ResumeSession(ctx, id, so)
	} else {
		sess, err = work.CreateSession(ctx, id, so)
	}
	if err != nil {
		host.Close()
		return opened{}, err
	}
	return opened{sess: sess, jobs: so.Jobs, host: host}, nil
}

// treeEvent handles the events of the current session's tree; it reports
// whether e was one. Called by translate, with no lock; tree events come one
// at a time, and each is handled under ctl.mu, which the idle decision
// also holds.
func (s *server) treeEvent(e agent.Event) bool {
	switch e := e.(type) {
	case *tree.AgentStarted:
		s.ctl.mu.Lock() // adopt runs under it: the tree cannot change meanwhile
		defer s.ctl.mu.Unlock()
		if !s.agents.mine(e.RunID) {
			return true
		}
		a, prev := s.agents.started(e.Node)
		s.ctl.ranSinceIdle = true
		parentAgent, parentTask := s.agents.parent(a.parent)
		s.wire.push(evAgentStarted, agentStarted{AgentID: a.agentID, PreviousAgentID: prev, TaskID: a.taskID,
			AgentType: a.agentType, Description: e.Node.Goal, ParentAgentID: parentAgent, ParentTaskID: parentTask, Model: e.Node.Model, Runner: e.Node.Runner},
			func(st *state) { st.busy = true })
	case *tree.NodeChanged:
		s.ctl.mu.Lock() // adopt runs under it: the tree cannot change meanwhile
		defer s.ctl.mu.Unlock()
		if !s.agents.mine(e.RunID) {
			return true
		}
		s.agents.mu.Lock()
		s.agents.trackLocked(e.Node)
		s.agents.mu.Unlock()
		if e.Node.State.Terminal() && !e.From.Terminal() {
			s.nodeEndedLocked(e.Node)
		}
	case *tree.Notified:
		s.ctl.mu.Lock() // adopt runs under it: the tree cannot change meanwhile
		defer s.ctl.mu.Unlock()
		if !s.agents.mine(e.RunID) {
			return true
		}
		s.agents.mu.Lock()
		from := s.agents.byNode[e.From.ID]
		var parentAgent, parentTask string
		if from != nil {
			parentAgent, parentTask = s.agents.parentLocked(from.parent)
		}
		s.agents.mu.Unlock()
		if from == nil {
			return true
		}
		s.wire.push(evAgentNotify, agentNotify{AgentID: from.agentID, TaskID: from.taskID, AgentType: from.agentType,
			ParentAgentID: parentAgent, ParentTaskID: parentTask, TargetAgentID: parentAgent, TargetTaskID: parentTask,
			Kind: "progress", Message: e.Message}, nil)
		if e.To == 1 {
			s.toInboxLocked(fmt.Sprintf("Progress note from sub-agent #%d (%s): %s", e.From.ID, e.From.Goal, e.Message))
		}
	case *tree.RunFinished:
	default:
		return false
	}
	return true
}

// nodeEndedLocked reports a node's end: agent_done when it had an agent,
// and its result to the main agent when it is the main agent's child.
// ctl.mu must be held.
func (s *server) nodeEndedLocked(n tree.NodeView) {
	summary := n.Result
	if n.State != tree.StateComplete {
		summary = string(n.State) + ": " + n.Error
	}
	if n.Kind != tree.KindAsk && n.SessionID != "" { // it had an agent, perhaps in an earlier process
		s.agents.mu.Lock()
		agentID := ""
		if a := s.agents.byNode[n.ID]; a != nil {
			agentID = a.agentID
		}
		parentAgent, parentTask := s.agents.parentLocked(n.ParentID)
		s.agents.mu.Unlock()
		if agentID != "" {
			s.wire.rollback(agentID, string(n.State))
		}
		s.wire.push(evAgentDone, agentDone{AgentID: agentID, TaskID: n.SessionID, AgentType: agentType(n),
			ParentAgentID: parentAgent, ParentTaskID: parentTask, Summary: summary, State: string(n.State)}, nil)
	}
	switch {
	case n.ParentID != 1:
	case n.State == tree.StateCancelled:
		// Stopped by the main agent or by cancel: nothing to hand over.
	case n.Kind == tree.KindAsk:
		s.toInboxLocked(fmt.Sprintf("The user answered your question #%d (%s): %s", n.ID, n.Question, n.Result))
	default:
		s.toInboxLocked(fmt.Sprintf("Sub-agent #%d (%s) ended, %s:\n%s", n.ID, n.Goal, n.State, summary))
	}
	s.settleLocked()
}

func agentType(n tree.NodeView) string {
	if n.Spawn != "" {
		return n.Spawn
	}
	return string(n.Kind)
}

// toInboxLocked queues text for the main agent; one delivery turn takes
// everything queued by the time it starts. ctl.mu must be held.
func (s *server) toInboxLocked(text string) {
	c := s.ctl
	c.inbox = append(c.inbox, text)
	if c.delivering {
		return
	}
	if !s.submitInternal("deliver", s.deliverInbox) {
		return // input has ended
	}
	c.delivering = true
	c.queued++
	s.wire.mutate(func(st *state) { st.busy = true })
}

// deliverInbox runs the turn that hands the inbox to the main agent.
func (s *server) deliverInbox(ctx context.Context) {
	c := s.ctl
	c.mu.Lock()
	items := c.inbox
	c.inbox, c.delivering = nil, false
	if len(items) == 0 {
		c.queued--
		s.settleLocked()
		c.mu.Unlock()
		return
	}
	c.mu.Unlock()
	s.finishTurn(s.runTurn(ctx, strings.Join(items, "\n\n"), ""))
}

// settleLocked pushes the idle that the tree was holding back once it and
// the main agent are quiescent. ctl.mu must be held.
func (s *server) settleLocked() {
	if st := s.wire.get(); st.busy && s.ctl.queued == 0 && s.ctl.cancel == nil {
		s.idleLocked(st.lastOutcome, nil)
	}
}

// stopTree stops every child of the current tree; cancel uses it. The
// tree publishes the nodes' changes; translate reports them.
func (s *server) stopTree() {
	s.ctl.mu.Lock()
	s.ctl.inbox = nil
	s.ctl.mu.Unlock()
	h := s.agents.host()
	if h == nil {
		return
	}
	// The toast goes out before the children stop: their ends may settle
	// the tree and push the cancel's idle before StopAll returns, and the
	// note belongs to the work that idle ends.
	if n := s.agents.liveCount(); n > 0 {
		s.wire.push(evToast, toast{AgentID: mainAgent, Level: "warn", Message: "stopped " + plural(n, "sub-agent")}, nil)
	}
	h.StopAll()
}
