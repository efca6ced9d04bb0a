package tree

import (
	"fmt"

	"github.com/arbor-run/arbor/internal/agent"
)

// Interactions of a run.
//
// The broker holds every pending interaction of a process under one id
// space; a front end that steers one run (the owner socket serving
// `arbor serve` for a run driven here) sees and resolves only that run's:
// the questions of its ask nodes, whose session is the run, and the
// approvals and questions of its nodes' agents.

// Pending returns the pending interactions of run runID, which this
// engine must be driving (else ErrNotDriven), oldest first.
func (e *Engine) Pending(runID string) ([]agent.Interaction, error) {
	sessions, err := e.Sessions(runID)
	if err != nil {
		return nil, err
	}
	var out []agent.Interaction
	for _, in := range e.o.Broker.Pending() {
		if _, ok := sessions[in.SessionID]; ok || in.SessionID == runID {
			out = append(out, in)
		}
	}
	return out, nil
}

// Resolve resolves pending interaction iid of run runID with resp,
// through the broker as any in-process front end does. An id that is not
// one of the run's pending interactions fails with
// agent.ErrUnknownInteraction, a response of the wrong kind with
// agent.ErrWrongResponse; either way nothing changes.
func (e *Engine) Resolve(runID, iid string, resp agent.Response) error {
	pending, err := e.Pending(runID)
	if err != nil {
		return err
	}
	for _, in := range pending {
		if in.ID == iid {
			return e.o.Broker.Resolve(iid, resp)
		}
	}
	return fmt.Errorf("resolve %q of run %s: %w", iid, runID, agent.ErrUnknownInteraction)
}

// Sessions returns the agent sessions of run runID's nodes (session id →
// node id) as they are now; the run must be driven here (else
// ErrNotDriven). Later sessions are announced by NodeChanged and
// AgentStarted.
func (e *Engine) Sessions(runID string) (map[string]int64, error) {
	v, ok := e.live.Load(runID)
	if !ok {
		return nil, fmt.Errorf("run %s: %w", runID, ErrNotDriven)
	}
	r := v.(*run)
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int64, len(r.nodes))
	for id, n := range r.nodes {
		if n.SessionID != "" {
			out[n.SessionID] = id
		}
	}
	return out, nil
}
