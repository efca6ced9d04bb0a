package tree

import (
	"context"
	"errors"
	"fmt"

	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/tool"
)

// The causes of stops someone asked for are cancellations (errors.Is them
// to context.Canceled); any other cause ends a node's work as a failure.
var (
	errPaused  error = stopCause("node paused")
	errStopped error = stopCause("node stopped")
)

// stopCause is the cause of a deliberate stop: it is a context.Canceled,
// so a question open when it came is reported cancelled, not failed.
type stopCause string

func (e stopCause) Error() string        { return string(e) }
func (e stopCause) Is(target error) bool { return target == context.Canceled }

// control applies op to target on behalf of caller, which must be a
// strict ancestor of target.
func (r *run) control(caller, target int64, op func(id int64) error) tool.Result {
	r.mu.Lock()
	defer r.unlock()
	if _, ok := r.nodes[target]; !ok {
		return tool.Errorf("#%d does not exist (read_tree lists the nodes)", target)
	}
	if !r.descendantLocked(target, caller) {
		return tool.Errorf("#%d is %v: you may only control nodes you created or their descendants; use ask to involve someone who can", target, ErrNotInSubtree)
	}
	if err := op(target); err != nil {
		return tool.Errorf("#%d: %v", target, err)
	}
	r.scheduleLocked()
	return tool.Result{Content: fmt.Sprintf("#%d is now %s.", target, r.nodes[target].State)}
}

// descendantLocked reports whether id is a strict descendant of anc.
func (r *run) descendantLocked(id, anc int64) bool {
	for p := r.nodes[id].ParentID; p != 0; p = r.nodes[p].ParentID {
		if p == anc {
			return true
		}
	}
	return false
}

// subtreeLocked returns id and all its descendants, parents first.
func (r *run) subtreeLocked(id int64) []int64 {
	out := []int64{id}
	for i := 0; i < len(out); i++ {
		out = append(out, r.children[out[i]]...)
	}
	return out
}

// cascadeLocked moves every node of id's subtree that accept allows into
// state to, in one transaction, and cancels their running work with cause.
func (r *run) cascadeLocked(id int64, to store.NodeState, reason string, cause error, accept func(n *store.Node) bool, edit func(n *store.Node)) int {
	var changes []change
	for _, s := range r.subtreeLocked(id) {
		n := r.nodes[s]
		if !accept(n) {
			continue
		}
		c := *n
		c.State = to
		if edit != nil {
			edit(&c)
		}
		if to.Terminal() {
			c.EndedAt = r.nowPtr()
		}
		changes = append(changes, change{node: c, from: n.State, reason: reason})
	}
	if len(changes) == 0 {
		return 0
	}
	r.commitLocked(changes)
	for _, c := range changes {
		if cancel, ok := r.running[c.node.ID]; ok && cause != nil {
			cancel(cause)
		}
	}
	return len(changes)
}

func (r *run) stopLocked(id int64) error {
	if r.nodes[id].State.Terminal() {
		return badState("already %s", r.nodes[id].State)
	}
	r.cascadeLocked(id, StateCancelled, "stopped", errStopped,
		func(n *store.Node) bool { return !n.State.Terminal() },
		func(n *store.Node) { n.Error = fmt.Sprintf("stopped (with #%d)", id) })
	return nil
}

func (r *run) pauseLocked(id int64) error {
	switch s := r.nodes[id].State; {
	case s.Terminal():
		return badState("already %s", s)
	case s == StatePaused:
		return badState("already paused")
	}
	r.cascadeLocked(id, StatePaused, "paused", errPaused,
		func(n *store.Node) bool { return !n.State.Terminal() && n.State != StatePaused }, nil)
	return nil
}

// resumeLocked puts a paused subtree back to pending. Nodes that were
// running get a notice so their agent knows what happened.
func (r *run) resumeLocked(id int64) error {
	if r.nodes[id].State != StatePaused {
		return badState("is %s, not paused", r.nodes[id].State)
	}
	r.cascadeLocked(id, StatePending, "resumed", nil,
		func(n *store.Node) bool { return n.State == StatePaused },
		func(n *store.Node) {
			if n.SessionID != "" && !n.HasDraft && n.Notice == "" {
				n.Notice = "You were paused and have now been resumed. Continue your task."
			}
		})
	return nil
}

func (r *run) modifyLocked(id int64, goal, prompt string) error {
	n := r.nodes[id]
	if n.State != StatePending && n.State != StatePaused {
		return badState("is %s; only pending or paused nodes can be modified", n.State)
	}
	if goal == "" && prompt == "" {
		return errors.New("give a new goal, a new prompt, or both")
	}
	r.setLocked(id, "modified", func(m *store.Node) {
		if goal != "" {
			m.Goal = goal
		}
		if prompt != "" {
			m.Prompt = prompt
		}
		if m.SessionID != "" {
			m.Notice = fmt.Sprintf("Your task was modified.\nGoal: %s\nInstructions: %s\nContinue with the modified task.", m.Goal, m.Prompt)
		}
	})
	return nil
}
