package tree

import (
	"context"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/store"
)

// Remote turns.
//
// An engine with Options.Remote set runs the turns of arbor's own loop in
// other processes: a cluster's node workers (internal/cluster). The
// engine keeps the run — scheduling, budgets, the tree tools, approvals —
// and hands each turn to Remote, whose worker runs the one agent loop on
// the node's stored session with the turn's tools, gate, charge and flush
// forwarded back to this engine (RemoteTurn), then runs Turn.

// Remote runs node turns of arbor's own loop in another process.
type Remote interface {
	// RunTurn runs turn t elsewhere and returns its result once the turn
	// has ended there. When ctx is done it cancels the turn and returns an
	// OutcomeCancelled result.
	RunTurn(ctx context.Context, t RemoteTurn) agent.Result
}

// RemoteTurn is one turn handed to a Remote: the node's agent spec, whose
// Tools are its tree tools (deferred: they are written on Flush), and
// the input Turn goes on from.
type RemoteTurn struct {
	Spec  AgentSpec
	Input TurnInput
	// Attempt is the node's attempt the turn belongs to.
	Attempt int
}

// runRemote runs one turn of node n through the engine's Remote.
func (r *run) runRemote(ctx context.Context, id int64, n store.Node, fresh bool) {
	r.mu.Lock()
	started := r.remote[id] || r.agents[id] != nil
	r.remote[id] = true
	// A turn run here before built an agent whose transcript this turn
	// extends elsewhere: the next turn run here loads it again.
	delete(r.agents, id)
	v := view(*r.nodes[id])
	r.mu.Unlock()
	if !started {
		r.e.o.Bus.Publish(&AgentStarted{RunID: r.id, Node: v})
	}
	t := RemoteTurn{Spec: r.agentSpec(id, n, fresh), Input: r.turnInput(id, n), Attempt: n.Attempts}
	r.endTurn(ctx, id, r.e.o.Remote.RunTurn(ctx, t))
}
