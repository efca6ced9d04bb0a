// Package tree is arbor's coordination engine: a run is a tree of nodes
// whose agents spawn, fork and ask for children, wait on each other through
// blocked_by, and hand results up for synthesis.
//
// Invariants (see docs/tree.md for the state diagram and the policies):
//   - every transition is one store Commit, then one NodeChanged event per
//     changed node; a node in a terminal state never changes again, so a
//     late agent exit cannot overwrite stop, pause or failure;
//   - a node that has children is complete only after a synthesis turn
//     that saw all of them; synthesis runs once per set of children;
//   - dependents start only on complete results; a failed or cancelled
//     dependency fails its dependents, so nothing waits forever;
//   - the engine is woken by its own commits and by agent exits: there is
//     no polling loop.
package tree

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/tool"
)

// Errors.
var (
	// ErrBudgetExhausted ends a run whose money or token budget is spent.
	ErrBudgetExhausted = errors.New("budget exhausted")
	// ErrNotInSubtree refuses control of a node outside the caller's subtree.
	ErrNotInSubtree = errors.New("not in your subtree")
	// ErrUnknownNode names a node id that does not exist in the run.
	ErrUnknownNode = errors.New("no such node")
	// ErrBadState refuses an operation the node's state does not allow.
	ErrBadState = errors.New("not allowed in this state")
	// ErrRunActive: the run is already being driven by another engine.
	ErrRunActive = errors.New("run is active")
)

// Store is what the engine persists: runs and nodes, and the sessions of
// node agents (for their usage totals on resume).
type Store interface {
	store.TreeStore
	GetSession(ctx context.Context, id string) (store.Session, error)
}

// AgentSpec asks the composition root for the agent of one node.
type AgentSpec struct {
	RunID     string
	NodeID    int64
	SessionID string
	Title     string
	System    string
	// Tools are the tree tools of the node, added to the built-ins.
	Tools []tool.Tool
	// Gate is checked before every model call (the run budget).
	Gate func(ctx context.Context) error
	// Charge is told each model call's usage and cost (the budgets).
	Charge func(call llm.Usage, cost float64)
}

// Agents builds node agents and distils context; internal/app implements it.
type Agents interface {
	// NewAgent returns the agent of spec's session: loaded when the
	// session exists (a resumed node), created otherwise.
	NewAgent(ctx context.Context, spec AgentSpec) (*agent.Agent, error)
	// Distill asks the run's model to reduce text to what query asks for.
	Distill(ctx context.Context, query, text string) (string, error)
}

// Dispatcher runs node work. The local dispatcher starts a goroutine per
// job; a cluster dispatcher can hand jobs to workers instead.
type Dispatcher interface {
	Dispatch(job func())
}

// Local runs each job on its own goroutine and waits for all on Wait.
type Local struct{ wg sync.WaitGroup }

// Dispatch starts job.
func (l *Local) Dispatch(job func()) { l.wg.Go(job) }

// Wait blocks until every dispatched job returned.
func (l *Local) Wait() { l.wg.Wait() }

// Options configure an Engine.
type Options struct {
	Store  Store
	Agents Agents
	Bus    *agent.Bus
	Broker *agent.Broker
	// MaxAttempts bounds how often a node is run after transient model
	// failures (default 2).
	MaxAttempts int
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Engine runs coordination trees.
type Engine struct {
	o    Options
	live sync.Map // run id → *run, while Drive runs it
}

// New returns an engine.
func New(o Options) *Engine {
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 2
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Engine{o: o}
}

// RunOptions describe a new run.
type RunOptions struct {
	ID          string
	Goal        string
	Model       string
	Workspace   string
	Mode        string
	BudgetUSD   float64
	MaxTokens   int64
	MaxParallel int
	NodeTimeout time.Duration
}

// Create stores a new run with its root node, pending.
func (e *Engine) Create(ctx context.Context, o RunOptions) (store.Run, error) {
	if o.MaxParallel <= 0 {
		o.MaxParallel = 8
	}
	now := e.o.Now().UTC()
	r := store.Run{
		ID: o.ID, Goal: o.Goal, Status: store.RunRunning, Model: o.Model, Workspace: o.Workspace,
		Mode: o.Mode, BudgetUSD: o.BudgetUSD, MaxTokens: o.MaxTokens, MaxParallel: o.MaxParallel,
		NodeTimeout: o.NodeTimeout.Milliseconds(), CreatedAt: now, UpdatedAt: now,
	}
	if err := e.o.Store.CreateRun(ctx, r); err != nil {
		return store.Run{}, fmt.Errorf("create run: %w", err)
	}
	root := store.Node{RunID: r.ID, ID: 1, Kind: KindGoal, Goal: o.Goal, State: StatePending, Returns: "text", CreatedAt: now, UpdatedAt: now}
	if err := e.o.Store.Commit(ctx, nil, root); err != nil {
		return store.Run{}, fmt.Errorf("create root node: %w", err)
	}
	return r, nil
}

// Drive runs (or resumes) run id until its root node ends, its budget is
// spent, or ctx is cancelled (the run is then left "interrupted", ready for
// another Drive). It returns the finished run.
func (e *Engine) Drive(ctx context.Context, id string) (store.Run, error) {
	r, err := e.open(ctx, id)
	if err != nil {
		return store.Run{}, err
	}
	if r.isHostedLocked() {
		return store.Run{}, fmt.Errorf("drive run %s: %w; continue it with: arbor headless -r %s", id, ErrHosted, id)
	}
	if _, loaded := e.live.LoadOrStore(id, r); loaded {
		return store.Run{}, fmt.Errorf("drive run %s: %w", id, ErrRunActive)
	}
	defer e.live.Delete(id)
	r.ctx = ctx
	return r.drive(ctx)
}
