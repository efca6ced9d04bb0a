package web

import (
	"encoding/json"
	"sync"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/tree"
)

// The SSE frames. Each is sent as `id: SEQ`, `event: TYPE` and one `data:`
// line of JSON; SEQ is the bus sequence number of the event.

// NodeFrame (event "node"): a node was created or changed state.
type NodeFrame struct {
	RunID  string          `json:"run_id"`
	From   store.NodeState `json:"from"`
	Node   tree.NodeView   `json:"node"`
	Reason string          `json:"reason,omitempty"`
}

// RunFrame (event "run"): a run ended.
type RunFrame struct {
	RunID   string          `json:"run_id"`
	Outcome store.RunStatus `json:"outcome"`
	Result  string          `json:"result,omitempty"`
	Error   string          `json:"error,omitempty"`
}

// InteractionFrame (event "interaction"): a node waits for an approval
// or an answer; (event "resolved"): it no longer does.
type InteractionFrame struct {
	RunID       string       `json:"run_id"`
	Node        int64        `json:"node,omitempty"`
	Interaction *Interaction `json:"interaction,omitempty"`
	ID          string       `json:"id"`
	Resolution  string       `json:"resolution,omitempty"`
}

// ActivityFrame (events "tool", "tool_done", "message", "usage"): what a
// node's agent did.
type ActivityFrame struct {
	RunID    string     `json:"run_id"`
	Node     int64      `json:"node"`
	CallID   string     `json:"call_id,omitempty"`
	Tool     string     `json:"tool,omitempty"`
	IsError  bool       `json:"is_error,omitempty"`
	Usage    *llm.Usage `json:"usage,omitempty"`
	CostUSD  float64    `json:"cost_usd,omitempty"`
	TextSize int        `json:"text_size,omitempty"`
	// Blocked is what the sandbox refused during the call (tool_done).
	Blocked []string `json:"blocked,omitempty"`
}

// HookFrame (event "hook") is what a project's hook said for the person
// in a node's session (its systemMessage, "Stop says: …").
type HookFrame struct {
	RunID string `json:"run_id"`
	Node  int64  `json:"node"`
	Text  string `json:"text"`
	Level string `json:"level"`
}

// HelloFrame (event "hello") opens every stream, and ResyncFrame (event
// "resync") replaces frames a slow client missed: either way the client
// reads the run again (GET /api/runs/{id}) if Seq moved past what it has.
type HelloFrame struct {
	Seq uint64 `json:"seq"`
}

// ResyncFrame tells a client that frames it fell behind on were dropped.
type ResyncFrame struct {
	Seq uint64 `json:"seq"`
}

// frame is one encoded SSE message, shared by every client it goes to.
type frame struct {
	run  string // "" for frames every client gets
	data []byte
	// node is set for activity frames (tool, tool_done, message, usage),
	// which go only to clients that asked for them.
	node int64
}

// hub turns bus events into frames and hands them to the SSE clients.
// It owns one bus subscription; its handler runs on the subscription's
// goroutine, so looking a session up in the store there blocks only the
// hub's own queue, never the bus.
type hub struct {
	bus   *agent.Bus
	st    store.Store
	qlen  int
	sub   *agent.Subscription
	steer Steerer // nil: every run is followed on the bus only

	routes *routes // session id → run and node; touched only by the subscription goroutine

	mu       sync.Mutex // guards clients, watchers, closed
	clients  map[*client]struct{}
	watchers map[string]*watcher
	closed   bool
	done     chan struct{} // closed by close
	once     sync.Once
	watching sync.WaitGroup // one per watcher goroutine
}

type route struct {
	run  string
	node int64
}

// client is one SSE stream. Frames go to ch without waiting; when ch is
// full the frame is dropped and lagged set, and the stream's writer sends
// a resync frame instead of what it missed.
type client struct {
	run string // "" = every run
	// activity: which activity frames the client gets: none (0), one
	// node's (its id) or every node's (-1).
	activity int64
	ch       chan frame
	kick     chan struct{} // room for one "lagged"
	mu       sync.Mutex    // guards lagged
	lagged   bool
}

func newHub(bus *agent.Bus, st store.Store, qlen int, steer Steerer) *hub {
	h := &hub{bus: bus, st: st, qlen: qlen, steer: steer, routes: newRoutes(st), clients: map[*client]struct{}{},
		watchers: map[string]*watcher{}, done: make(chan struct{})}
	h.sub = bus.Subscribe(h.handle)
	return h
}

func (h *hub) close() {
	h.once.Do(func() {
		h.mu.Lock()
		h.closed = true
		h.mu.Unlock()
		close(h.done)
		h.sub.Close()
		h.watching.Wait()
	})
}

func (h *hub) join(run string, activity int64) *client {
	c := &client{run: run, activity: activity, ch: make(chan frame, h.qlen), kick: make(chan struct{}, 1)}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil
	}
	h.clients[c] = struct{}{}
	return c
}

func (h *hub) leave(c *client) {
	h.mu.Lock()
	delete(h.clients, c)
	h.mu.Unlock()
}

// send hands f to every client that watches its run, never waiting.
func (h *hub) send(f frame) {
	h.mu.Lock()
	targets := make([]*client, 0, len(h.clients))
	for c := range h.clients {
		if (c.run == "" || f.run == "" || c.run == f.run) && (f.node == 0 || c.activity == -1 || c.activity == f.node) {
			targets = append(targets, c)
		}
	}
	h.mu.Unlock()
	for _, c := range targets {
		select {
		case c.ch <- f:
		default:
			c.markLagged()
		}
	}
}

// takeLag reports and clears the client's lag.
func (c *client) takeLag() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.lagged
	c.lagged = false
	return l
}

func (h *hub) handle(ev agent.Event) {
	h.mu.Lock()
	n := len(h.clients)
	h.mu.Unlock()
	// Routes are learned even with no client, so a client that joins
	// later gets the frames of sessions already running.
	var rt route
	switch e := ev.(type) {
	case *tree.NodeChanged:
		if e.Node.SessionID != "" {
			h.routes.learn(e.Node.SessionID, route{e.RunID, e.Node.ID})
		}
		rt = route{e.RunID, e.Node.ID}
	case *tree.AgentStarted:
		h.routes.learn(e.Node.SessionID, route{e.RunID, e.Node.ID})
		return
	case *tree.RunFinished:
		rt = route{run: e.RunID}
		defer h.routes.forget(e.RunID)
	}
	if n == 0 {
		return
	}
	m := agent.MetaOf(ev)
	if rt.run == "" {
		rt = h.routes.lookup(m.SessionID)
	}
	h.translate(m.Seq, ev, rt)
}

// translate sends the frame of event ev of run and node rt, numbered seq.
// Events of runs this process drives come from the bus; those of runs
// another process drives from its owner socket (remote).
func (h *hub) translate(seq uint64, ev agent.Event, rt route) {
	switch e := ev.(type) {
	case *tree.NodeChanged:
		h.emit(seq, "node", e.RunID, NodeFrame{RunID: e.RunID, From: e.From, Node: e.Node, Reason: e.Reason})
	case *tree.RunFinished:
		h.emit(seq, "run", e.RunID, RunFrame{RunID: e.RunID, Outcome: e.Outcome, Result: e.Result, Error: e.Error})
	case *agent.InteractionRequested:
		in := interaction(e.Interaction)
		h.emit(seq, "interaction", rt.run, InteractionFrame{RunID: rt.run, Node: rt.node, Interaction: &in, ID: in.ID})
	case *agent.InteractionResolved:
		h.emit(seq, "resolved", rt.run, InteractionFrame{RunID: rt.run, Node: rt.node, ID: e.ID, Resolution: e.Resolution})
	}
	if rt.node == 0 {
		return
	}
	switch e := ev.(type) {
	case *agent.HookMessage:
		// For the person: every stream of the run gets it, not only
		// those that ask for activity.
		h.emit(seq, "hook", rt.run, HookFrame{RunID: rt.run, Node: rt.node, Text: e.Text, Level: e.Level})
	case *agent.ToolCallStarted:
		h.emitActivity(seq, "tool", rt.run, rt.node, ActivityFrame{RunID: rt.run, Node: rt.node, CallID: e.CallID, Tool: e.Tool})
	case *agent.ToolCallFinished:
		h.emitActivity(seq, "tool_done", rt.run, rt.node, ActivityFrame{RunID: rt.run, Node: rt.node, CallID: e.CallID, Tool: e.Tool, IsError: e.IsError, Blocked: e.Blocked})
	case *agent.AssistantMessage:
		h.emitActivity(seq, "message", rt.run, rt.node, ActivityFrame{RunID: rt.run, Node: rt.node, TextSize: len(e.Message.Text())})
	case *agent.UsageUpdated:
		u := e.Total
		h.emitActivity(seq, "usage", rt.run, rt.node, ActivityFrame{RunID: rt.run, Node: rt.node, Usage: &u, CostUSD: e.TotalCost})
	}
}

// emit encodes v once as an SSE message and sends it. A frame that
// belongs to no run (a session outside any run) is not sent.
func (h *hub) emit(seq uint64, event, run string, v any) {
	if run == "" {
		return
	}
	h.send(frame{run: run, data: encodeFrame(seq, event, v)})
}

// emitActivity is emit for an activity frame of node.
func (h *hub) emitActivity(seq uint64, event, run string, node int64, v any) {
	h.send(frame{run: run, node: node, data: encodeFrame(seq, event, v)})
}

func encodeFrame(seq uint64, event string, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte(`{}`)
	}
	out := make([]byte, 0, len(b)+64)
	out = append(out, "id: "...)
	out = appendUint(out, seq)
	out = append(out, "\nevent: "...)
	out = append(out, event...)
	out = append(out, "\ndata: "...)
	out = append(out, b...)
	return append(out, "\n\n"...)
}

func appendUint(b []byte, n uint64) []byte {
	var buf [20]byte
	i := len(buf)
	for {
		i--
		buf[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			break
		}
	}
	return append(b, buf[i:]...)
}
