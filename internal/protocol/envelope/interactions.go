package envelope

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/arbor-run/arbor/internal/agent"
)

// interactions are the client requests pending: the confirms and
// questions the broker publishes (of the main agent and the sub-agents)
// and the planner's handoff. Every change of them is a state mutation,
// taken under mu (then wire.mu), so status reports them consistently.
type interactions struct {
	mu        sync.Mutex         // guards the fields below
	confirms  []*confirmRequest  // pending, oldest first
	questions []*questionRequest // pending, oldest first
	handoff   *handoffRequest    // the pending handoff_request, nil when none (handoff.go)
	closing   map[string]string  // question id → the reason arbor closes it with
	handoffs  int                // handoffs requested; it numbers their ids
}

// requested publishes a broker interaction of agent agentID as a client
// request.
func (s *server) requested(in agent.Interaction, agentID string) {
	s.ix.mu.Lock()
	defer s.ix.mu.Unlock()
	switch {
	case in.Kind == agent.KindApproval && in.Approval != nil:
		a := in.Approval
		rule := a.SuggestedRule
		if rule == "" {
			rule = a.Tool // what remembering installs without a pattern
		}
		needs := []string{}
		if a.Target.Command != "" {
			needs = append(needs, a.Target.Command)
		}
		needs = append(needs, a.Target.Paths...)
		req := &confirmRequest{RequestID: in.ID, AgentID: agentID, ToolName: a.Tool, ArgsJSON: string(a.Input),
			NeedsApproval: needs, AlreadyAllowed: []string{}, NeedsApprovalRules: []string{rule}, AlreadyAllowedRules: []string{}}
		if !in.Deadline.IsZero() {
			req.TimeoutMS = in.Deadline.Sub(in.Created).Milliseconds()
		}
		s.ix.confirms = append(s.ix.confirms, req)
		s.wire.push(evConfirmRequest, req, phase("waiting_confirm", a.Tool))
		s.wire.push(evNotification, notification{Reason: "user_input_required", Message: "Approval needed for " + a.Tool}, nil)
	case in.Kind == agent.KindQuestion && in.Question != nil:
		q := in.Question
		name := "ask_user"
		if q.AskNode != 0 {
			name = "ask"
		}
		req := &questionRequest{RequestID: in.ID, AgentID: agentID, ToolName: name, Header: q.Header,
			Question: q.Question, Options: q.Options, OptionDetails: q.OptionDetails, Multiple: q.MultiSelect}
		if req.Options == nil {
			req.Options = []string{}
		}
		if req.OptionDetails == nil {
			req.OptionDetails = []string{}
		}
		if !in.Deadline.IsZero() {
			d := in.Deadline.UTC()
			req.Deadline = &d
		}
		s.ix.questions = append(s.ix.questions, req)
		s.wire.push(evQuestionRequest, req, phase("waiting_question", ""))
		s.wire.push(evNotification, notification{Reason: "user_input_required", Message: "Question: " + q.Question}, nil)
	}
}

// resolved drops a closed interaction from the state.
func (s *server) resolved(e *agent.InteractionResolved) {
	s.ix.mu.Lock()
	defer s.ix.mu.Unlock()
	if e.Kind == agent.KindApproval {
		s.ix.confirms = slices.DeleteFunc(s.ix.confirms, func(c *confirmRequest) bool { return c.RequestID == e.ID })
		s.wire.mutate(func(*state) {})
		return
	}
	reason, ok := s.ix.closing[e.ID]
	delete(s.ix.closing, e.ID)
	if !ok {
		switch {
		case e.Resolution == "timeout":
			reason = reasonNoResponse
		case e.Resolution == "cancelled":
			reason = reasonCancelled
		case e.Resolution == "error":
			reason = reasonError
		case e.Response.Answer != nil && e.Response.Answer.Declined:
			reason = reasonDeclined
		default:
			reason = reasonAnswered
		}
	}
	s.ix.questions = slices.DeleteFunc(s.ix.questions, func(q *questionRequest) bool { return q.RequestID == e.ID })
	s.wire.push(evQuestionResolved, questionResolved{RequestID: e.ID, Reason: reason}, func(*state) {})
}

// supersede lists the pending confirms and questions, which a send of
// content closes, and marks the questions closed as superseded.
func (ix *interactions) supersede() (confirms, questions []string) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	for _, p := range ix.confirms {
		confirms = append(confirms, p.RequestID)
	}
	for _, p := range ix.questions {
		questions = append(questions, p.RequestID)
		ix.closing[p.RequestID] = reasonSuperseded
	}
	return confirms, questions
}

// unclose forgets the reason of a question that was gone before arbor
// could close it.
func (ix *interactions) unclose(id string) {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	delete(ix.closing, id)
}

// resolve answers a pending interaction through the broker.
func (s *server) resolve(id string, r agent.Response) error {
	err := s.app.Broker.Resolve(id, r)
	if errors.Is(err, agent.ErrUnknownInteraction) {
		return fmt.Errorf("%w: %q", errUnknownRequest, id)
	}
	return err
}

// isPending reports whether id is a pending confirm (or question).
func (ix *interactions) isPending(id string, confirm bool) bool {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if confirm {
		return slices.ContainsFunc(ix.confirms, func(c *confirmRequest) bool { return c.RequestID == id })
	}
	return slices.ContainsFunc(ix.questions, func(q *questionRequest) bool { return q.RequestID == id })
}

// pendingHandoff returns the pending handoff, nil when none.
func (ix *interactions) pendingHandoff() *handoffRequest {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	return ix.handoff
}
