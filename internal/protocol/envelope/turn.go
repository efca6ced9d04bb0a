package envelope

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/tool"
)

// mainAgent is the agent_id of the session's one agent.
const mainAgent = "main"

// Closing reasons of questions, as question_resolved reports them.
const (
	reasonAnswered   = "answered"
	reasonDeclined   = "declined"
	reasonSuperseded = "superseded"
	reasonNoResponse = "no_response"
	reasonCancelled  = "cancelled"
)

// send runs a slash command, or closes the pending interactions and
// queues content as a turn.
func (s *server) send(c sendCmd) error {
	text := strings.TrimSpace(c.Content)
	if text == "" {
		return fmt.Errorf("%w: content is empty", errBadCommand)
	}
	if strings.HasPrefix(text, "/") {
		if err := s.slash(text); err != nil {
			return &slashError{err: err}
		}
		return nil
	}
	s.mu.Lock()
	// Queue the turn and count it before the pending requests are closed,
	// so the turn they belong to cannot report idle in between (the job
	// cannot start before s.mu is released).
	if err := s.submit("turn", func(ctx context.Context) { s.finishTurn(s.runTurn(ctx, c.Content)) }); err != nil {
		s.mu.Unlock()
		return err
	}
	s.queued++
	s.mutateLocked(func(st *state) { st.busy = true })
	s.cancelHandoffLocked()
	s.payIdleLocked() // the new turn ends with its own idle
	var confirms, questions []string
	for _, p := range s.st.confirms {
		confirms = append(confirms, p.RequestID)
	}
	for _, p := range s.st.questions {
		questions = append(questions, p.RequestID)
		s.closing[p.RequestID] = reasonSuperseded
	}
	s.mu.Unlock()
	// A request resolved meanwhile is simply gone.
	for _, id := range confirms {
		_ = s.app.Broker.Resolve(id, agent.Response{Approval: &tool.Approval{}})
	}
	for _, id := range questions {
		if err := s.app.Broker.Resolve(id, agent.Response{Answer: &tool.Answer{Declined: true}}); err != nil {
			s.mu.Lock()
			delete(s.closing, id)
			s.mu.Unlock()
		}
	}
	return nil
}

// cancellable runs fn with a context the cancel command cancels.
func (s *server) cancellable(ctx context.Context, fn func(ctx context.Context, sess *app.Session)) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.mu.Lock()
	s.cancel = cancel
	sess := s.sess
	s.mu.Unlock()
	fn(ctx, sess)
	s.mu.Lock()
	s.cancel = nil
	s.mu.Unlock()
}

func (s *server) runTurn(ctx context.Context, content string) agent.Result {
	res := agent.Result{Outcome: agent.OutcomeCancelled}
	if ctx.Err() != nil {
		return res
	}
	s.cancellable(ctx, func(ctx context.Context, sess *app.Session) {
		res = sess.Agent.Send(ctx, llm.UserText(content))
	})
	return res
}

// finishTurn records a turn's outcome and, when no other work waits,
// pushes idle.
func (s *server) finishTurn(res agent.Result) { s.finishWork(res, false) }

// translate is the bus subscriber: it turns the session's agent events
// into pushes and state changes, on the subscription's own goroutine.
func (s *server) translate(e agent.Event) {
	if s.treeEvent(e) {
		return
	}
	session := agent.MetaOf(e).SessionID
	s.mu.Lock()
	mine := session == s.st.sessionID
	sub := s.subAgentOfLocked(session)
	trigger := "usage_driven"
	if s.manualCompact {
		trigger = "manual"
	}
	s.mu.Unlock()
	if sub != nil {
		s.translateSub(sub, e)
		return
	}
	if !mine {
		return
	}
	switch e := e.(type) {
	case *agent.StepStarted:
		s.mu.Lock()
		s.ranSinceIdle = true
		s.pushLocked(evActivity, activity{AgentID: mainAgent, Type: "preparing", Detail: e.Model}, phase("preparing", e.Model))
		s.mu.Unlock()
	case *agent.TextDelta:
		s.mu.Lock()
		s.partial[mainAgent] = true
		if s.st.phase != "streaming" {
			s.pushLocked(evActivity, activity{AgentID: mainAgent, Type: "streaming"}, phase("streaming", ""))
		}
		s.mu.Unlock()
	case *agent.ToolCallStarted:
		s.push(evActivity, activity{AgentID: mainAgent, Type: "executing", Detail: e.Tool}, phase("executing", e.Tool))
	case *agent.ToolCallFinished:
		// A tool may have started or killed a background job.
		s.mu.Lock()
		s.syncJobsLocked()
		s.mu.Unlock()
	case *agent.AssistantMessage:
		s.mu.Lock()
		delete(s.partial, mainAgent)
		s.pushLocked(evAssistantMessage, assistantPayload(e.Message), nil)
		s.mu.Unlock()
	case *agent.InteractionRequested:
		s.requested(e.Interaction, mainAgent)
	case *agent.InteractionResolved:
		s.resolved(e)
	case *agent.CompactionStarted:
		s.mu.Lock()
		s.compactions++
		s.plan = planID(e.Seq) // the terminal status names the same plan
		s.pushLocked(evActivity, activity{AgentID: mainAgent, Type: "compacting"}, phase("compacting", ""))
		s.pushLocked(evCompactionStatus, compactionStatus{Status: "started", Trigger: trigger, PlanID: s.plan}, nil)
		s.mu.Unlock()
	case *agent.CompactionFinished:
		s.mu.Lock()
		c := compactionStatus{Status: "succeeded", Trigger: trigger, Reason: e.Err, PlanID: s.plan}
		if e.Err != "" {
			c.Status = "failed"
		}
		s.pushLocked(evCompactionStatus, c, phase("", ""))
		s.mu.Unlock()
	case *agent.ContextPressure:
		s.mu.Lock()
		n := s.notices
		s.notices++
		s.pushLocked(evContextNotice, contextNotice{SessionID: e.SessionID, Level: "warn", MessageIndex: n,
			Message: fmt.Sprintf("the context holds about %d tokens of the model's %d: older turns will soon be summarized", e.EstimatedTokens, e.Window)}, nil)
		s.mu.Unlock()
	case *agent.Error:
		s.push(evError, errorPayload{AgentID: mainAgent, Message: e.Message}, func(st *state) { st.lastError = e.Message })
	}
}

func phase(p, detail string) func(*state) {
	return func(st *state) { st.phase, st.phaseDetail = p, detail }
}

// planID names a compaction by the bus seq of the event that reports it.
func planID(seq uint64) string { return fmt.Sprintf("compaction-%d", seq) }

// translateSub turns a sub-agent's events into pushes; they leave the
// main agent's phase alone.
func (s *server) translateSub(a *subAgent, e agent.Event) {
	switch e := e.(type) {
	case *agent.StepStarted:
		s.mu.Lock()
		s.ranSinceIdle = true
		s.pushLocked(evActivity, activity{AgentID: a.agentID, Type: "preparing", Detail: e.Model}, nil)
		s.mu.Unlock()
	case *agent.ToolCallStarted:
		s.push(evActivity, activity{AgentID: a.agentID, Type: "executing", Detail: e.Tool}, nil)
	case *agent.TextDelta:
		s.mu.Lock()
		s.partial[a.agentID] = true
		s.mu.Unlock()
	case *agent.AssistantMessage:
		p := assistantPayload(e.Message)
		s.mu.Lock()
		delete(s.partial, a.agentID)
		p.AgentID, p.TaskID, p.AgentType = a.agentID, a.taskID, a.agentType
		p.ParentAgentID, _ = s.parentLocked(a.parent)
		s.pushLocked(evAssistantMessage, p, nil)
		s.mu.Unlock()
	case *agent.InteractionRequested:
		s.requested(e.Interaction, a.agentID)
	case *agent.InteractionResolved:
		s.resolved(e)
	case *agent.Error:
		s.push(evError, errorPayload{AgentID: a.agentID, Message: e.Message}, nil)
	}
}

func assistantPayload(m llm.Message) assistantMessage {
	p := assistantMessage{AgentID: mainAgent, ToolCalls: []toolCall{}}
	var text strings.Builder
	for _, part := range m.Parts {
		switch part.Type {
		case llm.PartText:
			text.WriteString(part.Text)
		case llm.PartToolCall:
			p.ToolCalls = append(p.ToolCalls, toolCall{ID: part.ToolCall.ID, Name: part.ToolCall.Name, Args: part.ToolCall.Input})
		}
	}
	p.Text = text.String()
	return p
}

// requested publishes a broker interaction of agent agentID as a client
// request.
func (s *server) requested(in agent.Interaction, agentID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case in.Kind == agent.KindApproval && in.Approval != nil:
		a := in.Approval
		req := &confirmRequest{RequestID: in.ID, AgentID: agentID, ToolName: a.Tool, ArgsJSON: string(a.Input),
			NeedsApproval: true, NeedsApprovalRules: []string{}, AlreadyAllowedRules: []string{}}
		if !in.Deadline.IsZero() {
			req.TimeoutMS = in.Deadline.Sub(in.Created).Milliseconds()
		}
		s.pushLocked(evConfirmRequest, req, func(st *state) {
			st.confirms = append(st.confirms, req)
			st.phase, st.phaseDetail = "waiting_confirm", a.Tool
		})
		s.pushLocked(evNotification, notification{Reason: "user_input_required", Message: "Approval needed for " + a.Tool}, nil)
	case in.Kind == agent.KindQuestion && in.Question != nil:
		q := in.Question
		name := "ask_user"
		if q.AskNode != 0 {
			name = "ask"
		}
		req := &questionRequest{RequestID: in.ID, AgentID: agentID, ToolName: name, Question: q.Question,
			Options: q.Options, OptionDetails: []optionDetail{}, Multiple: q.MultiSelect}
		if req.Options == nil {
			req.Options = []string{}
		}
		if !in.Deadline.IsZero() {
			d := in.Deadline.UTC()
			req.Deadline = &d
		}
		s.pushLocked(evQuestionRequest, req, func(st *state) {
			st.questions = append(st.questions, req)
			st.phase, st.phaseDetail = "waiting_question", ""
		})
		s.pushLocked(evNotification, notification{Reason: "user_input_required", Message: "Question: " + q.Question}, nil)
	}
}

// resolved drops a closed interaction from the state.
func (s *server) resolved(e *agent.InteractionResolved) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e.Kind == agent.KindApproval {
		s.mutateLocked(func(st *state) {
			st.confirms = slices.DeleteFunc(st.confirms, func(c *confirmRequest) bool { return c.RequestID == e.ID })
		})
		return
	}
	reason, ok := s.closing[e.ID]
	delete(s.closing, e.ID)
	if !ok {
		switch {
		case e.Resolution == "timeout":
			reason = reasonNoResponse
		case e.Resolution == "cancelled":
			reason = reasonCancelled
		case e.Response.Answer != nil && e.Response.Answer.Declined:
			reason = reasonDeclined
		default:
			reason = reasonAnswered
		}
	}
	s.pushLocked(evQuestionResolved, questionResolved{RequestID: e.ID, Reason: reason}, func(st *state) {
		st.questions = slices.DeleteFunc(st.questions, func(q *questionRequest) bool { return q.RequestID == e.ID })
	})
}

// ruleScopes maps the protocol's rule scopes to tool.Approval's.
var ruleScopes = map[string]string{"session": "session", "project": "project", "user_global": "user"}

// confirm answers a pending confirm_request.
func (s *server) confirm(c confirmCmd) error {
	if !s.isPending(c.RequestID, true) {
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
		ap.RememberScope, ap.RulePattern = scope, c.RulePattern
	}
	return s.resolve(c.RequestID, agent.Response{Approval: &ap})
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
	if !s.isPending(c.RequestID, false) {
		return fmt.Errorf("%w: %q", errUnknownRequest, c.RequestID)
	}
	return s.resolve(c.RequestID, agent.Response{Answer: &ans})
}

func (s *server) resolve(id string, r agent.Response) error {
	err := s.app.Broker.Resolve(id, r)
	if errors.Is(err, agent.ErrUnknownInteraction) {
		return fmt.Errorf("%w: %q", errUnknownRequest, id)
	}
	return err
}

// isPending reports whether id is a pending confirm (or question).
func (s *server) isPending(id string, confirm bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if confirm {
		return slices.ContainsFunc(s.st.confirms, func(c *confirmRequest) bool { return c.RequestID == id })
	}
	return slices.ContainsFunc(s.st.questions, func(q *questionRequest) bool { return q.RequestID == id })
}
