package app

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/tree"
)

// Engine returns a coordination engine whose node agents use model ref
// ("" = the configured default) and maxTurns (0 = config).
func (a *App) Engine(ref string, maxTurns int) (*tree.Engine, Model, error) {
	m, err := a.Model(ref)
	if err != nil {
		return nil, Model{}, err
	}
	agents := &nodeAgents{app: a, ref: func() string { return m.Ref.Ref }, maxTurns: maxTurns}
	e := tree.New(tree.Options{Store: a.Store, Agents: agents, Bus: a.Bus, Broker: a.Broker})
	return e, m, nil
}

// HostEngine returns a coordination engine for hosted runs whose node
// agents use the model ref returns when each is built: a headless
// session's sub-agents follow the session's model switches.
func (a *App) HostEngine(ref func() string) *tree.Engine {
	agents := &nodeAgents{app: a, ref: ref}
	return tree.New(tree.Options{Store: a.Store, Agents: agents, Bus: a.Bus, Broker: a.Broker})
}

// nodeAgents implements tree.Agents: every node is a session of the one
// agent loop with the tree's tools added, on the model ref names ("" =
// the configured default).
type nodeAgents struct {
	app      *App
	ref      func() string
	maxTurns int
}

func (n *nodeAgents) NewAgent(ctx context.Context, spec tree.AgentSpec) (*agent.Agent, error) {
	o := SessionOptions{
		Model: n.ref(), MaxTurns: n.maxTurns, Title: spec.Title,
		Tools: spec.Tools, System: spec.System, Gate: spec.Gate, Charge: spec.Charge,
		RunID: spec.RunID, NodeID: spec.NodeID,
	}
	s, err := n.app.ResumeSession(ctx, spec.SessionID, o)
	if errors.Is(err, store.ErrNotFound) { // the node's first turn
		s, err = n.app.CreateSession(ctx, spec.SessionID, o)
	}
	if err != nil {
		return nil, err
	}
	return s.Agent, nil
}

const distillSystem = `You prepare context for an AI agent that is about to start a task.
You are given results produced by other agents and an instruction saying what the new
agent needs. Answer with only the distilled context: keep every fact, number, name and
path the instruction asks for, drop the rest. Do not add commentary.`

// Distill makes the one model call of a context_query, on the node's
// model: gated and charged like the node's own calls, and recorded on the
// node's session.
func (n *nodeAgents) Distill(ctx context.Context, spec tree.AgentSpec, query, text string) (string, error) {
	m, err := n.app.Model(n.ref())
	if err != nil {
		return "", err
	}
	req := &llm.Request{
		Model:  m.Ref.Name,
		System: distillSystem,
		Messages: []llm.Message{llm.UserText(fmt.Sprintf(
			"Instruction: %s\n\nResults:\n%s", query, text))},
	}
	if spec.Gate != nil {
		out := m.Ref.MaxOutput
		if out <= 0 {
			out = agent.DefaultOutputEstimate
		}
		est := llm.Usage{InputTokens: int64(len(distillSystem)+len(req.Messages[0].Text())) / 4, OutputTokens: out}
		if err := spec.Gate(ctx, est, priceOf(m, est)); err != nil {
			return "", err
		}
	}
	resp, err := llm.Collect(m.Provider.Stream(agent.WithSession(ctx, spec.SessionID), req))
	if err != nil {
		return "", err
	}
	cost := priceOf(m, resp.Usage)
	if spec.Charge != nil {
		spec.Charge(resp.Usage, cost)
	}
	err = n.app.Store.AddUsage(context.WithoutCancel(ctx), store.UsageRecord{
		SessionID: spec.SessionID, Model: m.Ref.Ref, Usage: resp.Usage,
		CostUSD: cost, CostKnown: m.Ref.Price != nil, At: time.Now().UTC(),
	})
	if err != nil {
		return "", fmt.Errorf("record usage: %w", err)
	}
	out := strings.TrimSpace(resp.Message.Text())
	if out == "" {
		return "", errors.New("the model returned an empty distillation")
	}
	return out, nil
}

// priceOf is what u costs on m (0 when its price is unknown).
func priceOf(m Model, u llm.Usage) float64 {
	if m.Ref.Price == nil {
		return 0
	}
	return m.Ref.Price.Cost(u)
}
