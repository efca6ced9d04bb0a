package tree

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/store"
)

// External runners.
//
// A node may be run by an external agent CLI (Claude Code) instead of
// arbor's own loop: spawn's and fork's runner argument names it. The
// engine hands each of the node's turns to the Runner of that name; the
// external agent works the tree through `arbor mcp --run RUN --node N`
// (the node's own tree tools, forwarded to this process), its tool
// permissions are decided by arbor, and its spend is charged to the node
// through AgentSpec.Charge.

// RunnerArbor names arbor's own agent loop.
const RunnerArbor = "arbor"

// Runner runs node turns in an external agent process.
type Runner interface {
	// RunTurn runs one turn of a node: it gives Message to the node's
	// external agent — a new session on the node's first turn, the same
	// session when Resume is set — and returns when the agent ends its
	// turn. When ctx is done it interrupts the agent, ends its process
	// and returns an OutcomeCancelled result.
	RunTurn(ctx context.Context, t ExternalTurn) agent.Result
}

// ExternalTurn is one turn of a node run by an external agent.
type ExternalTurn struct {
	// Spec is the node's agent spec (no tree tools: the external agent
	// reaches them through arbor mcp).
	Spec    AgentSpec
	Runner  string
	Message string
	// Resume continues the node's external session (a synthesis or a
	// notice) instead of starting one.
	Resume bool
}

// childRunner is the runner of a new child: the one named, else the
// configured default; "" stands for arbor's own loop.
func (r *run) childRunner(name string) (string, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		name = r.e.o.DefaultRunner
	}
	if name == "" || name == RunnerArbor {
		return "", nil
	}
	if _, ok := r.e.o.Runners[name]; ok {
		return name, nil
	}
	names := []string{RunnerArbor}
	for n := range r.e.o.Runners {
		names = append(names, n)
	}
	slices.Sort(names[1:])
	return "", fmt.Errorf("runner: %q is not available; the choices are: %s", name, strings.Join(names, ", "))
}

// runExternal runs one turn of node n, whose runner is external.
func (r *run) runExternal(ctx context.Context, id int64, n store.Node) {
	rn := r.e.o.Runners[n.Runner]
	if rn == nil {
		r.endTurn(ctx, id, agent.Result{Outcome: agent.OutcomeFailed,
			Err: fmt.Errorf("runner %q is not available in this process", n.Runner)})
		return
	}
	if n.SessionID == "" {
		n.SessionID = sessionID(r.id, id)
	}
	spec := AgentSpec{
		RunID: r.id, NodeID: id, SessionID: n.SessionID, Model: n.Model,
		Title: fmt.Sprintf("#%d %s", id, n.Goal), Gate: r.gateFor(id), Charge: r.chargeFor(id),
	}
	// A turn starts only while the budgets allow any spend at all.
	if err := spec.Gate(ctx, llm.Usage{}, 0); err != nil {
		r.endTurn(ctx, id, agent.Result{Outcome: agent.OutcomeFailed, Err: err})
		return
	}
	t := ExternalTurn{Spec: spec, Runner: n.Runner}
	switch {
	case n.HasDraft: // complete was called (through arbor mcp) before a crash
		r.endTurn(ctx, id, agent.Result{Outcome: agent.OutcomeCompleted, EndedByTool: true})
		return
	case n.Notice != "":
		t.Message, t.Resume = n.Notice, true
	default:
		prompt, err := r.firstPrompt(ctx, id, n)
		if err != nil {
			r.endTurn(ctx, id, agent.Result{Outcome: agent.OutcomeFailed, Err: err})
			return
		}
		t.Message = prompt
		r.mu.Lock()
		v := view(*r.nodes[id])
		r.mu.Unlock()
		r.e.o.Bus.Publish(&AgentStarted{RunID: r.id, Node: v})
	}
	r.endTurn(ctx, id, rn.RunTurn(ctx, t))
}
