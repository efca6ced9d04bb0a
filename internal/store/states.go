package store

// The closed sets a store records as strings. Each is a named type so the
// compiler keeps a node state from being stored as a run status; the
// strings are the stored and wire values and never change.

// NodeState is where a node is in its life. See docs/tree.md for the
// diagram.
type NodeState string

// Node states.
const (
	StatePending      NodeState = "pending"      // created; waits for blocked_by or a free slot
	StateActive       NodeState = "active"       // its agent runs (an ask node: waits for its answer)
	StateWaiting      NodeState = "waiting"      // its agent finished a turn; children still run
	StateSynthesizing NodeState = "synthesizing" // children done; its agent continues with their results
	StateComplete     NodeState = "complete"
	StatePaused       NodeState = "paused"
	StateFailed       NodeState = "failed"
	StateCancelled    NodeState = "cancelled"
)

// Terminal reports whether a node in state s will never change again.
func (s NodeState) Terminal() bool {
	return s == StateComplete || s == StateFailed || s == StateCancelled
}

// Valid reports whether s is one of the node states.
func (s NodeState) Valid() bool {
	switch s {
	case StatePending, StateActive, StateWaiting, StateSynthesizing,
		StateComplete, StatePaused, StateFailed, StateCancelled:
		return true
	}
	return false
}

// NodeKind says what a node is.
type NodeKind string

// Node kinds.
const (
	KindGoal NodeKind = "goal" // the root of arbor run: an agent with the run's goal
	KindHost NodeKind = "host" // the root of a hosted run: a front end drives its agent
	KindTask NodeKind = "task" // a child task run by its own agent
	KindAsk  NodeKind = "ask"  // a question to a person; the answer is its result
)

// Valid reports whether k is one of the node kinds.
func (k NodeKind) Valid() bool {
	switch k {
	case KindGoal, KindHost, KindTask, KindAsk:
		return true
	}
	return false
}

// Root reports whether k is the kind of a run's root node.
func (k NodeKind) Root() bool { return k == KindGoal || k == KindHost }

// RunStatus is the status of a run.
type RunStatus string

// Run statuses.
const (
	RunRunning     RunStatus = "running"
	RunComplete    RunStatus = "complete"
	RunFailed      RunStatus = "failed"
	RunCancelled   RunStatus = "cancelled"
	RunBudget      RunStatus = "budget_exhausted"
	RunInterrupted RunStatus = "interrupted" // stopped mid-way; arbor resume continues it
	// RunIdle is shown, never stored (ShownStatus): a headless session's
	// run that no process holds. It is not stopped mid-way: its
	// conversation waits for its next prompt (arbor headless -r).
	RunIdle RunStatus = "idle"
)

// Terminal reports whether the run ended with an outcome: every status
// but running and interrupted.
func (s RunStatus) Terminal() bool {
	switch s {
	case RunComplete, RunFailed, RunCancelled, RunBudget:
		return true
	}
	return false
}

// Valid reports whether s is one of the run statuses.
func (s RunStatus) Valid() bool { return s == RunRunning || s == RunInterrupted || s.Terminal() }

// SessionStatus is the status of a session. None is terminal: any
// session can take another turn.
type SessionStatus string

// Session statuses.
const (
	SessionActive      SessionStatus = "active" // a turn is running
	SessionIdle        SessionStatus = "idle"
	SessionInterrupted SessionStatus = "interrupted"
	SessionFailed      SessionStatus = "failed"
)

// Valid reports whether s is one of the session statuses.
func (s SessionStatus) Valid() bool {
	switch s {
	case SessionActive, SessionIdle, SessionInterrupted, SessionFailed:
		return true
	}
	return false
}

// IntentStatus is the status of an intent record.
type IntentStatus string

// Intent statuses.
const (
	IntentStarted  IntentStatus = "started"
	IntentFinished IntentStatus = "finished"
)

// Valid reports whether s is one of the intent statuses.
func (s IntentStatus) Valid() bool { return s == IntentStarted || s == IntentFinished }

// Terminal reports whether the intent's call has its result.
func (s IntentStatus) Terminal() bool { return s == IntentFinished }
