// Package streamjson serves arbor's stream-json headless protocol (spec
// 001/003, a dialect of the Claude Code SDK's stream-json protocol) over
// JSONL on stdin/stdout, so programs built on that SDK, gateways and shells
// can drive the one agent loop.
//
// Invariants: stdout carries only protocol lines; every control_request of
// the client gets exactly one control_response; lines that are not JSON
// are ignored with a line on the diagnostics stream; user messages are run
// one turn at a time, in order, and on end of input the queued turns are
// finished before Serve returns.
package streamjson

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/protocol"
)

// Options configure a server; the CLI fills them from its flags.
type Options struct {
	Model    string
	Resume   string
	MaxTurns int
	// AllowedTools are allowed without asking for this session.
	AllowedTools []string
	// PartialMessages sends stream_event lines (text and tool deltas).
	PartialMessages bool
	// Prompt, when set, is the one turn of single-prompt mode.
	Prompt string
	// AppendSystemPrompt is added to the system prompt.
	AppendSystemPrompt string
}

// Server is one stream-json session over one pair of streams.
type Server struct {
	app  *app.App
	opts Options
	out  *protocol.Writer
	diag io.Writer
	// events translates the bus's events into output lines; a turn flushes
	// it before writing its result, so the result follows the turn's lines.
	events *agent.Subscription

	mu      sync.Mutex // guards the fields below
	sess    *app.Session
	cancel  context.CancelFunc // of the running turn, nil when idle
	asks    map[string]string  // our request id → broker interaction id
	authReq chan authReply     // set while waiting for auth_response
	turnCtx context.Context
	queue   chan userTurn
	// hostShell is set when the client runs shell commands itself; shells
	// holds the commands it is running.
	hostShell bool
	shells    hostShells
	// inputDone is closed when the input ends, so nothing waits for an
	// answer that can no longer come.
	inputDone chan struct{}

	// stepStart and apiTime measure the model time of the running turn
	// (from each step's start to its assistant message), in nanoseconds.
	stepStart atomic.Int64
	apiTime   atomic.Int64
}

type userTurn struct {
	text      string
	sessionID string
}

// Serve runs the protocol until in ends (after finishing queued turns),
// a shutdown request arrives, or ctx is cancelled.
func Serve(ctx context.Context, a *app.App, in io.Reader, out, diag io.Writer, o Options) error {
	s := &Server{app: a, opts: o, out: protocol.NewWriter(out), diag: diag, asks: map[string]string{},
		queue: make(chan userTurn, 64), inputDone: make(chan struct{})}
	s.events = a.Bus.Subscribe(s.translate)
	defer s.events.Close()

	ctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	wg.Go(func() { s.runTurns(ctx) })

	if o.Prompt != "" {
		s.queue <- userTurn{text: o.Prompt}
		close(s.queue)
		close(s.inputDone)
		wg.Wait()
		return nil
	}
	err := s.read(ctx, in, stop)
	close(s.inputDone)
	close(s.queue)
	wg.Wait()
	return err
}

// read handles input lines until EOF, shutdown, or the cancellation of
// ctx (SIGTERM), which ends it at once even while no input arrives.
func (s *Server) read(ctx context.Context, in io.Reader, stop context.CancelFunc) error {
	err := protocol.NewReader(in, 0).Each(ctx, func(line protocol.Line) bool {
		if shutdown := s.handle(ctx, line); shutdown {
			stop()
			return false
		}
		return true
	}, func(le *protocol.LineError) {
		fmt.Fprintf(s.diag, "arbor: stream-json: ignoring input line %d: %v\n", le.Number, le)
	})
	if err != nil {
		return fmt.Errorf("read input: %w", err)
	}
	return nil
}

// handle dispatches one input line; it reports a shutdown request.
func (s *Server) handle(ctx context.Context, line protocol.Line) (shutdown bool) {
	switch line.Type {
	case typeUser:
		var u userInput
		if err := line.Decode(&u); err != nil {
			fmt.Fprintf(s.diag, "arbor: stream-json: line %d: %v\n", line.Number, err)
			return false
		}
		if s.hostResults(u) {
			return false
		}
		text, err := u.text()
		if err != nil {
			fmt.Fprintf(s.diag, "arbor: stream-json: line %d: %v\n", line.Number, err)
			return false
		}
		s.queue <- userTurn{text: text, sessionID: u.SessionID}
	case typeControlRequest:
		var req controlRequestIn
		if err := line.Decode(&req); err != nil {
			fmt.Fprintf(s.diag, "arbor: stream-json: line %d: %v\n", line.Number, err)
			return false
		}
		return s.control(ctx, req)
	case typeControlResponse:
		var resp controlResponseIn
		if err := line.Decode(&resp); err != nil {
			fmt.Fprintf(s.diag, "arbor: stream-json: line %d: %v\n", line.Number, err)
			return false
		}
		s.answer(resp)
	case typeRegistryRequest:
		var req registryRequest
		if err := line.Decode(&req); err != nil {
			fmt.Fprintf(s.diag, "arbor: stream-json: line %d: %v\n", line.Number, err)
			return false
		}
		s.registry(ctx, req)
	default:
		fmt.Fprintf(s.diag, "arbor: stream-json: line %d: unknown message type %q ignored\n", line.Number, line.Type)
	}
	return false
}

func (s *Server) write(v any) {
	if err := s.out.Write(v); err != nil {
		fmt.Fprintf(s.diag, "arbor: stream-json: write: %v\n", err)
	}
}

// session returns the live session, creating or resuming it on first use.
func (s *Server) session(ctx context.Context) (*app.Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sess != nil {
		return s.sess, nil
	}
	o := app.SessionOptions{Model: s.opts.Model, MaxTurns: s.opts.MaxTurns, System: s.opts.AppendSystemPrompt, Title: "stream-json"}
	if s.hostShell {
		o.Tools = append(o.Tools, s.hostShellTool())
	}
	var sess *app.Session
	var err error
	if s.opts.Resume != "" {
		sess, err = s.app.ResumeSession(ctx, s.opts.Resume, o)
	} else {
		sess, err = s.app.NewSession(ctx, o)
	}
	if err != nil {
		return nil, err
	}
	s.sess = sess
	return sess, nil
}

// idleSessionID is the session id before any turn, "" when none exists.
func (s *Server) sessionID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sess == nil {
		return s.opts.Resume
	}
	return s.sess.ID
}

var _ = agent.OutcomeCompleted
