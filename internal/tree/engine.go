// Package tree is arbor's coordination engine: a run is a tree of nodes
// whose agents spawn, fork and ask for children, wait on each other through
// blocked_by, and hand results up for synthesis.
//
// Invariants (see docs/tree.md for the state diagram and the policies):
//   - every transition is written by one store Commit (a few may share
//     one: a turn's end and the activations it leads to, the nodes one
//     agent step creates), then one NodeChanged event per change; a
//     node in a terminal state never changes again, so a late agent exit
//     cannot overwrite stop, pause or failure;
//   - a node that has children is complete only after a synthesis turn
//     that saw all of them; synthesis runs once per set of children;
//   - dependents start only on complete results; a failed or cancelled
//     dependency fails its dependents, so nothing waits forever;
//   - the engine is woken by its own commits and by agent exits: there is
//     no polling loop;
//   - a run is driven only by the holder of its store lease, in one
//     process at a time (see lease.go and docs/tree.md).
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
	// ErrRunActive: the run is already being driven by this engine.
	// Another process's drive fails with a *store.LeaseHeldError instead.
	ErrRunActive = errors.New("run is active")
)

// Store is what the engine persists: runs and nodes, their owner leases,
// and the sessions of node agents (for their usage totals on resume).
type Store interface {
	store.TreeStore
	store.LeaseStore
	GetSession(ctx context.Context, id string) (store.Session, error)
}

// AsyncCommitter is a Store that can queue a Commit and wait for it
// later (store/sqlite's group commit): CommitAsync returns at once, the
// write keeps its place before every write queued after it, and wait
// returns what Commit would have. The engine queues a turn's end under
// its run lock and waits after releasing it; a store without it commits
// under the lock.
type AsyncCommitter interface {
	CommitAsync(ctx context.Context, run *store.Run, nodes ...store.Node) (wait func() error)
}

// AgentSpec asks the composition root for the agent of one node.
type AgentSpec struct {
	RunID     string
	NodeID    int64
	SessionID string
	// Model is the node's model (provider/name); "" for the run's.
	Model  string
	Title  string
	System string
	// Tools are the tree tools of the node, added to the built-ins.
	Tools []tool.Tool
	// Gate is checked before every model call (the run budget).
	Gate func(ctx context.Context, est llm.Usage, estCost float64) error
	// Charge is told each model call's usage and cost (the budgets).
	Charge func(call llm.Usage, cost float64)
	// Fresh says the session cannot exist yet (this process assigned its
	// id when it activated the node): NewAgent need not look it up.
	Fresh bool
	// QueueEnd: the agent may leave the write of the results that end
	// its turn queued (agent.Config.QueueEnd); the engine waits for it
	// with the node's transition (Result.Stored).
	QueueEnd bool
	// Flush, when set, must be called before the agent stores the results
	// of a step's tools (agent.Config.Flush): the nodes its tree tools
	// created are committed then, all in one transaction.
	Flush func(ctx context.Context) error
}

// Agents builds node agents and distils context; internal/app implements it.
type Agents interface {
	// NewAgent returns the agent of spec's session: loaded when the
	// session exists (a resumed node), created otherwise (it may store
	// the session with its first step: agent.Config.Create). The node's
	// messages may be stored with the answers they get
	// (agent.Config.Resendable): runAgent sends them again after a crash.
	NewAgent(ctx context.Context, spec AgentSpec) (*agent.Agent, error)
	// Distill asks the node's model to reduce text to what query asks
	// for: one model call, passed through spec.Gate before it starts,
	// recorded on spec.SessionID and charged through spec.Charge.
	Distill(ctx context.Context, spec AgentSpec, query, text string) (string, error)
}

// Dispatcher runs node work. The local dispatcher starts a goroutine per
// job; a cluster dispatcher can hand jobs to workers instead.
type Dispatcher interface {
	Dispatch(job func())
}

// Local runs jobs on goroutines of its own and waits for all on Wait. A
// goroutine that finished a job takes the next one, until Wait: a node's
// agent grows its goroutine's stack (JSON encoding, the store's SQLite
// code), and a goroutine per node grew a new stack for every node.
type Local struct {
	init     sync.Once
	next     chan func()   // an idle goroutine takes a job from here
	stop     chan struct{} // closed by Wait: idle goroutines end
	stopOnce sync.Once
	jobs     sync.WaitGroup // jobs not returned yet
	wg       sync.WaitGroup // the goroutines
}

func (l *Local) start() {
	l.init.Do(func() { l.next, l.stop = make(chan func()), make(chan struct{}) })
}

// Dispatch runs job on an idle goroutine, or on a new one when none is.
func (l *Local) Dispatch(job func()) {
	l.start()
	l.jobs.Add(1)
	select {
	case l.next <- job:
	default:
		l.wg.Go(func() { l.serve(job) })
	}
}

// serve runs job, then every job it is handed, until Wait stops it.
func (l *Local) serve(job func()) {
	for {
		l.run(job)
		select {
		case job = <-l.next:
		case <-l.stop:
			return
		}
	}
}

func (l *Local) run(job func()) {
	defer l.jobs.Done()
	job()
}

// Wait blocks until every dispatched job returned, then ends the idle
// goroutines and waits for them. A job dispatched later runs on a
// goroutine that ends with it.
func (l *Local) Wait() {
	l.start()
	l.jobs.Wait()
	l.stopOnce.Do(func() { close(l.stop) })
	l.wg.Wait()
}

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
	// Heartbeat is how often a driving engine renews its run's lease
	// (default 2s); LeaseTTL is how long the lease outlives its last
	// renewal (default 3 heartbeats), after which another process may
	// take the run over.
	Heartbeat time.Duration
	LeaseTTL  time.Duration
	// IdleLeaseTTL is how long the lease of a hosted run lasts while no
	// child agent of it runs (default 30 minutes); it is renewed a third
	// of that apart then (see lease.go).
	IdleLeaseTTL time.Duration
	// Models are the models nodes may choose for their children (spawn's
	// and fork's model argument); none: children run on their parent's.
	Models []ModelChoice
	// Priced reports whether the price of a model (provider/name; "" for
	// the run's) is known, so that a budget_usd on it can be enforced.
	// Nil: every price is taken as known.
	Priced func(ref string) bool
	// Runners are the external agents nodes may be run by, by name
	// ("claude-code"), besides arbor's own loop ("arbor"). DefaultRunner
	// runs the children that name none ("" or "arbor": arbor's own).
	Runners       map[string]Runner
	DefaultRunner string
	// Remote, when set, runs the turns of arbor's own loop in other
	// processes (a cluster's node workers; see Remote); nil runs them here.
	Remote Remote
	// RunHere, with Remote, is asked before each such turn of node (at
	// the node's attempt) is handed to Remote: ok runs it in this process
	// instead, as without Remote, on the context returned, and release is
	// called when it ends. A cluster run's driver runs as many of its
	// turns itself as it has turn slots free, under their node leases,
	// and hands out the rest. Nil hands every turn to Remote.
	RunHere func(ctx context.Context, node int64, attempt int) (turn context.Context, release func(), ok bool)
}

// ModelChoice is a model nodes may choose for their children.
type ModelChoice struct {
	Name  string     // what the model argument says: "fast"
	Ref   string     // provider/name
	Price *llm.Price // nil when unknown
}

// Engine runs coordination trees.
type Engine struct {
	o Options
	// live maps run id → *run while this engine drives it. A run is
	// stored only once fully set up (lease held, ctx set), since Answer
	// reads it from other goroutines.
	live sync.Map
	// opening holds a *sync.Mutex per run id (see runLock).
	opening sync.Map
	// models is what spawn's and fork's descriptions say about o.Models,
	// written once here instead of for every node's tools.
	models string
}

// runLock serializes the opening of run id (DriveWith, from its lease to
// its live entry) with what this engine writes to the run while it does
// not drive it (Answer): an answer given while the run is being opened
// then waits and goes to the live run, instead of taking the lease from
// under the opening (which would fail) or writing a node the opening
// already read (which would be lost).
func (e *Engine) runLock(id string) (unlock func()) {
	v, _ := e.opening.LoadOrStore(id, &sync.Mutex{})
	mu := v.(*sync.Mutex)
	mu.Lock()
	return mu.Unlock
}

// New returns an engine.
func New(o Options) *Engine {
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 2
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Heartbeat <= 0 {
		o.Heartbeat = defaultHeartbeat
	}
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = ttlBeats * o.Heartbeat
	}
	if o.IdleLeaseTTL <= 0 {
		o.IdleLeaseTTL = max(defaultIdleLeaseTTL, o.LeaseTTL)
	}
	return &Engine{o: o, models: modelsText(o.Models)}
}

// RunOptions describe a new run.
type RunOptions struct {
	ID   string
	Goal string
	// Context is what the root is told besides its goal, such as what the
	// project's hooks add to a prompt; it is the root node's Prompt, so
	// the run's goal stays as the person wrote it.
	Context     string
	Model       string
	Workspace   string
	Mode        string
	BudgetUSD   float64
	MaxTokens   int64
	MaxParallel int
	NodeTimeout time.Duration
	// Queue makes a cluster run: the worker queue whose workers drive it
	// (store.Run.Queue).
	Queue string
	// TraceParent is the W3C traceparent the run is started under
	// (store.Run.TraceParent); "" starts a trace of the run's own.
	TraceParent string
}

// Create stores a new run with its root node, pending.
func (e *Engine) Create(ctx context.Context, o RunOptions) (store.Run, error) {
	r, root := e.NewRun(o)
	if err := e.o.Store.CreateRun(ctx, r, root); err != nil {
		return store.Run{}, fmt.Errorf("create run: %w", err)
	}
	return r, nil
}

// NewRun returns the rows Create stores for o: the run and its root
// node, pending. A caller that stores them itself (cluster.Submit, in one
// transaction with the run's first job) gets the same run Create makes.
func (e *Engine) NewRun(o RunOptions) (store.Run, store.Node) {
	if o.MaxParallel <= 0 {
		o.MaxParallel = 8
	}
	now := e.o.Now().UTC()
	r := store.Run{
		ID: o.ID, Goal: o.Goal, Status: store.RunRunning, Model: o.Model, Workspace: o.Workspace,
		Mode: o.Mode, BudgetUSD: o.BudgetUSD, MaxTokens: o.MaxTokens, MaxParallel: o.MaxParallel,
		NodeTimeout: o.NodeTimeout.Milliseconds(), Queue: o.Queue, TraceParent: o.TraceParent, CreatedAt: now, UpdatedAt: now,
	}
	root := store.Node{RunID: r.ID, ID: 1, Kind: KindGoal, Goal: o.Goal, Prompt: o.Context, State: StatePending, Returns: "text", CreatedAt: now, UpdatedAt: now}
	return r, root
}

// Drive runs (or resumes) run id until its root node ends, its budget is
// spent, or ctx is cancelled (the run is then left "interrupted", ready for
// another Drive). It returns the finished run.
//
// It first takes the run's lease: while another live process drives the
// run it fails at once with a *store.LeaseHeldError (errors.Is
// store.ErrLeaseHeld) naming the owner. When the lease is lost while
// driving, it stops the run's agents, writes nothing more and fails with
// ErrLeaseLost.
func (e *Engine) Drive(ctx context.Context, id string) (store.Run, error) {
	return e.DriveWith(ctx, id, DriveOptions{})
}

// DriveOptions are the extras of DriveWith.
type DriveOptions struct {
	// Addr is where this process takes answers for the run (its answer
	// socket), recorded in the lease for `arbor answer`.
	Addr string
	// Serve, when set, is called once the lease is held and the run is
	// live, before driving starts; the function it returns is called when
	// driving ended, before the lease is released. The CLI serves the
	// answer socket there, so only the owner ever touches it.
	Serve func() (stop func())
	// Steered says a person steers the run while it is driven (the web
	// view): nodes they paused wait for them to resume or stop them,
	// even when nothing else runs, instead of being cancelled as
	// unresumable.
	Steered bool
	// Handoff says another process carries the run on when this drive
	// is cancelled (a cluster worker stopping): the run stays stored as
	// running, for the next worker to take, instead of interrupted.
	Handoff bool
}

// DriveWith is Drive with options.
func (e *Engine) DriveWith(ctx context.Context, id string, o DriveOptions) (store.Run, error) {
	unlock := e.runLock(id)
	opened := false
	defer func() {
		if !opened {
			unlock()
		}
	}()
	if _, busy := e.live.Load(id); busy {
		return store.Run{}, fmt.Errorf("drive run %s: %w", id, ErrRunActive)
	}
	l, err := e.acquire(ctx, id, o.Addr)
	if err != nil {
		return store.Run{}, fmt.Errorf("drive run %s: %w", id, err)
	}
	defer l.release()
	// Read the run only now: the previous owner may have written until
	// it let go.
	r, err := e.open(ctx, id)
	if err != nil {
		return store.Run{}, err
	}
	if r.isHostedLocked() {
		return store.Run{}, fmt.Errorf("drive run %s: %w; continue it with: arbor headless -r %s, or arbor mcp --run %s if an MCP client started it", id, ErrHosted, id, id)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	r.ctx = ctx
	r.steered, r.handoff = o.Steered, o.Handoff
	l.keep(cancel)
	if _, loaded := e.live.LoadOrStore(id, r); loaded {
		return store.Run{}, fmt.Errorf("drive run %s: %w", id, ErrRunActive)
	}
	defer e.live.Delete(id)
	opened = true
	unlock()
	if o.Serve != nil {
		defer o.Serve()()
	}
	fin, err := r.drive(ctx)
	if err == nil && r.leaseLost() {
		err = fmt.Errorf("drive run %s: %w", id, context.Cause(ctx))
	}
	return fin, err
}
