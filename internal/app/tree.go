package app

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/tool"
	"github.com/arbor-run/arbor/internal/tree"
)

// Engine returns a coordination engine whose node agents use model ref
// ("" = the configured default) and maxTurns (0 = config), and may choose
// every model of the config's node_models for their children.
func (a *App) Engine(ref string, maxTurns int) (*tree.Engine, Model, error) {
	return a.EngineWith(EngineOptions{Model: ref, MaxTurns: maxTurns})
}

// EngineOptions configure EngineWith.
type EngineOptions struct {
	// Model is the run's (the root's) model; "" = the configured default.
	Model string
	// MaxTurns bounds each node turn; 0 = config.
	MaxTurns int
	// NodeModels restricts the node_models children may choose to these
	// names; nil = all of them.
	NodeModels []string
	// Remote, when set, runs the node turns of arbor's own loop in other
	// processes (a cluster run's node workers).
	Remote tree.Remote
	// RunHere chooses, with Remote, the turns run in this process
	// (tree.Options.RunHere).
	RunHere func(ctx context.Context, node int64, attempt int) (turn context.Context, release func(), ok bool)
}

// EngineWith returns a coordination engine for o.
func (a *App) EngineWith(o EngineOptions) (*tree.Engine, Model, error) {
	m, err := a.Model(o.Model)
	if err != nil {
		return nil, Model{}, err
	}
	choices, err := a.nodeModels(o.NodeModels)
	if err != nil {
		return nil, Model{}, err
	}
	agents := &nodeAgents{app: a, ref: func() string { return m.Ref.Ref }, maxTurns: o.MaxTurns}
	e := tree.New(tree.Options{Store: a.Store, Agents: agents, Bus: a.Bus, Broker: a.Broker,
		Models: choices, Priced: func(ref string) bool { return a.priced(ref, m) }, Runners: a.runners(), DefaultRunner: a.Config().NodeRunner, Remote: o.Remote, RunHere: o.RunHere,
		Heartbeat: a.Config().Cluster.Heartbeat, LeaseTTL: a.Config().Cluster.LeaseTTL})
	return e, m, nil
}

// NodeAgent returns the agent of a node turn that a cluster run's driver
// handed to this process (tree.Remote): spec is the node's, its Tools the
// node's tree tools as forwarded to the driver; runModel is the run's
// model, the node's when spec names none. The agent is the one loop with
// this App's built-in tools, permissions and MCP servers, on the node's
// stored session.
func (a *App) NodeAgent(ctx context.Context, spec tree.AgentSpec, runModel string) (*agent.Agent, error) {
	m, err := a.Model(runModel)
	if err != nil {
		return nil, err
	}
	return (&nodeAgents{app: a, ref: func() string { return m.Ref.Ref }}).NewAgent(ctx, spec)
}

// nodeModels are the config's node_models, restricted to names when given.
func (a *App) nodeModels(names []string) ([]tree.ModelChoice, error) {
	cfg := a.Config()
	if names == nil {
		names = make([]string, 0, len(cfg.NodeModels))
		for n := range cfg.NodeModels {
			names = append(names, n)
		}
		slices.Sort(names)
	}
	var out []tree.ModelChoice
	for _, n := range names {
		ref, ok := cfg.NodeModels[n]
		if !ok {
			return nil, fmt.Errorf("%w: --node-models: %q is not in the config's node_models", ErrUsage, n)
		}
		mr, err := cfg.Resolve(ref)
		if err != nil {
			return nil, fmt.Errorf("node model %s: %w", n, err)
		}
		out = append(out, tree.ModelChoice{Name: n, Ref: mr.Ref, Price: mr.Price})
	}
	return out, nil
}

// priced reports whether model ref ("" = run's model m) has a known price.
func (a *App) priced(ref string, m Model) bool {
	if ref == "" {
		return m.Ref.Price != nil
	}
	mr, err := a.Config().Resolve(ref)
	return err == nil && mr.Price != nil
}

// HostEngine returns a coordination engine for hosted runs whose node
// agents use the model ref returns when each is built: a headless
// session's sub-agents follow the session's model switches.
func (a *App) HostEngine(ref func() string) *tree.Engine {
	agents := &nodeAgents{app: a, ref: ref}
	// Sub-agents may choose every node model of the config; one that does
	// not resolve is left out rather than failing the session.
	var choices []tree.ModelChoice
	for _, n := range slices.Sorted(maps.Keys(a.Config().NodeModels)) {
		if c, err := a.nodeModels([]string{n}); err == nil {
			choices = append(choices, c...)
		}
	}
	return tree.New(tree.Options{Store: a.Store, Agents: agents, Bus: a.Bus, Broker: a.Broker, Models: choices, Runners: a.runners(), DefaultRunner: a.Config().NodeRunner,
		Heartbeat: a.Config().Cluster.Heartbeat, LeaseTTL: a.Config().Cluster.LeaseTTL,
		Priced: func(m string) bool {
			if m == "" {
				m = ref()
			}
			mm, err := a.Model(m) // "" is the configured default
			return err == nil && mm.Ref.Price != nil
		}})
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
	// A node's background jobs end with its turn: when it completes,
	// waits for its children, is stopped or paused, or times out.
	jobs := tool.NewJobs(nil)
	o := SessionOptions{
		Model: n.modelOf(spec), MaxTurns: n.maxTurns, Title: spec.Title,
		Tools: spec.Tools, System: spec.System, Gate: spec.Gate, Charge: spec.Charge,
		RunID: spec.RunID, NodeID: spec.NodeID, Flush: spec.Flush,
		// runAgent makes a node's prompt and notices again after a crash.
		Resendable: true, QueueEnd: spec.QueueEnd,
		Jobs: jobs, TurnEnded: jobs.KillAll,
	}
	var (
		s   *Session
		err error = store.ErrNotFound
	)
	if !spec.Fresh {
		s, err = n.app.ResumeSession(ctx, spec.SessionID, o)
	}
	if errors.Is(err, store.ErrNotFound) { // the node's first turn
		// Stored with the first step, which follows at once.
		o.Deferred = true
		s, err = n.app.CreateSession(ctx, spec.SessionID, o)
	}
	if err != nil {
		return nil, err
	}
	return s.Agent, nil
}

// modelOf is the model of spec's node: its own, else the run's.
func (n *nodeAgents) modelOf(spec tree.AgentSpec) string {
	if spec.Model != "" {
		return spec.Model
	}
	return n.ref()
}

const distillSystem = `You prepare context for an AI agent that is about to start a task.
You are given results produced by other agents and an instruction saying what the new
agent needs. Answer with only the distilled context: keep every fact, number, name and
path the instruction asks for, drop the rest. Do not add commentary.`

// Distill makes the one model call of a context_query, on the node's
// model: gated and charged like the node's own calls, and recorded on the
// node's session.
func (n *nodeAgents) Distill(ctx context.Context, spec tree.AgentSpec, query, text string) (string, error) {
	m, err := n.app.Model(n.modelOf(spec))
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
		est := llm.Usage{InputTokens: int64(len(distillSystem)+len(req.Messages[0].Text())) / 4, OutputTokens: agent.OutputEstimate(m.Ref.MaxOutput)}
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

// StoreEngine is an engine that drives no run and runs no agent: for what
// is written to a stored run nobody drives, under the run's lease (an
// answer, a raised budget, a cancel).
func (a *App) StoreEngine() *tree.Engine {
	return tree.New(tree.Options{Store: a.Store, Bus: a.Bus, Broker: a.Broker})
}
