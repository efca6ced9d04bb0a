package owner

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/tool"
	"github.com/arbor-run/arbor/internal/tree"
)

// WriteTimeout drops a subscriber whose connection takes no bytes for
// this long, and bounds a request's exchange.
const WriteTimeout = 10 * time.Second

// Options configure Serve.
type Options struct {
	// Path is the socket's file (app.App.AnswerSocket).
	Path  string
	RunID string
	// Engine drives the run; Bus is the bus it publishes on.
	Engine *tree.Engine
	Bus    *agent.Bus
	// Diag gets a line when the socket cannot be served.
	Diag io.Writer
	// WriteTimeout drops a subscriber that takes no bytes for this long
	// (default WriteTimeout).
	WriteTimeout time.Duration
	// Broker raises the approvals and questions of remote turns
	// (KindInteract); Turns are the turns handed out (tree.Remote).
	Broker *agent.Broker
	Turns  *Turns
	// Token is what every request on a TCP endpoint must carry (ServeTCP).
	Token string
}

// Serve listens on o.Path for requests about run o.RunID until stop is
// called. It must only be called by the run's owner (under its lease,
// see tree.DriveOptions.Serve): a socket file already there is then a
// dead or former owner's and is replaced. Stop ends the subscriptions
// (each first writes what the bus published before it), waits for every
// request, and removes the file only if it is still this listener's,
// never a later owner's. Failing to listen is reported on o.Diag and
// otherwise ignored: answers then go through the store.
func Serve(ctx context.Context, o Options) (stop func()) {
	if err := os.MkdirAll(filepath.Dir(o.Path), 0o700); err != nil {
		fmt.Fprintf(o.Diag, "arbor: answers from other shells disabled: %v\n", err)
		return func() {}
	}
	_ = os.Remove(o.Path) // the socket of an owner that is gone
	ln, err := net.Listen("unix", o.Path)
	if err != nil {
		fmt.Fprintf(o.Diag, "arbor: answers from other shells disabled: %v\n", err)
		return func() {}
	}
	// Close must not unlink the path blindly: it may be a later owner's.
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	mine, statErr := os.Stat(o.Path)
	s := serveOn(ctx, ln, o, "")
	var once sync.Once
	return func() {
		once.Do(func() {
			s.stop()
			if now, err := os.Stat(o.Path); err == nil && statErr == nil && os.SameFile(mine, now) {
				_ = os.Remove(o.Path)
			}
		})
	}
}

// ServeTCP is Serve on a TCP address (host:port; port 0 picks one) for
// the node workers of a cluster run (tree.Remote), which may be on other
// machines: every request must carry o.Token, which must be set. It
// returns the address listened on. Stop is as Serve's.
func ServeTCP(ctx context.Context, o Options, addr string) (bound string, stop func(), err error) {
	if o.Token == "" {
		return "", nil, errors.New("owner: a TCP endpoint needs a token")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, fmt.Errorf("owner endpoint: %w", err)
	}
	s := serveOn(ctx, ln, o, o.Token)
	var once sync.Once
	return ln.Addr().String(), func() { once.Do(s.stop) }, nil
}

// serveOn serves ln until stop; requests need token unless it is "".
func serveOn(ctx context.Context, ln net.Listener, o Options, token string) *server {
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = WriteTimeout
	}
	rctx, cancel := context.WithCancel(ctx)
	s := &server{o: o, ctx: rctx, cancel: cancel, quit: make(chan struct{}), ln: ln}
	s.wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			s.wg.Go(func() { s.handle(conn, token) })
		}
	})
	return s
}

// stop closes the listener, ends the subscriptions and the requests
// being carried out, and waits for them.
func (s *server) stop() {
	s.ln.Close()
	close(s.quit)
	s.cancel()
	s.wg.Wait()
}

type server struct {
	o Options
	// ctx is the requests' context, cancelled by stop.
	ctx    context.Context
	cancel context.CancelFunc
	quit   chan struct{} // closed by stop
	ln     net.Listener
	wg     sync.WaitGroup
}

func (s *server) handle(conn net.Conn, token string) {
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(WriteTimeout)) // a silent client cannot hold shutdown
	br := bufio.NewReader(conn)
	req, err := readRequest(br)
	if err != nil {
		if !errors.Is(err, ErrBadRequest) {
			err = fmt.Errorf("%w: %v", ErrBadRequest, err)
		}
		reply(conn, failure(err))
		return
	}
	if req.kind() == KindSubscribe {
		if err := admit(req, token); err != nil {
			reply(conn, failure(err))
			return
		}
		s.subscribe(conn)
		return
	}
	// A connection carries requests one after another, each answered
	// before the next is read (a worker's turn reuses its connections). A
	// request may take long (a tree tool that waits, an approval): it runs
	// until it is done, the owner stops, or the client goes away — the
	// reader, waiting for the next request meanwhile, sees the connection
	// close and cancels the request. Only this goroutine writes replies.
	_ = conn.SetDeadline(time.Time{})
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	next := make(chan incoming)
	done := make(chan struct{})
	gone := make(chan struct{})
	go func() {
		defer close(gone)
		for {
			req, err := readRequest(br)
			if err != nil && !errors.Is(err, ErrBadRequest) {
				cancel() // the client went away, or its connection broke
			}
			select {
			case next <- incoming{req, err}:
			case <-done:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	defer func() {
		close(done)
		conn.Close()
		<-gone
	}()
	in := incoming{req: req}
	for {
		var rep Reply
		switch {
		case errors.Is(in.err, ErrBadRequest):
			rep = failure(in.err)
		case in.err != nil:
			return
		default:
			if err := admit(in.req, token); err != nil {
				rep = failure(err)
			} else {
				rep = s.do(ctx, in.req)
			}
		}
		_ = conn.SetWriteDeadline(time.Now().Add(WriteTimeout))
		if err := json.NewEncoder(conn).Encode(rep); err != nil || in.err != nil {
			return
		}
		select {
		case in = <-next:
		case <-s.quit:
			return
		}
	}
}

// incoming is a request read from a connection, or why none was.
type incoming struct {
	req Request
	err error
}

// readRequest reads one request line of at most maxRequest bytes.
func readRequest(br *bufio.Reader) (Request, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > maxRequest {
			return Request{}, fmt.Errorf("%w: a request line longer than %d bytes", ErrBadRequest, maxRequest)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			return Request{}, err
		}
		var req Request
		if err := json.Unmarshal(line, &req); err != nil {
			return Request{}, fmt.Errorf("%w: %v", ErrBadRequest, err)
		}
		return req, nil
	}
}

// admit checks a request's token and version.
func admit(req Request, token string) error {
	if !authorized(req, token) {
		return ErrUnauthorized
	}
	if req.V > Version {
		return fmt.Errorf("%w %d: this owner speaks version %d", ErrVersion, req.V, Version)
	}
	return nil
}

// maxRequest bounds a request line (a batch of events included).
const maxRequest = 16 << 20

func reply(conn net.Conn, r Reply) { _ = json.NewEncoder(conn).Encode(r) }

// do carries out one request through the engine.
func (s *server) do(ctx context.Context, req Request) Reply {
	e, run := s.o.Engine, s.o.RunID
	if turnKind(req.Kind) || (req.Kind == KindTool && req.Turn != "") {
		return s.doTurn(ctx, req)
	}
	switch req.kind() {
	case KindAnswer:
		if err := e.Answer(ctx, run, req.Node, req.Answer); err != nil {
			return failure(err)
		}
		return Reply{OK: true}
	case KindTool:
		return s.tool(ctx, req)
	case KindControl:
		st, err := e.Control(run, req.Node, req.Op)
		if err != nil {
			return failure(err)
		}
		return Reply{OK: true, State: st}
	case KindPending:
		p, err := e.Pending(run)
		if err != nil {
			return failure(err)
		}
		return Reply{OK: true, Pending: p}
	case KindResolve:
		if req.Resolution == nil {
			return failure(fmt.Errorf("%w: resolve needs a resolution", ErrBadRequest))
		}
		if err := e.Resolve(run, req.Interaction, req.Resolution.response()); err != nil {
			return failure(err)
		}
		return Reply{OK: true}
	}
	return failure(fmt.Errorf("%w %q: want answer, tool, control, pending, resolve or subscribe", ErrUnknownKind, req.Kind))
}

// tool runs a forwarded tree tool call as node req.Node's agent would.
func (s *server) tool(ctx context.Context, req Request) Reply {
	ts, err := s.o.Engine.NodeTools(s.o.RunID, req.Node)
	if err != nil {
		return failure(err)
	}
	return runTool(ctx, ts, req.Node, req)
}

// runTool runs req's call of tool req.Tool, one of node's tools ts.
func runTool(ctx context.Context, ts []tool.Tool, node int64, req Request) Reply {
	for _, t := range ts {
		if tool.Name(t) == req.Tool {
			res := t.Run(ctx, tool.Call{ID: req.CallID, Input: req.Args})
			return Reply{OK: true, Content: res.Content, IsError: res.IsError, EndTurn: res.EndTurn}
		}
	}
	return failure(fmt.Errorf("%w: node #%d has no tool %q", ErrBadRequest, node, req.Tool))
}

// subscribe streams the run's events to conn until the client closes it,
// a write takes longer than WriteTimeout, or the socket stops. The
// events queue on a bus subscription of their own, so the owner never
// waits for this client.
func (s *server) subscribe(conn net.Conn) {
	_ = conn.SetDeadline(time.Time{})
	ready := make(chan struct{})
	gone := make(chan struct{}) // closed when a write failed
	var sessions map[string]int64
	enc := json.NewEncoder(conn)
	failed := false
	sub := s.o.Bus.Subscribe(func(ev agent.Event) {
		<-ready
		if failed {
			return
		}
		node, ok := s.route(sessions, ev)
		if !ok {
			return
		}
		line, ok := wrap(ev, node)
		if !ok {
			return
		}
		_ = conn.SetWriteDeadline(time.Now().Add(s.o.WriteTimeout))
		if err := enc.Encode(line); err != nil {
			failed = true
			close(gone)
		}
	})
	seq := s.o.Bus.Seq()
	var err error
	sessions, err = s.o.Engine.Sessions(s.o.RunID)
	if err != nil {
		sessions = map[string]int64{}
		close(ready)
		sub.Close()
		reply(conn, failure(err))
		return
	}
	_ = conn.SetWriteDeadline(time.Now().Add(WriteTimeout))
	reply(conn, Reply{OK: true, Seq: seq})
	close(ready)
	// The client sends nothing more: a read returns when it closes.
	closed := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, conn)
		close(closed)
	}()
	select {
	case <-closed:
	case <-gone:
	case <-s.quit:
		sub.Flush() // the run's last events (its end) reach the client
	}
	sub.Close()
	conn.Close()
	<-closed
}

// route says whether ev belongs to the run, and which node's agent it
// comes from; it learns new sessions from the run's node events. It runs
// on the subscription's goroutine only.
func (s *server) route(sessions map[string]int64, ev agent.Event) (int64, bool) {
	switch v := ev.(type) {
	case *tree.NodeChanged:
		if v.RunID != s.o.RunID {
			return 0, false
		}
		if v.Node.SessionID != "" {
			sessions[v.Node.SessionID] = v.Node.ID
		}
		return v.Node.ID, true
	case *tree.AgentStarted:
		if v.RunID != s.o.RunID {
			return 0, false
		}
		sessions[v.Node.SessionID] = v.Node.ID
		return v.Node.ID, true
	case *tree.RunFinished:
		return 0, v.RunID == s.o.RunID
	}
	m := agent.MetaOf(ev)
	if m.SessionID == s.o.RunID {
		return 0, true
	}
	node, ok := sessions[m.SessionID]
	return node, ok
}
