package owner

import (
	"bufio"
	"context"
	"encoding/json"
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
	if o.WriteTimeout <= 0 {
		o.WriteTimeout = WriteTimeout
	}
	s := &server{o: o, ctx: ctx, quit: make(chan struct{})}
	s.wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			s.wg.Go(func() { s.handle(conn) })
		}
	})
	var once sync.Once
	return func() {
		once.Do(func() {
			ln.Close()
			close(s.quit)
			s.wg.Wait()
			if now, err := os.Stat(o.Path); err == nil && statErr == nil && os.SameFile(mine, now) {
				_ = os.Remove(o.Path)
			}
		})
	}
}

type server struct {
	o    Options
	ctx  context.Context
	quit chan struct{} // closed by stop
	wg   sync.WaitGroup
}

func (s *server) handle(conn net.Conn) {
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(WriteTimeout)) // a silent client cannot hold shutdown
	line, err := bufio.NewReader(io.LimitReader(conn, 1<<20)).ReadBytes('\n')
	var req Request
	if err == nil {
		err = json.Unmarshal(line, &req)
	}
	if err != nil {
		reply(conn, failure(fmt.Errorf("%w: %v", ErrBadRequest, err)))
		return
	}
	if req.V > Version {
		reply(conn, failure(fmt.Errorf("%w %d: this owner speaks version %d", ErrVersion, req.V, Version)))
		return
	}
	if req.kind() == KindSubscribe {
		s.subscribe(conn)
		return
	}
	reply(conn, s.do(req))
}

func reply(conn net.Conn, r Reply) { _ = json.NewEncoder(conn).Encode(r) }

// do carries out one request through the engine.
func (s *server) do(req Request) Reply {
	e, run := s.o.Engine, s.o.RunID
	switch req.kind() {
	case KindAnswer:
		if err := e.Answer(s.ctx, run, req.Node, req.Answer); err != nil {
			return failure(err)
		}
		return Reply{OK: true}
	case KindTool:
		return s.tool(req)
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
func (s *server) tool(req Request) Reply {
	ts, err := s.o.Engine.NodeTools(s.o.RunID, req.Node)
	if err != nil {
		return failure(err)
	}
	for _, t := range ts {
		if t.Info().Name == req.Tool {
			res := t.Run(s.ctx, tool.Call{Input: req.Args})
			return Reply{OK: true, Content: res.Content, IsError: res.IsError}
		}
	}
	return failure(fmt.Errorf("%w: node #%d has no tool %q", ErrBadRequest, req.Node, req.Tool))
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
