package envelope

import (
	"context"
	"errors"
	"fmt"
	"strings"

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
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.model
	})
	if id != "" {
		s.hostClosers.Wait() // the session's tree may still be closing
		st, err := s.app.Store.GetSession(ctx, id)
		if err != nil {
			return opened{}, fmt.Errorf("session %s: %w", id, err)
		}
		if st.OwnedByNode() {
			return opened{}, fmt.Errorf("session %s is a tree node's (a sub-agent's); resume the conversation it belongs to", id)
		}
		return s.openWith(ctx, engine, id, so, true)
	}
	for {
		id = app.NewID()
		_, err := s.app.Store.GetSession(ctx, id)
		if err == nil {
			continue // drawn before: draw again
		}
		if !errors.Is(err, store.ErrNotFound) {
			return opened{}, err
		}
		o, err := s.openWith(ctx, engine, id, so, false)
		if !errors.Is(err, store.ErrConflict) {
			return o, err
		}
	}
}

// openWith hosts run id and opens its session; on failure it releases
// the host (not so.Jobs).
func (s *server) openWith(ctx context.Context, engine *tree.Engine, id string, so app.SessionOptions, resume bool) (opened, error) {
	work := s.ws()
	host, err := engine.Host(ctx, tree.HostOptions{ID: id, SessionID: id, Model: so.Model, Workspace: work.Workspace})
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
// whether e was one. Called by translate, unlocked.
func (s *server) treeEvent(e agent.Event) bool {
	switch e := e.(type) {
	case *tree.AgentStarted:
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.host == nil || e.RunID != s.host.RunID() {
			return true
		}
		s.agentSeq++
		a := &subAgent{agentID: fmt.Sprintf("agent-%d", s.agentSeq), taskID: e.Node.SessionID,
			agentType: agentType(e.Node), node: e.Node.ID, parent: e.Node.ParentID}
		prev := s.formerAgents[a.taskID]
		s.formerAgents[a.taskID] = a.agentID
		s.subAgents[a.taskID] = a
		s.subByNode[a.node] = a
		s.tasks[a.node] = a.taskID
		s.ranSinceIdle = true
		parentAgent, parentTask := s.parentLocked(a.parent)
		s.pushLocked(evAgentStarted, agentStarted{AgentID: a.agentID, PreviousAgentID: prev, TaskID: a.taskID,
			AgentType: a.agentType, Description: e.Node.Goal, ParentAgentID: parentAgent, ParentTaskID: parentTask, Model: e.Node.Model},
			func(st *state) { st.busy = true })
	case *tree.NodeChanged:
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.host == nil || e.RunID != s.host.RunID() {
			return true
		}
		s.trackLocked(e.Node)
		if e.Node.State.Terminal() && !e.From.Terminal() {
			s.nodeEndedLocked(e.Node)
		}
	case *tree.Notified:
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.host == nil || e.RunID != s.host.RunID() {
			return true
		}
		from := s.subByNode[e.From.ID]
		if from == nil {
			return true
		}
		parentAgent, parentTask := s.parentLocked(from.parent)
		s.pushLocked(evAgentNotify, agentNotify{AgentID: from.agentID, TaskID: from.taskID, AgentType: from.agentType,
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
func (s *server) nodeEndedLocked(n tree.NodeView) {
	summary := n.Result
	if n.State != tree.StateComplete {
		summary = string(n.State) + ": " + n.Error
	}
	if n.Kind != tree.KindAsk && n.SessionID != "" { // it had an agent, perhaps in an earlier process
		agentID := ""
		if a := s.subByNode[n.ID]; a != nil {
			agentID = a.agentID
			s.rollbackLocked(agentID, string(n.State))
		}
		parentAgent, parentTask := s.parentLocked(n.ParentID)
		s.pushLocked(evAgentDone, agentDone{AgentID: agentID, TaskID: n.SessionID, AgentType: agentType(n),
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

// parentLocked names a node's parent as agent and task ids: the main
// agent's are "main" and ""; a node whose agent is not running in this
// process has a task id but no agent id.
func (s *server) parentLocked(parent int64) (agentID, taskID string) {
	if parent == 1 {
		return mainAgent, ""
	}
	if p := s.subByNode[parent]; p != nil {
		return p.agentID, p.taskID
	}
	return "", s.tasks[parent]
}

// trackLocked records a node's task id and whether it can progress.
func (s *server) trackLocked(n tree.NodeView) {
	if n.SessionID != "" {
		s.tasks[n.ID] = n.SessionID
	}
	if !n.State.Terminal() && n.State != tree.StatePaused {
		s.live[n.ID] = true
	} else {
		delete(s.live, n.ID)
	}
}

// adoptLocked makes o's tree the current one: its state so far is read
// before it starts, and the events published afterwards keep it current.
func (s *server) adoptLocked(o opened) {
	s.host = o.host
	s.subAgents, s.subByNode = map[string]*subAgent{}, map[int64]*subAgent{}
	s.tasks, s.live = map[int64]string{}, map[int64]bool{}
	s.inbox, s.delivering = nil, false
	for _, n := range o.host.Nodes() {
		s.trackLocked(n)
	}
	o.host.Start()
}

func agentType(n tree.NodeView) string {
	if n.Spawn != "" {
		return n.Spawn
	}
	return string(n.Kind)
}

// toInboxLocked queues text for the main agent; one delivery turn takes
// everything queued by the time it starts.
func (s *server) toInboxLocked(text string) {
	s.inbox = append(s.inbox, text)
	if s.delivering {
		return
	}
	s.delivering = true
	s.queued++
	s.mutateLocked(func(st *state) { st.busy = true })
	// The queue is not written under s.mu (the job goroutine takes it).
	go s.enqueue(s.deliverInbox)
}

// enqueue queues j on the job goroutine unless input has ended.
func (s *server) enqueue(j job) {
	s.enqMu.RLock()
	defer s.enqMu.RUnlock()
	if !s.enqClosed {
		s.jobs <- j
	}
}

// deliverInbox runs the turn that hands the inbox to the main agent.
func (s *server) deliverInbox(ctx context.Context) {
	s.mu.Lock()
	items := s.inbox
	s.inbox, s.delivering = nil, false
	if len(items) == 0 {
		s.queued--
		s.settleLocked()
		s.mu.Unlock()
		return
	}
	s.mu.Unlock()
	s.finishTurn(s.runTurn(ctx, strings.Join(items, "\n\n")))
}

// treeBusyLocked reports whether a node of the current tree can progress.
func (s *server) treeBusyLocked() bool { return len(s.live) > 0 }

// settleLocked pushes the idle that the tree was holding back once it and
// the main agent are quiescent.
func (s *server) settleLocked() {
	if s.st.busy && s.queued == 0 && s.cancel == nil {
		s.idleLocked(s.st.lastOutcome, nil)
	}
}

// stopTree stops every child of the current tree; cancel uses it. It runs
// unlocked: stopping publishes the nodes' changes.
func (s *server) stopTree() {
	s.mu.Lock()
	h := s.host
	s.inbox = nil
	s.mu.Unlock()
	if h == nil {
		return
	}
	if n := h.StopAll(); n > 0 {
		s.push(evToast, toast{AgentID: mainAgent, Level: "warn", Message: "stopped " + plural(n, "sub-agent")}, nil)
	}
}

// rollbackLocked pushes assistant_rollback when agentID streamed text
// that no assistant_message committed (its turn was cancelled or failed).
// s.mu must be held.
func (s *server) rollbackLocked(agentID, reason string) {
	if s.partial[agentID] {
		delete(s.partial, agentID)
		s.pushLocked(evAssistantRollback, assistantRollback{AgentID: agentID, Reason: reason}, nil)
	}
}

// subAgentOfLocked returns the sub-agent whose session is id, nil for the
// main agent's and unknown sessions.
func (s *server) subAgentOfLocked(session string) *subAgent {
	if session == "" || session == s.st.sessionID {
		return nil
	}
	return s.subAgents[session]
}
