package tui

import (
	"slices"
	"time"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/tree"
)

// nodeState is what a front end remembers of one node.
type nodeState struct {
	view tree.NodeView
	// started is when the node first became active; zero before.
	started time.Time
	// sessions are every agent session the node ran (a retry may start a
	// new one); usage is summed over them.
	sessions []string
	// lastTool is the node's latest tool call, "shell go test ./...".
	lastTool string
}

// usageSum is the usage of one session.
type usageSum struct {
	usage       llm.Usage
	cost        float64
	costUnknown bool
}

// tracker follows one run's nodes, maps agent sessions to them and sums
// usage per session. It is not safe for concurrent use; its owner
// serializes calls.
type tracker struct {
	// runID is the run followed; "" until the first tree event names one.
	runID    string
	nodes    map[int64]*nodeState
	sessions map[string]int64
	usage    map[string]*usageSum
	// begun is the time of the run's first event; finished is set by
	// RunFinished.
	begun    time.Time
	finished *tree.RunFinished
}

func newTracker(runID string) *tracker {
	return &tracker{runID: runID, nodes: map[int64]*nodeState{}, sessions: map[string]int64{}, usage: map[string]*usageSum{}}
}

// ours reports whether an event of run id belongs to the followed run,
// adopting id when none was chosen yet.
func (t *tracker) ours(id string) bool {
	if t.runID == "" {
		t.runID = id
	}
	return id == t.runID
}

// node applies a NodeChanged of the followed run and returns the node's
// state; ok is false for other runs' events.
func (t *tracker) node(e *tree.NodeChanged) (n *nodeState, ok bool) {
	if !t.ours(e.RunID) {
		return nil, false
	}
	if t.begun.IsZero() {
		t.begun = e.At
	}
	n = t.nodes[e.Node.ID]
	if n == nil {
		n = &nodeState{}
		t.nodes[e.Node.ID] = n
	}
	n.view = e.Node
	if n.started.IsZero() && e.Node.State != tree.StatePending {
		n.started = e.At
	}
	if s := e.Node.SessionID; s != "" {
		if _, seen := t.sessions[s]; !seen {
			t.sessions[s] = e.Node.ID
			n.sessions = append(n.sessions, s)
		}
	}
	return n, true
}

// finish records the end of the followed run; ok is false for other runs.
func (t *tracker) finish(e *tree.RunFinished) bool {
	if !t.ours(e.RunID) {
		return false
	}
	t.finished = e
	return true
}

// nodeOf returns the node whose agent runs session s.
func (t *tracker) nodeOf(s string) (*nodeState, int64, bool) {
	id, ok := t.sessions[s]
	if !ok {
		return nil, 0, false
	}
	return t.nodes[id], id, true
}

// toolStarted records a call as its node's latest activity and returns the
// node id; ok is false when the session is no node of the run.
func (t *tracker) toolStarted(e *agent.ToolCallStarted) (id int64, ok bool) {
	n, id, ok := t.nodeOf(e.SessionID)
	if !ok {
		return 0, false
	}
	n.lastTool = e.Tool + " " + brief(e.Input)
	return id, true
}

// toolBlocked records what the sandbox refused a node's call as its
// latest activity and returns the node id; ok is false when nothing was
// blocked or the session is no node of the run.
func (t *tracker) toolBlocked(e *agent.ToolCallFinished) (id int64, ok bool) {
	if len(e.Blocked) == 0 {
		return 0, false
	}
	n, id, ok := t.nodeOf(e.SessionID)
	if !ok {
		return 0, false
	}
	n.lastTool = "⊘ " + firstLine(e.Blocked[0], textCut)
	return id, true
}

// hookMessage records what a node's hook said for the person as its
// latest activity and returns the node id; ok is false when the session
// is no node of the run.
func (t *tracker) hookMessage(e *agent.HookMessage) (id int64, ok bool) {
	n, id, ok := t.nodeOf(e.SessionID)
	if !ok {
		return 0, false
	}
	n.lastTool = "ℹ " + firstLine(e.Text, textCut)
	return id, true
}

// notified records a node's progress note as its latest activity and
// returns the node id; ok is false for other runs and unknown nodes.
func (t *tracker) notified(e *tree.Notified) (id int64, ok bool) {
	if !t.ours(e.RunID) {
		return 0, false
	}
	n := t.nodes[e.From.ID]
	if n == nil {
		return 0, false
	}
	n.lastTool = "notify " + firstLine(e.Message, textCut)
	return e.From.ID, true
}

// addUsage adds one model call to its session, whether or not the session
// is known to belong to a node yet: the mapping may come later.
func (t *tracker) addUsage(e *agent.UsageUpdated) {
	u := t.usage[e.SessionID]
	if u == nil {
		u = &usageSum{}
		t.usage[e.SessionID] = u
	}
	u.usage = u.usage.Add(e.Call)
	u.cost += e.CallCost
	if !e.CostKnown {
		u.costUnknown = true
	}
}

// usageOf sums the usage of n's sessions.
func (t *tracker) usageOf(n *nodeState) usageSum {
	var sum usageSum
	for _, s := range n.sessions {
		if u := t.usage[s]; u != nil {
			sum.usage = sum.usage.Add(u.usage)
			sum.cost += u.cost
			sum.costUnknown = sum.costUnknown || u.costUnknown
		}
	}
	return sum
}

// total sums the usage of every node of the run.
func (t *tracker) total() usageSum {
	var sum usageSum
	for _, n := range t.nodes {
		u := t.usageOf(n)
		sum.usage = sum.usage.Add(u.usage)
		sum.cost += u.cost
		sum.costUnknown = sum.costUnknown || u.costUnknown
	}
	return sum
}

// ordered returns the nodes depth first, children by id, each with its
// depth. A node whose parent is unknown is shown as a root.
func (t *tracker) ordered() (list []*nodeState, depth []int) {
	children := map[int64][]int64{}
	var roots []int64
	for id, n := range t.nodes {
		if _, ok := t.nodes[n.view.ParentID]; ok && n.view.ParentID != id {
			children[n.view.ParentID] = append(children[n.view.ParentID], id)
		} else {
			roots = append(roots, id)
		}
	}
	var walk func(id int64, d int)
	walk = func(id int64, d int) {
		list = append(list, t.nodes[id])
		depth = append(depth, d)
		kids := children[id]
		slices.Sort(kids)
		for _, k := range kids {
			walk(k, d+1)
		}
	}
	slices.Sort(roots)
	for _, r := range roots {
		walk(r, 0)
	}
	return list, depth
}

// Resumed hands handle the stored nodes of run runID as they stand, as
// changes within their states: a view of a resumed run then shows the
// nodes that were already running (they change state only later) and
// their tool calls. Call it before subscribing handle to the bus, so that
// no newer change is overwritten.
func Resumed(runID string, nodes []store.Node, handle func(agent.Event)) {
	for _, n := range nodes {
		v := tree.View(n)
		handle(&tree.NodeChanged{RunID: runID, From: v.State, Node: v})
	}
}
