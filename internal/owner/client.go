package owner

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/tool"
	"github.com/arbor-run/arbor/internal/tree"
)

// ErrUnreachable says no owner listens on the socket (none drives the
// run, or it runs on another machine); nothing was sent.
var ErrUnreachable = errors.New("no process listens on the run's socket")

// Client sends requests to the owner listening on a socket.
type Client struct {
	// Socket is the owner's socket: the address its lease names; with
	// Network "tcp", the host:port of its TCP endpoint (ServeTCP), whose
	// requests carry Token.
	Socket  string
	Network string
	Token   string
	// Pool, when set, reuses connections from one request to the next.
	Pool *Pool
	// AcceptTimeout bounds the wait for an owner to accept a
	// subscription (Subscribe); 0 is WriteTimeout. An owner that is
	// stopped (SIGSTOP) or hung accepts connections and never answers.
	AcceptTimeout time.Duration
}

// call sends req and reads the reply. It fails with ErrUnreachable when
// nothing listens, with a *RemoteError when the owner refused, and with
// another error when the exchange broke (the request may have been
// carried out).
func (c Client) call(ctx context.Context, req Request) (Reply, error) {
	req.Token = c.Token
	if c.Pool == nil {
		conn, err := c.dial(ctx)
		if err != nil {
			return Reply{}, err
		}
		defer conn.Close()
		return exchange(ctx, conn, bufio.NewReader(conn), req)
	}
	for retried := false; ; retried = true {
		pc, reused, err := c.Pool.get(ctx, c.dial)
		if err != nil {
			return Reply{}, err
		}
		rep, err := exchange(ctx, pc.Conn, pc.r, req)
		var remote *RemoteError
		if err == nil || errors.As(err, &remote) {
			c.Pool.put(pc)
			return rep, err
		}
		pc.Close()
		// An idle connection the owner closed fails before the owner
		// read the request: send it once more on a new one.
		if !reused || retried || ctx.Err() != nil {
			return rep, err
		}
	}
}

// exchange writes req on conn and reads its reply from r.
func exchange(ctx context.Context, conn net.Conn, r *bufio.Reader, req Request) (Reply, error) {
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	if err := json.NewEncoder(conn).Encode(req); err != nil {
		return Reply{}, fmt.Errorf("%w: %v", ErrUnreachable, err)
	}
	line, err := r.ReadBytes('\n')
	var rep Reply
	if err == nil {
		err = json.Unmarshal(line, &rep)
	}
	if err != nil {
		if ctx.Err() != nil {
			err = context.Cause(ctx)
		}
		return Reply{}, fmt.Errorf("the process driving the run did not confirm %s: %w", req.kind(), err)
	}
	return rep, rep.err()
}

// Pool keeps a Client's connections to its owner for the requests that
// follow (a worker's turn sends many); Close closes them. Connections
// idle for poolIdle are not reused. Safe for concurrent use.
type Pool struct {
	mu     sync.Mutex
	idle   []*pooled
	closed bool
}

type pooled struct {
	net.Conn
	r    *bufio.Reader
	used time.Time
}

// poolIdle is how long an idle connection is kept.
const poolIdle = 10 * time.Second

func (p *Pool) get(ctx context.Context, dial func(context.Context) (net.Conn, error)) (pc *pooled, reused bool, err error) {
	now := time.Now()
	p.mu.Lock()
	for len(p.idle) > 0 {
		pc = p.idle[len(p.idle)-1]
		p.idle = p.idle[:len(p.idle)-1]
		if now.Sub(pc.used) < poolIdle {
			break
		}
		pc.Close()
		pc = nil
	}
	p.mu.Unlock()
	if pc != nil {
		return pc, true, nil
	}
	conn, err := dial(ctx)
	if err != nil {
		return nil, false, err
	}
	return &pooled{Conn: conn, r: bufio.NewReader(conn)}, false, nil
}

func (p *Pool) put(pc *pooled) {
	pc.used = time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		pc.Close()
		return
	}
	p.idle = append(p.idle, pc)
}

// Close closes the idle connections, and those returned from now on.
func (p *Pool) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for _, pc := range p.idle {
		pc.Close()
	}
	p.idle = nil
}

func (c Client) dial(ctx context.Context) (net.Conn, error) {
	var d net.Dialer
	network := c.Network
	if network == "" {
		network = "unix"
	}
	conn, err := d.DialContext(ctx, network, c.Socket)
	if err != nil {
		return nil, fmt.Errorf("%w (%s): %v", ErrUnreachable, c.Socket, err)
	}
	return conn, nil
}

// Answer answers ask node id.
func (c Client) Answer(ctx context.Context, id int64, text string) error {
	_, err := c.call(ctx, Request{V: Version, Kind: KindAnswer, Node: id, Answer: text})
	return err
}

// Tool runs tree tool name of node id with args in the owner.
func (c Client) Tool(ctx context.Context, id int64, name string, args json.RawMessage) (content string, isError bool, err error) {
	rep, err := c.call(ctx, Request{V: Version, Kind: KindTool, Node: id, Tool: name, Args: args})
	return rep.Content, rep.IsError, err
}

// Control stops, pauses or resumes node id and returns its new state.
func (c Client) Control(ctx context.Context, id int64, op tree.Op) (tree.NodeState, error) {
	rep, err := c.call(ctx, Request{V: Version, Kind: KindControl, Node: id, Op: op})
	return rep.State, err
}

// Pending lists the run's pending interactions.
func (c Client) Pending(ctx context.Context) ([]agent.Interaction, error) {
	rep, err := c.call(ctx, Request{V: Version, Kind: KindPending})
	return rep.Pending, err
}

// Resolve resolves the run's pending interaction iid.
func (c Client) Resolve(ctx context.Context, iid string, resp agent.Response) error {
	_, err := c.call(ctx, Request{V: Version, Kind: KindResolve, Interaction: iid, Resolution: resolution(resp)})
	return err
}

// Subscribe streams the run's events: once the owner has accepted the
// subscription it calls ready (with the owner's bus sequence number),
// then fn with each event in the owner's order, on the caller's
// goroutine, until ctx ends or the owner closes the stream (it stopped
// driving the run, or dropped this slow subscriber). It returns the
// reason the stream ended; fn must not block for long, or the owner
// drops the subscription.
func (c Client) Subscribe(ctx context.Context, ready func(seq uint64), fn func(Event)) error {
	conn, err := c.dial(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	accept := c.AcceptTimeout
	if accept <= 0 {
		accept = WriteTimeout
	}
	_ = conn.SetDeadline(time.Now().Add(accept))
	if err := json.NewEncoder(conn).Encode(Request{V: Version, Kind: KindSubscribe, Token: c.Token}); err != nil {
		return fmt.Errorf("%w: %v", ErrUnreachable, err)
	}
	sc := bufio.NewScanner(conn)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	if !sc.Scan() {
		return fmt.Errorf("%w: no reply to subscribe: %v", ErrUnreachable, sc.Err())
	}
	_ = conn.SetDeadline(time.Time{}) // accepted: the events come when they come
	var rep Reply
	if err := json.Unmarshal(sc.Bytes(), &rep); err != nil {
		return fmt.Errorf("subscribe: reply: %w", err)
	}
	if err := rep.err(); err != nil {
		return err
	}
	ready(rep.Seq)
	for sc.Scan() {
		var e Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return fmt.Errorf("subscribe: event: %w", err)
		}
		if e.Value() != nil {
			fn(e)
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("subscribe: %w", err)
	}
	return nil
}

// TurnClient is a remote turn's side of the protocol: the node worker
// running turn Turn reaches the owner that handed it out (Turns).
type TurnClient struct {
	Client
	Turn string
}

func (c TurnClient) req(k Kind) Request { return Request{V: Version, Kind: k, Turn: c.Turn} }

// Spec returns the turn's spec.
func (c TurnClient) Spec(ctx context.Context) (TurnSpec, error) {
	rep, err := c.call(ctx, c.req(KindTurn))
	if err != nil {
		return TurnSpec{}, err
	}
	if rep.Turn == nil {
		return TurnSpec{}, fmt.Errorf("%w: the owner sent no turn spec", ErrBadRequest)
	}
	return *rep.Turn, nil
}

// Prompt returns the node's first message.
func (c TurnClient) Prompt(ctx context.Context) (string, error) {
	rep, err := c.call(ctx, c.req(KindPrompt))
	return rep.Content, err
}

// Gate passes the budgets' gate with a model call's estimate.
func (c TurnClient) Gate(ctx context.Context, est llm.Usage, cost float64) error {
	r := c.req(KindGate)
	r.Usage, r.Cost = &est, cost
	_, err := c.call(ctx, r)
	return err
}

// Charge charges a model call's usage and cost.
func (c TurnClient) Charge(ctx context.Context, u llm.Usage, cost float64) error {
	r := c.req(KindCharge)
	r.Usage, r.Cost = &u, cost
	_, err := c.call(ctx, r)
	return err
}

// Flush writes the nodes the turn's tree tools created.
func (c TurnClient) Flush(ctx context.Context) error {
	_, err := c.call(ctx, c.req(KindFlush))
	return err
}

// Draft recovers the result complete stored before a crash.
func (c TurnClient) Draft(ctx context.Context, draft string) error {
	r := c.req(KindDraft)
	r.Answer = draft
	_, err := c.call(ctx, r)
	return err
}

// TreeTool runs the turn's tree tool name.
func (c TurnClient) TreeTool(ctx context.Context, name string, call tool.Call) (tool.Result, error) {
	r := c.req(KindTool)
	r.Tool, r.CallID, r.Args = name, call.ID, call.Input
	rep, err := c.call(ctx, r)
	return tool.Result{Content: rep.Content, IsError: rep.IsError, EndTurn: rep.EndTurn}, err
}

// Interact raises an approval or a question of the turn's agent on the
// owner and returns its resolution.
func (c TurnClient) Interact(ctx context.Context, in agent.Interaction) (agent.Response, error) {
	r := c.req(KindInteract)
	r.Ask = &in
	rep, err := c.call(ctx, r)
	if err != nil {
		return agent.Response{}, err
	}
	if rep.Resolution == nil {
		return agent.Response{}, fmt.Errorf("%w: the owner sent no resolution", ErrBadRequest)
	}
	return rep.Resolution.response(), nil
}

// Publish publishes agent events of the turn on the owner's bus; those
// that are not streamed (deltas) are left out.
func (c TurnClient) Publish(ctx context.Context, evs []agent.Event) error {
	r := c.req(KindEvents)
	for _, ev := range evs {
		if e, ok := turnEvent(ev); ok {
			r.Events = append(r.Events, e)
		}
	}
	if len(r.Events) == 0 {
		return nil
	}
	_, err := c.call(ctx, r)
	return err
}

// Ping fails with ErrStaleTurn when the owner no longer has the turn,
// and with ErrUnreachable when no owner listens.
func (c TurnClient) Ping(ctx context.Context) error {
	_, err := c.call(ctx, c.req(KindPing))
	return err
}

// End ends the turn with res.
func (c TurnClient) End(ctx context.Context, res agent.Result) error {
	r := c.req(KindTurnEnd)
	e := EndOf(res)
	r.End = &e
	_, err := c.call(ctx, r)
	return err
}
