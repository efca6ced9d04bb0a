package tree

import (
	"context"
	"fmt"
	"sync"

	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/tool"
)

// treeTools are a run's tree tools, built once (when first needed) and
// bound to each node that gets them (toolsFor): a node's tools were
// eleven tools, their closures and wrappers made for every node of a
// fan-out of thousands.
type treeTools struct {
	once  sync.Once
	tools []tool.Binder[int64] // notify last
}

// toolsFor returns the tree tools of node caller. With deferred, the nodes
// spawn, fork and ask create are written with the run's next commit or
// the caller's flush (flushFor), whichever comes first: the caller must
// be an agent that flushes before it stores its tool results (runAgent's,
// agent.Config.Flush), so a step's many spawns cost one commit.
func (r *run) toolsFor(caller int64, deferred bool) []tool.Tool {
	set := &r.treeTools[0]
	if deferred {
		set = &r.treeTools[1]
	}
	set.once.Do(func() { set.tools = r.makeTools(deferred) })
	bs := set.tools
	if caller == 1 {
		bs = bs[:len(bs)-1] // the root has no parent to notify
	}
	ts := make([]tool.Tool, len(bs))
	for i, b := range bs {
		ts[i] = b.Bind(caller)
	}
	return ts
}

// makeTools builds the tree tools of the run's nodes; toolsFor binds them
// to a node.
func (r *run) makeTools(deferred bool) []tool.Binder[int64] {
	spawn := func(kind string) func(context.Context, tool.Call, int64, spawnArgs) tool.Result {
		return func(_ context.Context, c tool.Call, caller int64, a spawnArgs) tool.Result {
			if a.BudgetUSD < 0 || a.MaxTokens < 0 {
				return tool.Errorf("budget_usd and max_tokens must not be negative")
			}
			model, err := r.childModel(caller, a.Model)
			if err != nil {
				return tool.Errorf("%v", err)
			}
			if r.e.o.Priced != nil && !r.e.o.Priced(model) {
				switch {
				case a.BudgetUSD > 0:
					return tool.Errorf("budget_usd: the price of the child's model is unknown, so a budget in dollars cannot be enforced; use max_tokens")
				case r.dollarBudgetOver(caller):
					return tool.Errorf("model: the price of %s is unknown, and the child would spend under a budget in dollars; choose a model with a price", model)
				}
			}
			runner, err := r.childRunner(a.Runner)
			if err != nil {
				return tool.Errorf("%v", err)
			}
			return r.create(caller, store.Node{Kind: KindTask, Spawn: kind, Goal: a.Goal, Prompt: a.Prompt,
				BlockedBy: refs(a.BlockedBy), Returns: a.Returns, ContextQuery: a.ContextQuery, CallID: c.ID,
				BudgetUSD: a.BudgetUSD, MaxTokens: a.MaxTokens, Model: model, Runner: runner}, deferred)
		}
	}
	// Idempotent marks the tools the agent runs again after a crash
	// interrupted them: spawn, fork and ask find the node an interrupted
	// call created (by call id); complete and the reads are naturally
	// idempotent. The control tools and notify are not: they are reported
	// interrupted.
	return []tool.Binder[int64]{
		tool.NewBound("spawn", "Create a child task that starts with a clean context: its goal, your prompt and the results of the nodes it is blocked_by. Returns its id."+r.e.models, tool.KindInteract, spawn("spawn")).Idempotent(),
		tool.NewBound("fork", "Create a child task like spawn that also receives the results of every completed sibling when it starts. Returns its id."+r.e.models, tool.KindInteract, spawn("fork")).Idempotent(),
		tool.NewBound("ask", "Ask the human a question; the answer becomes this ask node's result. Returns its id.", tool.KindInteract,
			func(_ context.Context, c tool.Call, caller int64, a askArgs) tool.Result {
				return r.create(caller, store.Node{Kind: KindAsk, Goal: a.Question, Question: a.Question,
					Options: a.Options, Default: a.Default, BlockedBy: refs(a.BlockedBy), CallID: c.ID}, deferred)
			}).Idempotent(),
		tool.NewBound("complete", "Finish your task with its result. With children, this is a draft until you synthesize their results.", tool.KindInteract,
			func(_ context.Context, _ tool.Call, caller int64, a completeArgs) tool.Result {
				return r.complete(caller, a.Result)
			}).Idempotent(),
		tool.NewBound("read_tree", "Show the whole coordination tree: ids, kinds, states, goals, dependencies and short results.", tool.KindInteract,
			func(context.Context, tool.Call, int64, noArgs) tool.Result {
				r.mu.Lock()
				defer r.mu.Unlock()
				return tool.Result{Content: r.renderTreeLocked()}
			}).Idempotent(),
		tool.NewBound("read_node", "Show one node in full, including its whole result.", tool.KindInteract,
			func(_ context.Context, _ tool.Call, _ int64, a idArgs) tool.Result { return r.readNode(int64(a.ID)) }).Idempotent(),
		tool.NewBound("stop", "Stop a node in your subtree and everything under it; it ends as cancelled.", tool.KindInteract,
			func(_ context.Context, _ tool.Call, caller int64, a idArgs) tool.Result {
				return r.control(caller, int64(a.ID), r.stopLocked)
			}),
		tool.NewBound("pause", "Pause a node in your subtree and everything under it, until resume.", tool.KindInteract,
			func(_ context.Context, _ tool.Call, caller int64, a idArgs) tool.Result {
				return r.control(caller, int64(a.ID), r.pauseLocked)
			}),
		tool.NewBound("resume", "Resume a paused node in your subtree.", tool.KindInteract,
			func(_ context.Context, _ tool.Call, caller int64, a idArgs) tool.Result {
				return r.control(caller, int64(a.ID), r.resumeLocked)
			}),
		tool.NewBound("modify", "Change the goal or prompt of a pending or paused node in your subtree.", tool.KindInteract,
			func(_ context.Context, _ tool.Call, caller int64, a modifyArgs) tool.Result {
				return r.control(caller, int64(a.ID), func(id int64) error { return r.modifyLocked(id, a.Goal, a.Prompt) })
			}),
		r.notifyTool(),
	}
}

// notifyTool lets a node send its parent a progress note.
func (r *run) notifyTool() tool.Binder[int64] {
	return tool.NewBound("notify", "Send your parent a short progress update without waiting for an answer; use it sparingly, for what the parent can act on before you complete.", tool.KindInteract,
		func(_ context.Context, _ tool.Call, caller int64, a notifyArgs) tool.Result {
			if a.Message == "" {
				return tool.Errorf("message must not be empty")
			}
			r.mu.Lock()
			n := view(*r.nodes[caller])
			if p := r.nodes[n.ParentID]; p.Kind != KindHost {
				// The parent reads its children's notes with their results
				// (startSynthesisLocked); a host's front end delivers them.
				r.notes[p.ID] = append(r.notes[p.ID], fmt.Sprintf("#%d (%s): %s", n.ID, abbrev(n.Goal, 80), a.Message))
			}
			r.mu.Unlock()
			r.e.o.Bus.Publish(&Notified{RunID: r.id, From: n, To: n.ParentID, Message: a.Message})
			return tool.Result{Content: fmt.Sprintf("Sent to #%d.", n.ParentID)}
		})
}
