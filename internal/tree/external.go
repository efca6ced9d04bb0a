package tree

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/tool"
)

// External callers.
//
// A caller outside the engine — an MCP client through `arbor mcp` — works
// a run with the very tree tools the node agents get (same names, texts,
// schemas and checks), scoped to one node's authority: the host node of a
// hosted run (Host.Tools, Host.Complete, Host.Wait), or any node of a run
// this engine drives or hosts (NodeTools). It never touches a run that
// another process owns: Drive and Host hold the run's lease.

// ToolInfos returns what the tree tools of node caller look like — their
// names, descriptions and schemas, as node agents see them — without a
// run. Node 1 (a root) has no notify tool.
func (e *Engine) ToolInfos(caller int64) []tool.Info {
	ts := (&run{e: e}).tools(caller)
	out := make([]tool.Info, len(ts))
	for i, t := range ts {
		out[i] = t.Info()
	}
	return out
}

// ToolNames are the names of every tree tool a node or an external host
// may be given (a node's, notify, the host's wait), for what checks
// names before any run exists (permission rules).
func ToolNames() []string {
	e := &Engine{}
	var names []string
	for _, in := range append(e.ToolInfos(2), e.ExternalToolInfos()...) {
		if !slices.Contains(names, in.Name) {
			names = append(names, in.Name)
		}
	}
	return names
}

// NodeTools returns the tree tools of node id of run runID, which this
// engine drives or hosts, scoped to the node's authority exactly as its
// own agent's are: it may create children only under itself, control only
// its strict descendants, and complete only itself. It fails with
// ErrUnknownNode for a node that does not exist, and with ErrBadState for
// a run this engine does not drive or for the host node of a hosted run
// (whose tools are Host.Tools).
func (e *Engine) NodeTools(runID string, id int64) ([]tool.Tool, error) {
	v, ok := e.live.Load(runID)
	if !ok {
		return nil, badState("tools of #%d: run %s is not driven by this process", id, runID)
	}
	r := v.(*run)
	r.mu.Lock()
	n, ok := r.nodes[id]
	r.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("tools of #%d of run %s: %w", id, runID, ErrUnknownNode)
	}
	if n.Kind == KindHost {
		return nil, badState("tools of #%d: it is the run's host", id)
	}
	return r.tools(id), nil
}

// NodeTools returns the tools of node id of the hosted run (see
// Engine.NodeTools).
func (h *Host) NodeTools(id int64) ([]tool.Tool, error) { return h.r.e.NodeTools(h.r.id, id) }

// Complete ends the hosted run with result: the host node completes and
// the run with it. It is refused (ErrBadState) while a child of the host
// has not ended, since their results would be lost: wait for them or stop
// them first.
func (h *Host) Complete(result string) error {
	r := h.r
	r.mu.Lock()
	defer r.unlock()
	if r.finished {
		return badState("the run has ended")
	}
	var open []int64
	for _, c := range r.children[1] {
		if !r.nodes[c].State.Terminal() {
			open = append(open, c)
		}
	}
	if len(open) > 0 {
		return badState("%s not ended yet; wait for them or stop them first", ids(open))
	}
	r.setLocked(1, "completed by its host", func(m *store.Node) { m.State, m.Result = StateComplete, result })
	r.scheduleLocked()
	return nil
}

// Ended reports whether the hosted run has ended (its host completed it).
func (h *Host) Ended() bool {
	h.r.mu.Lock()
	defer h.r.mu.Unlock()
	return h.r.finished
}

// WaitProgress reports how far a Wait is: Ended of Total nodes have ended,
// Last is the one that ended most recently (zero before any).
type WaitProgress struct {
	Ended, Total int
	Last         NodeView
}

// Wait blocks until the nodes ids — none: every child of the host at the
// time of each check — have all ended (complete, failed or cancelled), the
// run ended, or ctx is done. It returns the nodes as they are then, and
// context.Cause(ctx) when ctx ended the wait. progress, when set, is
// called (on Wait's goroutine) each time more of the nodes have ended.
// A node id that does not exist fails at once with ErrUnknownNode.
func (h *Host) Wait(ctx context.Context, ids []int64, progress func(WaitProgress)) ([]NodeView, error) {
	r := h.r
	wake := make(chan struct{}, 1)
	sub := r.e.o.Bus.Subscribe(func(ev agent.Event) {
		switch ev := ev.(type) {
		case *NodeChanged:
			if ev.RunID != r.id {
				return
			}
		case *RunFinished:
			if ev.RunID != r.id {
				return
			}
		default:
			return
		}
		select {
		case wake <- struct{}{}:
		default:
		}
	})
	defer sub.Close()
	last := -1
	for {
		views, ended, finished, err := h.waitState(ids)
		if err != nil {
			return nil, err
		}
		if ended != last && progress != nil && ended > 0 {
			p := WaitProgress{Ended: ended, Total: len(views)}
			for _, v := range views {
				if v.State.Terminal() {
					p.Last = v // the highest id among the ended: stable enough for a progress line
				}
			}
			progress(p)
		}
		last = ended
		if ended == len(views) || finished {
			return views, nil
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return views, context.Cause(ctx)
		}
	}
}

// waitState reads the nodes a Wait waits for and how many have ended.
func (h *Host) waitState(ids []int64) (views []NodeView, ended int, finished bool, err error) {
	r := h.r
	r.mu.Lock()
	defer r.mu.Unlock()
	targets := ids
	if len(targets) == 0 {
		targets = slices.Clone(r.children[1])
	}
	views = make([]NodeView, 0, len(targets))
	for _, id := range targets {
		n, ok := r.nodes[id]
		if !ok {
			return nil, 0, false, fmt.Errorf("#%d: %w (read_tree lists the nodes)", id, ErrUnknownNode)
		}
		if n.State.Terminal() {
			ended++
		}
		views = append(views, view(*n))
	}
	return views, ended, r.finished, nil
}

// Texts of the tools only an external host has.
const (
	hostCompleteText = "Finish the whole run with its result. Every child must have ended first: wait for them, or stop them."
	waitText         = "Block until the given nodes (default: all your children) have ended — complete, failed or cancelled — or timeout_seconds pass, and return their states and full results. Sends progress notifications while it waits; call it again after a timeout to keep waiting."
)

type waitArgs struct {
	IDs            []NodeRef `json:"ids,omitempty" jsonschema:"description=The nodes to wait for (default: all your children)"`
	TimeoutSeconds float64   `json:"timeout_seconds,omitempty" jsonschema:"minimum=0,maximum=3600,description=How long to wait at most (default 300)"`
}

// DefaultWait is how long wait waits when its call names no timeout.
const DefaultWait = 300 * time.Second

type progressKey struct{}

// WithProgress returns ctx carrying fn, which the wait tool calls as the
// nodes it waits for end (an MCP server sends them as progress
// notifications).
func WithProgress(ctx context.Context, fn func(WaitProgress)) context.Context {
	return context.WithValue(ctx, progressKey{}, fn)
}

// ExternalTools are the tools of an external host of the run (an MCP
// client in root mode): the host's tree tools, complete (Host.Complete)
// and wait (Host.Wait).
func (h *Host) ExternalTools() []tool.Tool {
	return append(h.Tools(), h.externalOnly()...)
}

// ExternalToolInfos returns what ExternalTools look like, without a run.
func (e *Engine) ExternalToolInfos() []tool.Info {
	h := &Host{r: &run{e: e}}
	ts := h.ExternalTools()
	out := make([]tool.Info, len(ts))
	for i, t := range ts {
		out[i] = t.Info()
	}
	return out
}

func (h *Host) externalOnly() []tool.Tool {
	return []tool.Tool{
		tool.New("complete", hostCompleteText, tool.KindInteract, func(_ context.Context, _ tool.Call, a completeArgs) tool.Result {
			if err := h.Complete(a.Result); err != nil {
				return tool.Errorf("%v", err)
			}
			return tool.Result{Content: "The run is complete."}
		}),
		tool.New("wait", waitText, tool.KindInteract, func(ctx context.Context, _ tool.Call, a waitArgs) tool.Result {
			d := DefaultWait
			if a.TimeoutSeconds > 0 {
				d = time.Duration(a.TimeoutSeconds * float64(time.Second))
			}
			wctx, cancel := context.WithTimeoutCause(ctx, d, errWaitTimeout)
			defer cancel()
			progress, _ := ctx.Value(progressKey{}).(func(WaitProgress))
			views, err := h.Wait(wctx, refs(a.IDs), progress)
			if end := h.endText(); end != "" && err == nil {
				return tool.Result{Content: waitReport(views, end)}
			}
			switch {
			case errors.Is(err, errWaitTimeout):
				return tool.Result{Content: waitReport(views, fmt.Sprintf("Timed out after %gs: ", d.Seconds()))}
			case err != nil && ctx.Err() != nil:
				return tool.Errorf("wait cancelled")
			case err != nil:
				return tool.Errorf("%v", err)
			}
			return tool.Result{Content: waitReport(views, "")}
		}),
	}
}

var errWaitTimeout = errors.New("wait timed out")

// waitReport is wait's result: how many nodes ended, then each node with
// its state and its whole result or error.
func waitReport(views []NodeView, prefix string) string {
	ended := 0
	for _, v := range views {
		if v.State.Terminal() {
			ended++
		}
	}
	var b strings.Builder
	b.WriteString(prefix)
	switch {
	case len(views) == 0:
		b.WriteString("There are no nodes to wait for.\n")
	case ended == len(views):
		fmt.Fprintf(&b, "All %d nodes have ended.\n", len(views))
	default:
		fmt.Fprintf(&b, "%d of %d nodes have ended; call wait again to keep waiting.\n", ended, len(views))
	}
	for _, v := range views {
		tag := string(v.Kind)
		if v.Spawn != "" {
			tag = v.Spawn
		}
		fmt.Fprintf(&b, "\n#%d %s [%s] %s\n", v.ID, tag, v.State, v.Goal)
		switch {
		case v.State == StateComplete:
			b.WriteString("result:\n" + v.Result + "\n")
		case v.Error != "":
			b.WriteString("error: " + v.Error + "\n")
		}
	}
	return b.String()
}

// endText says how the hosted run ended ("" while it has not): a run
// whose budget is spent ends with its children where they are.
func (h *Host) endText() string {
	r := h.r
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.finished {
		return ""
	}
	text := fmt.Sprintf("The run has ended (%s", r.meta.Status)
	if r.meta.Error != "" {
		text += ": " + r.meta.Error
	}
	return text + ").\n"
}
