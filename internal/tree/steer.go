package tree

import (
	"errors"
	"fmt"
)

// Steering by a person.
//
// The tree tools let an agent stop, pause and resume nodes of its own
// subtree. A person watching a run (the web view) has authority over the
// whole tree, but acts through the same transitions, under the same run
// lock, in the process that drives the run: the owner of its lease.

// Op is a person's control of a node.
type Op string

// Control operations.
const (
	OpStop   Op = "stop"
	OpPause  Op = "pause"
	OpResume Op = "resume"
)

// ErrNotDriven refuses to control a run this engine does not drive: only
// the owner of a run's lease changes its nodes.
var ErrNotDriven = errors.New("run is not driven by this process")

// Driving reports whether this engine drives (or hosts) run runID now.
func (e *Engine) Driving(runID string) bool {
	_, ok := e.live.Load(runID)
	return ok
}

// Control applies op to node id of run runID, which this engine must be
// driving (else ErrNotDriven): stop cancels the node's subtree, pause
// pauses it, resume puts a paused subtree back to pending. It returns the
// node's state after the change. Once a person paused a node, the run's
// paused nodes wait for a person even when nothing else runs. Errors wrap
// ErrUnknownNode, ErrBadState or ErrNotDriven.
func (e *Engine) Control(runID string, id int64, op Op) (NodeState, error) {
	v, ok := e.live.Load(runID)
	if !ok {
		return "", fmt.Errorf("%s #%d of %s: %w", op, id, runID, ErrNotDriven)
	}
	r := v.(*run)
	r.mu.Lock()
	defer r.unlock()
	if _, ok := r.nodes[id]; !ok {
		return "", fmt.Errorf("%s #%d: %w", op, id, ErrUnknownNode)
	}
	var err error
	switch op {
	case OpStop:
		err = r.stopLocked(id)
	case OpPause:
		err = r.pauseLocked(id)
		// A person paused it: from now on paused nodes wait for a person
		// to resume or stop them, even when nothing else runs, as in a
		// run driven with DriveOptions.Steered (arbor run steered from
		// the web view through its owner socket).
		r.steered = r.steered || err == nil
	case OpResume:
		err = r.resumeLocked(id)
	default:
		return "", badState("unknown operation %q: want stop, pause or resume", op)
	}
	if err != nil {
		return "", fmt.Errorf("%s #%d: %w", op, id, err)
	}
	r.scheduleLocked()
	return r.nodes[id].State, nil
}
