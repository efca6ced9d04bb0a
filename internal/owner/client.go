package owner

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/tree"
)

// ErrUnreachable says no owner listens on the socket (none drives the
// run, or it runs on another machine); nothing was sent.
var ErrUnreachable = errors.New("no process listens on the run's socket")

// Client sends requests to the owner listening on a socket.
type Client struct {
	// Socket is the owner's socket: the address its lease names.
	Socket string
}

// call sends req and reads the reply. It fails with ErrUnreachable when
// nothing listens, with a *RemoteError when the owner refused, and with
// another error when the exchange broke (the request may have been
// carried out).
func (c Client) call(ctx context.Context, req Request) (Reply, error) {
	conn, err := c.dial(ctx)
	if err != nil {
		return Reply{}, err
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	if err := json.NewEncoder(conn).Encode(req); err != nil {
		return Reply{}, fmt.Errorf("%w: %v", ErrUnreachable, err)
	}
	var rep Reply
	if err := json.NewDecoder(conn).Decode(&rep); err != nil {
		return Reply{}, fmt.Errorf("the process driving the run did not confirm %s: %w", req.kind(), err)
	}
	return rep, rep.err()
}

func (c Client) dial(ctx context.Context) (net.Conn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", c.Socket)
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
	if err := json.NewEncoder(conn).Encode(Request{V: Version, Kind: KindSubscribe}); err != nil {
		return fmt.Errorf("%w: %v", ErrUnreachable, err)
	}
	sc := bufio.NewScanner(conn)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	if !sc.Scan() {
		return fmt.Errorf("%w: no reply to subscribe: %v", ErrUnreachable, sc.Err())
	}
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
