package envelope

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/tool"
)

// Handoff: the planner hands a plan to the builder.
//
// Every session the server opens lists a handoff tool, but it is inert
// (an error result) unless the current role is planner. Called by the
// planner it saves the plan under .arbor/plans, publishes one pending
// handoff_request (status_response.pending_handoff) and ends the turn.
// The handoff command resolves it: accept runs the plan in a new builder
// session (session_switched first), deny appends the reason to the
// planner's conversation and runs a turn, cancel just closes it. A send
// of content, a session switch or a newer handoff drops a pending one
// with handoff_cancelled (reason superseded). At most one handoff is
// pending; every change of it is a state mutation.

// handoffAgent is the one execution target arbor offers.
const handoffAgent = roleBuilder

type handoffArgs struct {
	Plan string `json:"plan" jsonschema:"description=The complete plan, in Markdown, for the builder to execute"`
}

type handoffAgentEntry struct {
	Name             string   `json:"name"`
	Default          bool     `json:"default"`
	ModelPools       []string `json:"model_pools"`
	CurrentModelPool string   `json:"current_model_pool"`
}

type handoffRequest struct {
	RequestID string              `json:"request_id"`
	PlanPath  string              `json:"plan_path"`
	PlanText  string              `json:"plan_text"`
	PlanError string              `json:"plan_error"`
	Agents    []handoffAgentEntry `json:"agents"`
}

type handoffCancelled struct {
	RequestID string `json:"request_id"`
	Reason    string `json:"reason"`
}

type handoffCmd struct {
	RequestID  string `json:"request_id"`
	Action     string `json:"action"`
	Agent      string `json:"agent"`
	Pool       string `json:"pool"`
	DenyReason string `json:"deny_reason"`
}

// handoffTool is the handoff tool of the sessions the server opens.
func (s *server) handoffTool() tool.Tool {
	return tool.New("handoff", "Hand a finished plan to the builder for the user's approval. Only available to the planner role; it ends your turn.",
		tool.KindInteract, func(_ context.Context, _ tool.Call, a handoffArgs) tool.Result { return s.requestHandoff(a) })
}

// requestHandoff runs the handoff tool: it saves the plan and publishes
// the pending handoff.
func (s *server) requestHandoff(a handoffArgs) tool.Result {
	if strings.TrimSpace(a.Plan) == "" {
		return tool.Errorf("plan is required")
	}
	st := s.wire.get()
	if st.role != rolePlanner {
		return tool.Errorf("handoff is only available to the planner role")
	}
	s.ctl.mu.Lock()
	pool := s.ctl.pool
	s.ctl.mu.Unlock()
	s.ix.mu.Lock()
	s.ix.handoffs++
	n := s.ix.handoffs
	s.ix.mu.Unlock()
	sessID := st.sessionID

	req := &handoffRequest{RequestID: fmt.Sprintf("handoff-%d", n), PlanText: a.Plan,
		PlanPath: filepath.Join(s.ws().Workspace, ".arbor", "plans", fmt.Sprintf("%s-%d.md", sessID, n)),
		Agents:   []handoffAgentEntry{{Name: handoffAgent, Default: true, ModelPools: s.poolNames(), CurrentModelPool: pool}}}
	if err := writePlan(req.PlanPath, a.Plan); err != nil {
		req.PlanError = err.Error()
	}
	s.events.Flush() // after the assistant_message that called the tool
	s.ix.mu.Lock()
	defer s.ix.mu.Unlock()
	s.cancelHandoffLocked()
	s.ix.handoff = req
	s.wire.push(evHandoffRequest, req, func(*state) {})
	s.wire.push(evNotification, notification{Reason: "user_input_required", Message: "Plan ready for approval: " + req.PlanPath}, nil)
	return tool.Result{Content: "handoff requested; waiting for the user's decision", EndTurn: true}
}

func writePlan(path, plan string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("save plan: %w", err)
	}
	if err := os.WriteFile(path, []byte(plan), 0o644); err != nil {
		return fmt.Errorf("save plan: %w", err)
	}
	return nil
}

// poolNames lists the configured model pools by name, never nil.
func (s *server) poolNames() []string {
	names := make([]string, 0, len(s.app.Config().Pools))
	for name := range s.app.Config().Pools {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// cancelHandoff drops the pending handoff, if any, with
// handoff_cancelled.
func (s *server) cancelHandoff() {
	s.ix.mu.Lock()
	defer s.ix.mu.Unlock()
	s.cancelHandoffLocked()
}

// cancelHandoffLocked is cancelHandoff with ix.mu held.
func (s *server) cancelHandoffLocked() {
	if s.ix.handoff == nil {
		return
	}
	p := handoffCancelled{RequestID: s.ix.handoff.RequestID, Reason: reasonSuperseded}
	s.ix.handoff = nil
	s.wire.push(evHandoffCancelled, p, func(*state) {})
}

// handoff answers the handoff command. A stale or unknown request id, a
// bad action, agent or pool changes nothing.
func (s *server) handoff(c handoffCmd) error {
	var deny bool
	switch c.Action {
	case "accept", "allow", "":
	case "deny", "reject":
		deny = true
	case "cancel":
	default:
		return fmt.Errorf("%w: action %q (want accept, deny or cancel)", errBadCommand, c.Action)
	}
	if c.Agent != "" && c.Agent != handoffAgent {
		return fmt.Errorf("%w: unknown agent %q (want %s)", errBadCommand, c.Agent, handoffAgent)
	}
	if c.Pool != "" {
		if _, err := s.app.Config().Pool(c.Pool); err != nil {
			return fmt.Errorf("%w: %w", errBadCommand, err)
		}
	}
	s.ctl.mu.Lock()
	defer s.ctl.mu.Unlock()
	s.ix.mu.Lock()
	req := s.ix.handoff
	if req == nil || req.RequestID != c.RequestID {
		s.ix.mu.Unlock()
		return fmt.Errorf("%w: %q", errUnknownRequest, c.RequestID)
	}
	if c.Action == "cancel" {
		s.ix.handoff = nil
		s.wire.mutate(func(*state) {})
		s.ix.mu.Unlock()
		s.payIdleLocked()
		return nil
	}
	var err error
	if deny {
		text := "The user rejected the plan: " + c.DenyReason
		err = s.submit("turn", func(ctx context.Context) { s.finishTurn(s.runTurn(ctx, text, "")) })
	} else {
		text := fmt.Sprintf("Execute this plan (saved at %s):\n\n%s", req.PlanPath, req.PlanText)
		err = s.submit("switch", func(ctx context.Context) { s.executePlan(ctx, c.Pool, text) })
	}
	if err != nil {
		s.ix.mu.Unlock()
		return err // the handoff stays pending
	}
	s.ctl.queued++
	s.ix.handoff = nil
	s.wire.mutate(func(st *state) { st.busy = true })
	s.ix.mu.Unlock()
	return nil
}

// executePlan runs an accepted plan on the runner: the optional
// pool switch, then a new builder session and its first turn.
func (s *server) executePlan(ctx context.Context, pool, text string) {
	if pool != "" {
		if r := s.setPool(pool); !r.OK {
			s.wire.write(typeModelsResponse, 0, r)
		}
	}
	rf, err := s.loadRole(roleBuilder)
	if err == nil {
		err = roleRules(s.ws(), roleBuilder)
	}
	if err != nil {
		s.finishTurn(agent.Result{Outcome: agent.OutcomeFailed, Err: err})
		return
	}
	s.ctl.mu.Lock()
	s.ctl.roleSystem = rf.System
	if s.wire.get().role != roleBuilder {
		s.wire.push(evRoleChange, roleChange{Role: roleBuilder}, func(st *state) { st.role = roleBuilder })
	}
	s.ctl.mu.Unlock()
	if err := s.switchSession(ctx, ""); err != nil {
		s.finishTurn(agent.Result{Outcome: agent.OutcomeFailed, Err: err})
		return
	}
	s.finishTurn(s.runTurn(ctx, text, ""))
}
