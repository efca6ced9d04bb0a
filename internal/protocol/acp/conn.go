package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/arbor-run/arbor/internal/protocol"
)

// ErrDisconnected: the client's input ended (or arbor is stopping) before
// it answered a request of arbor's.
var ErrDisconnected = errors.New("acp: the client disconnected")

// conn is the JSON-RPC side of the connection: arbor's requests to the
// client and their answers, its notifications, and its answers to the
// client's requests. Every line goes out through the outbox, whose own
// goroutine writes it, so no caller waits for the client to read, and
// none holds mu while writing.
type conn struct {
	out *protocol.Outbox

	mu     sync.Mutex // guards the fields below
	next   int64
	calls  map[int64]chan reply // arbor's requests waiting for an answer
	closed bool
}

// reply is the answer to one of arbor's requests.
type reply struct {
	result json.RawMessage
	err    error
}

func newConn(out *protocol.Outbox) *conn {
	return &conn{out: out, calls: map[int64]chan reply{}}
}

// call sends a request to the client and waits for its answer (decoded
// into result), the end of ctx, or the client's disconnection.
func (c *conn) call(ctx context.Context, method string, params, result any) error {
	ch := make(chan reply, 1) // deliver never blocks
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return fmt.Errorf("%s: %w", method, ErrDisconnected)
	}
	c.next++
	id := c.next
	c.calls[id] = ch
	c.mu.Unlock()
	if err := c.out.Put(outRequest{JSONRPC: "2.0", ID: &id, Method: method, Params: params}); err != nil {
		c.forget(id)
		return err
	}
	select {
	case r := <-ch:
		if r.err != nil {
			return fmt.Errorf("%s: %w", method, r.err)
		}
		if result == nil {
			return nil
		}
		if err := json.Unmarshal(r.result, result); err != nil {
			return fmt.Errorf("%s: the client's answer: %w", method, err)
		}
		return nil
	case <-ctx.Done():
		if c.forget(id) {
			// The client may drop the request (its dialog) now.
			_ = c.notify("$/cancel_request", cancelRequest{RequestID: id})
		}
		return fmt.Errorf("%s: %w", method, context.Cause(ctx))
	}
}

// forget drops call id; it reports whether it was still waiting.
func (c *conn) forget(id int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.calls[id]
	delete(c.calls, id)
	return ok
}

// deliver hands the client's answer m to the call waiting for it; an
// answer nobody waits for (a call given up) is dropped. It reports whether
// a call took it.
func (c *conn) deliver(m message) bool {
	id, err := strconv.ParseInt(string(m.ID), 10, 64)
	if err != nil {
		return false
	}
	c.mu.Lock()
	ch, ok := c.calls[id]
	delete(c.calls, id)
	c.mu.Unlock()
	if !ok {
		return false
	}
	r := reply{result: m.Result}
	if m.Error != nil {
		r.err = m.Error
	}
	ch <- r
	return true
}

// close fails every call waiting and every later one with
// ErrDisconnected. Safe to call twice.
func (c *conn) close() {
	c.mu.Lock()
	calls := c.calls
	c.calls, c.closed = map[int64]chan reply{}, true
	c.mu.Unlock()
	for _, ch := range calls {
		ch <- reply{err: ErrDisconnected}
	}
}

// notify sends a notification.
func (c *conn) notify(method string, params any) error {
	return c.out.Put(outRequest{JSONRPC: "2.0", Method: method, Params: params})
}

// respond answers the client's request id with result.
func (c *conn) respond(id json.RawMessage, result any) error {
	return c.out.Put(outResponse{JSONRPC: "2.0", ID: id, Result: result})
}

// fail answers the client's request id with an error; a nil id (a
// request that could not be read) is written as null.
func (c *conn) fail(id json.RawMessage, code int, msg string) error {
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	return c.out.Put(outError{JSONRPC: "2.0", ID: id, Error: rpcError{Code: code, Message: msg}})
}
