package tree

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/tool"
)

// Hosted runs.
//
// A hosted run's root is a host node: an agent that a front end drives
// itself, such as the main agent of a headless session, which converses
// with a person turn after turn instead of completing one goal. The engine
// never runs the host node: its agent gets the root's tree tools (without
// complete) from Host.Tools, and its children are ordinary nodes that the
// engine schedules, synthesizes and persists. The front end learns what
// they do from the bus (AgentStarted, NodeChanged, Notified) and hands
// their results to its agent as it sees fit. A hosted run never finishes:
// it is driven while its front end holds the Host and is left interrupted
// when the Host closes, ready to continue with the next Host of that id.

// ErrHosted refuses to Drive a hosted run: only Host drives it.
var ErrHosted = errors.New("run is hosted by a headless session")

// HostOptions describe a hosted run.
type HostOptions struct {
	// ID is the run's id; a headless session uses its session id, so its
	// children's sessions are "<id>.<node>".
	ID string
	// SessionID is the host agent's session.
	SessionID   string
	Title       string
	Model       string
	Workspace   string
	Mode        string
	MaxParallel int
	// BudgetUSD, MaxTokens and NodeTimeout are the run's limits, as for
	// RunOptions; they apply when the run is created.
	BudgetUSD   float64
	MaxTokens   int64
	NodeTimeout time.Duration
	// New says the run does not exist yet: Host creates it (failing with
	// store.ErrConflict when the id is taken) and builds it from what it
	// wrote, without reading the store back. A fresh session's start
	// thus opens none of the store's read connections.
	New bool
}

// Host drives a hosted run from Start until Close.
type Host struct {
	r       *run
	cancel  context.CancelFunc
	done    chan struct{}
	drop    func() // unregisters the live run
	started bool
}

// Host opens hosted run o.ID, creating it when it does not exist, and
// takes its lease (failing with a *store.LeaseHeldError while another
// live process hosts it). Its tools work at once; Start drives it. Close
// releases it. A Host whose lease is lost stops its children and writes
// nothing more.
func (e *Engine) Host(ctx context.Context, o HostOptions) (*Host, error) {
	var created *store.Run
	var root store.Node
	if o.New {
		meta, r, err := e.createHosted(ctx, o)
		if err != nil {
			return nil, err
		}
		created, root = &meta, r
	} else if _, err := e.o.Store.GetRun(ctx, o.ID); errors.Is(err, store.ErrNotFound) {
		if _, _, err := e.createHosted(ctx, o); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, fmt.Errorf("host run %s: %w", o.ID, err)
	}
	if _, busy := e.live.Load(o.ID); busy {
		return nil, fmt.Errorf("host run %s: %w", o.ID, ErrRunActive)
	}
	l, err := e.acquire(ctx, o.ID, "")
	if err != nil {
		return nil, fmt.Errorf("host run %s: %w", o.ID, err)
	}
	var r *run
	if created != nil {
		r, err = e.build(ctx, *created, []store.Node{root}, false)
	} else {
		r, err = e.open(ctx, o.ID)
	}
	if err != nil {
		l.release()
		return nil, err
	}
	if r.nodes[1].Kind != KindHost {
		l.release()
		return nil, badState("host run %s: it is an arbor run, not a headless session's", o.ID)
	}
	// The host agent may call tools before Start: they need r.ctx. It is
	// set before the run is published in e.live, where Answer reads it.
	hctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	r.ctx = hctx
	r.hosted = l
	l.idle = func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.agentsRunningLocked() == 0
	}
	l.keep(cancel)
	if _, loaded := e.live.LoadOrStore(o.ID, r); loaded {
		cancel(nil)
		l.release()
		return nil, fmt.Errorf("host run %s: %w", o.ID, ErrRunActive)
	}
	drop := func() {
		e.live.Delete(o.ID)
		l.release()
	}
	return &Host{r: r, cancel: func() { cancel(nil) }, done: make(chan struct{}), drop: drop}, nil
}

// Start drives the run: children that a previous process left running
// continue. Call it once, after reading Nodes, so that no change of the
// run is missed between the two.
func (h *Host) Start() {
	h.started = true
	go func() {
		defer close(h.done)
		defer h.drop()
		_, _ = h.r.drive(h.r.ctx)
	}()
}

// createHosted stores hosted run o and its root, and returns both as
// stored.
func (e *Engine) createHosted(ctx context.Context, o HostOptions) (store.Run, store.Node, error) {
	if o.MaxParallel <= 0 {
		o.MaxParallel = 8
	}
	now := e.o.Now().UTC()
	title := o.Title
	if title == "" {
		title = "headless session " + o.SessionID
	}
	r := store.Run{
		ID: o.ID, Goal: title, Status: store.RunRunning, Model: o.Model, Workspace: o.Workspace,
		Mode: o.Mode, MaxParallel: o.MaxParallel, BudgetUSD: o.BudgetUSD, MaxTokens: o.MaxTokens,
		NodeTimeout: o.NodeTimeout.Milliseconds(), CreatedAt: now, UpdatedAt: now,
	}
	root := store.Node{RunID: o.ID, ID: 1, Kind: KindHost, Goal: r.Goal, State: StateActive, Returns: "text",
		SessionID: o.SessionID, CreatedAt: now, UpdatedAt: now, StartedAt: &now}
	if err := e.o.Store.CreateRun(ctx, r, root); err != nil {
		return store.Run{}, store.Node{}, fmt.Errorf("create hosted run: %w", err)
	}
	return r, root, nil
}

// RunID is the hosted run's id.
func (h *Host) RunID() string { return h.r.id }

// Tools are the host agent's tree tools: those of the root but complete,
// since the host's work has no end the engine could wait for.
func (h *Host) Tools() []tool.Tool {
	return slices.DeleteFunc(h.r.tools(1), func(t tool.Tool) bool { return tool.Name(t) == "complete" })
}

// Nodes returns the run's nodes but the root, ascending by id, as they
// are before Start or after the changes published so far.
func (h *Host) Nodes() []NodeView {
	r := h.r
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]NodeView, 0, len(r.order))
	for _, id := range r.idsLocked() {
		if id != 1 {
			out = append(out, view(*r.nodes[id]))
		}
	}
	return out
}

// Published returns once the changes the tree made before the call are
// published on the bus. A change is published once it is durable, which
// may be after the tool call that made it has returned (a spawn goes on
// at once): a front end that counts the live children from the events
// calls it, then flushes its subscription, before it decides that
// nothing runs.
func (h *Host) Published() { h.r.waitOutbox() }

// StopAll stops every node that has not ended, as the host's stop tool
// would, and reports how many it stopped.
func (h *Host) StopAll() int {
	r := h.r
	r.mu.Lock()
	defer r.unlock()
	n := 0
	for _, id := range slices.Clone(r.children[1]) {
		if !r.nodes[id].State.Terminal() && r.stopLocked(id) == nil {
			n++
		}
	}
	r.scheduleLocked()
	return n
}

// Close stops driving the run: running children are interrupted and left
// to continue with the next Host of this run. It waits for their agents.
func (h *Host) Close() {
	h.cancel()
	if !h.started {
		h.r.disp.Wait() // children the host agent spawned before Start
		h.drop()
		return
	}
	<-h.done
}

// isHostedLocked reports whether the run's root is a host node.
func (r *run) isHostedLocked() bool { return r.nodes[1].Kind == KindHost }

// AgentStarted is published when the agent of a node is built in this
// process: on its first turn, and on the first turn after the process
// restarted (a rehydrated node). Later turns of the node reuse it.
type AgentStarted struct {
	agent.Meta
	RunID string   `json:"run_id"`
	Node  NodeView `json:"node"`
}

// Notified is published when a node's agent calls notify: a progress
// note for the node's parent (To), which does not wait for an answer.
type Notified struct {
	agent.Meta
	RunID   string   `json:"run_id"`
	From    NodeView `json:"from"`
	To      int64    `json:"to"`
	Message string   `json:"message"`
}

type notifyArgs struct {
	Message string `json:"message" jsonschema:"description=The update for your parent: progress, a finding it can use now, a warning"`
}
