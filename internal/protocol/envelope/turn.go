package envelope

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/permission"
	"github.com/arbor-run/arbor/internal/tool"
)

// mainAgent is the agent_id of the session's main agent: "", as Chord
// sends it (its delegation fields are empty); sub-agents have ids of
// their own (agent-N).
const mainAgent = ""

// Closing reasons of questions, as question_resolved reports them.
const (
	reasonAnswered   = "answered"
	reasonDeclined   = "declined"
	reasonSuperseded = "superseded"
	reasonNoResponse = "no_response"
	reasonCancelled  = "cancelled"
	reasonError      = "error"
)

// send runs a slash command, or closes the pending interactions and
// queues content as a turn; content starting with "//" is a plain
// message starting with "/".
func (s *server) send(c sendCmd) error {
	text := strings.TrimSpace(c.Content)
	typed := text // as the client typed it: a command's expansion does not name the conversation
	if text == "" {
		return fmt.Errorf("%w: content is empty", errBadCommand)
	}
	if strings.HasPrefix(text, "//") {
		// The escape of a message that starts with "/" (a path): "//"
		// sends it with one "/" less, as a plain message.
		i := strings.Index(c.Content, "//")
		c.Content = c.Content[:i] + c.Content[i+1:]
	} else if expanded, ok := s.projectSlash(text); ok {
		// A project's custom command (or skill) is a turn with its text.
		c.Content = expanded
	} else if strings.HasPrefix(text, "/") {
		if err := s.slash(text); err != nil {
			return &slashError{err: err}
		}
		return nil
	}
	s.ctl.mu.Lock()
	// Queue the turn and count it before the pending requests are closed,
	// so the turn they belong to cannot report idle in between (the job
	// cannot start before ctl.mu is released).
	if err := s.submit("turn", func(ctx context.Context) { s.finishTurn(s.runTurn(ctx, c.Content, typed)) }); err != nil {
		s.ctl.mu.Unlock()
		return err
	}
	s.ctl.queued++
	s.wire.mutate(func(st *state) { st.busy = true })
	s.cancelHandoff()
	s.payIdleLocked() // the new turn ends with its own idle
	confirms, questions := s.ix.supersede()
	s.ctl.mu.Unlock()
	// A request resolved meanwhile is simply gone.
	for _, id := range confirms {
		_ = s.app.Broker.Resolve(id, agent.Response{Approval: &tool.Approval{}})
	}
	for _, id := range questions {
		if err := s.app.Broker.Resolve(id, agent.Response{Answer: &tool.Answer{Declined: true}}); err != nil {
			s.ix.unclose(id)
		}
	}
	return nil
}

// cancellable runs fn with a context the cancel command cancels.
func (s *server) cancellable(ctx context.Context, fn func(ctx context.Context, sess *app.Session)) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.ctl.mu.Lock()
	s.ctl.cancel = cancel
	if s.ctl.jobCancelled {
		cancel() // the cancel came before the job started
	}
	sess := s.ctl.sess
	s.ctl.mu.Unlock()
	fn(ctx, sess)
	s.ctl.mu.Lock()
	s.ctl.cancel = nil
	s.ctl.mu.Unlock()
}

// runTurn runs a turn with content. typed is the prompt as the client
// typed it, which names a conversation that has no title yet; "" for the
// turns arbor starts itself (a loop's, a job's or a handoff's).
func (s *server) runTurn(ctx context.Context, content, typed string) agent.Result {
	res := agent.Result{Outcome: agent.OutcomeCancelled}
	if ctx.Err() != nil {
		return res
	}
	s.cancellable(ctx, func(ctx context.Context, sess *app.Session) {
		if ctx.Err() != nil {
			return // cancelled before it started: the message is not sent
		}
		text, err := s.app.PromptHooks(ctx, sess.ID, s.sessionSource(sess.ID), content)
		if err != nil {
			if ctx.Err() != nil {
				return // a cancel or the end of input killed the hook
			}
			// A prompt the hooks refused (or could not judge) never
			// reaches the agent, whose Error event reports every other
			// failed turn: it is pushed here, as Chord pushes a request
			// its hook blocked.
			res = agent.Result{Outcome: agent.OutcomeFailed, Err: err}
			s.pushError(err.Error())
			return
		}
		s.app.NameConversation(ctx, sess, typed)
		res = sess.Agent.Send(ctx, llm.UserText(text))
		if res.Outcome == agent.OutcomeFailed && ctx.Err() != nil {
			// The cancel interrupted the agent's own bookkeeping (storing
			// the message): the turn is cancelled, not failed.
			res = agent.Result{Outcome: agent.OutcomeCancelled}
		}
	})
	return res
}

// sessionSource is SessionStart's source for the first turn of session
// id in this server, "" after it: Claude Code's, "clear" for the session
// /new opened (its /clear), "resume" for one /resume or --resume opened,
// "startup" for the one arbor started with.
func (s *server) sessionSource(id string) string {
	s.ctl.mu.Lock()
	defer s.ctl.mu.Unlock()
	if s.ctl.started[id] {
		return ""
	}
	if s.ctl.started == nil {
		s.ctl.started = map[string]bool{}
	}
	s.ctl.started[id] = true
	src := cmp.Or(s.ctl.sources[id], "startup")
	delete(s.ctl.sources, id)
	return src
}

// endSession runs the SessionEnd hooks of session id with reason, when
// its SessionStart hooks ran (sessionSource); it is not ended again as
// the process ends (endSessions), and starts again at its next turn.
func (s *server) endSession(ctx context.Context, id, reason string) {
	s.ctl.mu.Lock()
	started := s.ctl.started[id]
	delete(s.ctl.started, id)
	delete(s.ctl.sources, id)
	s.ctl.mu.Unlock()
	if started {
		s.app.EndSession(ctx, id, reason)
	}
}

// endSessions runs the project's SessionEnd hooks of the sessions whose
// SessionStart hooks ran, in no particular order, as the process ends.
func (s *server) endSessions(ctx context.Context) {
	s.ctl.mu.Lock()
	ids := slices.Collect(maps.Keys(s.ctl.started))
	s.ctl.mu.Unlock()
	for _, id := range ids {
		s.app.EndSession(ctx, id, "other")
	}
}

// cancelWork answers the cancel command: it stops every sub-agent, every
// running local_shell command and the running job, or the next job when work is queued but none runs yet. The
// idle that ends the work it stopped reports cancelled; work queued behind
// it runs and reports its own outcome.
func (s *server) cancelWork() {
	c := s.ctl
	c.mu.Lock()
	c.cancelled = s.wire.get().busy
	c.mu.Unlock()
	s.stopShells()
	s.stopTree()
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.active:
		c.jobCancelled = true
		if c.cancel != nil {
			c.cancel()
		}
	case c.queued > 0:
		c.cancelNext = true
	}
}

// finishTurn records a turn's outcome and, when no other work waits,
// pushes idle.
func (s *server) finishTurn(res agent.Result) { s.finishWork(res, false) }

// translate is the bus subscriber: it dispatches the events of the
// current session's tree to the sub-agents' part and turns its agents'
// events into pushes and state changes, on the subscription's own
// goroutine.
func (s *server) translate(e agent.Event) {
	if s.treeEvent(e) {
		return
	}
	session := agent.MetaOf(e).SessionID
	if sub := s.agents.ofSession(session, s.wire.get().sessionID); sub != nil {
		s.translateSub(sub, e)
		return
	}
	if session != s.wire.get().sessionID {
		return
	}
	switch e := e.(type) {
	case *agent.StepStarted:
		s.ctl.mu.Lock()
		s.ctl.ranSinceIdle = true
		s.wire.push(evActivity, activity{AgentID: mainAgent, Type: "preparing", Detail: e.Model}, phase("preparing", e.Model))
		s.ctl.mu.Unlock()
	case *agent.TextDelta:
		s.wire.streamed(mainAgent)
	case *agent.ToolCallStarted:
		s.wire.push(evActivity, activity{AgentID: mainAgent, Type: "executing", Detail: e.Tool}, phase("executing", e.Tool))
	case *agent.ToolCallFinished:
		// A tool may have started or killed a background job.
		s.ctl.mu.Lock()
		s.syncJobsLocked()
		s.ctl.mu.Unlock()
		for _, b := range e.Blocked {
			s.wire.push(evToast, toast{AgentID: mainAgent, Message: b, Level: "warn"}, nil)
		}
	case *agent.AssistantMessage:
		s.wire.committed(mainAgent, assistantPayload(e.Message))
	case *agent.InteractionRequested:
		s.requested(e.Interaction, mainAgent)
	case *agent.InteractionResolved:
		s.resolved(e)
	case *agent.CompactionStarted, *agent.CompactionFinished, *agent.ContextPressure:
		s.compactionEvent(e)
	case *agent.Error:
		s.pushError(e.Message)
	case *agent.HookMessage:
		s.wire.push(evInfo, infoPayload{AgentID: mainAgent, Message: e.Text}, nil)
	}
}

// pushError reports a failure of the main agent's turn: an error push,
// and last_error.
func (s *server) pushError(msg string) {
	s.ctl.mu.Lock()
	defer s.ctl.mu.Unlock()
	// A cancelled job's failure is the cancel's doing (finishWork reports
	// it cancelled): its internal text reaches no client.
	if !s.ctl.jobCancelled {
		s.wire.push(evError, errorPayload{AgentID: mainAgent, Message: msg}, func(st *state) { st.lastError = msg })
	}
}

// translateSub turns a sub-agent's events into pushes; they leave the
// main agent's phase alone.
func (s *server) translateSub(a *subAgent, e agent.Event) {
	switch e := e.(type) {
	case *agent.StepStarted:
		s.ctl.mu.Lock()
		s.ctl.ranSinceIdle = true
		s.wire.push(evActivity, activity{AgentID: a.agentID, Type: "preparing", Detail: e.Model}, nil)
		s.ctl.mu.Unlock()
	case *agent.ToolCallStarted:
		s.wire.push(evActivity, activity{AgentID: a.agentID, Type: "executing", Detail: e.Tool}, nil)
	case *agent.TextDelta:
		s.wire.streamed(a.agentID)
	case *agent.AssistantMessage:
		p := assistantPayload(e.Message)
		p.AgentID, p.TaskID, p.AgentType = a.agentID, a.taskID, a.agentType
		p.ParentAgentID, _ = s.agents.parent(a.parent)
		s.wire.committed(a.agentID, p)
	case *agent.InteractionRequested:
		s.requested(e.Interaction, a.agentID)
	case *agent.InteractionResolved:
		s.resolved(e)
	case *agent.Error:
		// A node the tree retries may fail alike: one error is enough.
		if s.agents.newError(a.taskID, e.Message) {
			s.wire.push(evError, errorPayload{AgentID: a.agentID, Message: e.Message}, nil)
		}
	case *agent.HookMessage:
		s.wire.push(evInfo, infoPayload{AgentID: a.agentID, Message: e.Text}, nil)
	}
}

func assistantPayload(m llm.Message) assistantMessage {
	p := assistantMessage{ToolCallDetails: []toolCall{}}
	var text strings.Builder
	for _, part := range m.Parts {
		switch part.Type {
		case llm.PartText:
			text.WriteString(part.Text)
		case llm.PartToolCall:
			p.ToolCallDetails = append(p.ToolCallDetails, toolCall{ID: part.ToolCall.ID, Name: part.ToolCall.Name, Args: part.ToolCall.Input})
		}
	}
	p.Text, p.ToolCalls = text.String(), len(p.ToolCallDetails)
	return p
}

// ruleScopes maps the protocol's rule scopes to tool.Approval's.
var ruleScopes = map[string]string{"session": "session", "project": "project", "user_global": "user"}

// confirm answers a pending confirm_request.
func (s *server) confirm(c confirmCmd) error {
	if !s.ix.isPending(c.RequestID, true) {
		return fmt.Errorf("%w: %q", errUnknownRequest, c.RequestID)
	}
	var ap tool.Approval
	switch c.Action {
	case "allow", "allow_once":
		ap.Allow = true
	case "deny":
		ap.Message = c.DenyReason
	default:
		return fmt.Errorf("%w: action %q (want allow, allow_once or deny)", errBadCommand, c.Action)
	}
	if c.FinalArgsJSON != "" && ap.Allow {
		if !json.Valid([]byte(c.FinalArgsJSON)) {
			return fmt.Errorf("%w: final_args_json is not valid JSON", errBadCommand)
		}
		ap.UpdatedInput = json.RawMessage(c.FinalArgsJSON)
	}
	if c.RuleScope != "" || c.RulePattern != "" {
		scope, ok := ruleScopes[c.RuleScope]
		if !ok {
			return fmt.Errorf("%w: rule_scope %q (want session, project or user_global)", errBadCommand, c.RuleScope)
		}
		ap.RememberScope, ap.RulePattern = scope, rulePattern(c.RulePattern)
	}
	return s.resolve(c.RequestID, agent.Response{Approval: &ap})
}

// rulePattern turns a confirm's rule_pattern into arbor's rule form: the
// spec's "tool:regex" becomes "tool(re:regex)"; arbor's own "tool(glob)"
// and a bare glob about the tool ("git status*") pass unchanged.
func rulePattern(p string) string {
	if r, err := permission.ParseRule(p, permission.Allow, permission.ScopeSession); err == nil {
		return r.String()
	}
	return p
}

// question answers a pending question_request.
func (s *server) question(c questionCmd) error {
	var ans tool.Answer
	switch c.Reason {
	case reasonAnswered:
		ans.Text = strings.Join(c.Answers, ", ")
	case reasonDeclined:
		ans.Declined = true
	default:
		return fmt.Errorf("%w: reason %q (want answered or declined)", errBadCommand, c.Reason)
	}
	if !s.ix.isPending(c.RequestID, false) {
		return fmt.Errorf("%w: %q", errUnknownRequest, c.RequestID)
	}
	return s.resolve(c.RequestID, agent.Response{Answer: &ans})
}
