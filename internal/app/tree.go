package app

import (
	"context"
	"errors"
	"fmt"
	"strings"

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
	agents := &nodeAgents{app: a, model: m, maxTurns: maxTurns}
	e := tree.New(tree.Options{Store: a.Store, Agents: agents, Bus: a.Bus, Broker: a.Broker})
	return e, m, nil
}

// nodeAgents implements tree.Agents: every node is a session of the one
// agent loop with the tree's tools added.
type nodeAgents struct {
	app      *App
	model    Model
	maxTurns int
}

func (n *nodeAgents) NewAgent(ctx context.Context, spec tree.AgentSpec) (*agent.Agent, error) {
	o := SessionOptions{
		Model: n.model.Ref.Ref, MaxTurns: n.maxTurns, Title: spec.Title,
		Tools: spec.Tools, System: spec.System, Gate: spec.Gate,
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

// Distill makes the one model call of a context_query.
func (n *nodeAgents) Distill(ctx context.Context, query, text string) (string, error) {
	req := &llm.Request{
		Model:  n.model.Ref.Name,
		System: distillSystem,
		Messages: []llm.Message{llm.UserText(fmt.Sprintf(
			"Instruction: %s\n\nResults:\n%s", query, text))},
	}
	resp, err := llm.Collect(n.model.Provider.Stream(ctx, req))
	if err != nil {
		return "", err
	}
	out := strings.TrimSpace(resp.Message.Text())
	if out == "" {
		return "", errors.New("the model returned an empty distillation")
	}
	return out, nil
}
