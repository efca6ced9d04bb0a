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
//
// Ownership: the reader goroutine never blocks on the session. Work that
// uses the agent or the session (turns, model switches, config reloads,
// creating the session) is submitted to an app.Runner, whose goroutine is
// the only one that touches sess.Agent; the queue is unbounded unless
// headless.queue_limit is set, and work past it is refused with a
// queue_full error. Control requests that need no agent (interrupt,
// shutdown, config_override…) and the client's control_responses are
// handled at once on the reader, whatever is queued. Event lines are
// written by the bus subscriber (translate); anything written elsewhere
// that must follow the events already published flushes it first.
package streamjson

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/hook"
	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/protocol"
	"github.com/arbor-run/arbor/internal/tool"
)

// Options configure a server; the CLI fills them from its flags.
type Options struct {
	// Quiet gives memory back while the session waits for its client;
	// nil is protocol.NewQuiet(protocol.QuietAfter, nil).
	Quiet    *protocol.Quiet
	Model    string
	Resume   string
	MaxTurns int
	// AllowedTools are allowed without asking for this session.
	AllowedTools []string
	// DisallowedTools are denied for this session (the CLI adds them as
	// deny rules, as it adds AllowedTools as allow rules). One that names
	// a tool without a pattern ("Bash", not "Bash(rm *)") also leaves the
	// tool out of the session, as Claude Code does: the model is not
	// offered it and init's tools do not list it.
	DisallowedTools []string
	// PartialMessages sends stream_event lines (text and tool deltas).
	PartialMessages bool
	// Prompt, when set, is the one turn of single-prompt mode.
	Prompt string
	// AppendSystemPrompt is added to the system prompt.
	AppendSystemPrompt string
	// ClaudeCode is set when arbor runs under Claude Code's argv (the
	// Claude Agent SDK): such a client never answers auth_required, so a
	// missing key fails the turn with an error result naming the variable.
	ClaudeCode bool
	// Tools, when not nil, are the only tools offered (Claude Code's
	// names accepted); an unknown name fails the session.
	Tools []string
	// SessionID is the id of a new session (Claude Code's --session-id).
	SessionID string
	// ForkSession continues Resume's conversation in a new session, the
	// stored one left untouched.
	ForkSession bool
	// MaxBudgetUSD, when > 0, stops the session's model calls once its
	// cost reaches it; the turn ends with error_max_budget_usd.
	MaxBudgetUSD float64
	// LaunchInit is what the CLI took from the client's first line, the
	// initialize request, at launch (--await-initialize).
	LaunchInit LaunchInit
	// ApprovalMode is the permission mode as the client named it at
	// launch (qwen's --approval-mode; "auto" is reported back so).
	ApprovalMode string
	// Qwen is set when arbor runs under the qwen CLI's argv (the Qwen Code
	// SDK): messages take the shapes its types read (see qwen.go).
	Qwen bool
	// SystemPrompt replaces arbor's system prompt (qwen's --system-prompt).
	SystemPrompt string
	// MaxSessionTurns, when > 0, is how many user turns the session runs;
	// a turn past it ends with error_max_turns without a model call.
	MaxSessionTurns int
	// MaxToolCalls, when not nil, is how many tool calls the process may
	// make; the call past it is refused and ends its turn.
	MaxToolCalls *int
}

// ErrErrorResult is Serve's error under Claude Code's argv when the last
// turn's result was an error (the CLI then exits with status 1).
var ErrErrorResult = errors.New("the last turn ended with an error result")

// Server is one stream-json session over one pair of streams.
type Server struct {
	app  *app.App
	opts Options
	// jobs are the session's background jobs, made by Serve.
	jobs *tool.Jobs
	// out queues output lines for its own goroutine, so neither the reader
	// nor the runner waits for a client that reads slowly.
	out *protocol.Outbox
	// quiet gives memory back while the session waits for its client.
	quiet *protocol.Quiet
	diag  io.Writer
	// events translates the bus's events into output lines; a turn flushes
	// it before writing its result, so the result follows the turn's lines.
	events     *agent.Subscription
	compaction compaction // the session's compaction in progress (compact.go)
	// runner owns the session: every job that uses the agent runs on its
	// goroutine, one at a time, in the order the lines arrived.
	runner *app.Runner
	limit  int // the runner's queue limit, 0 = none
	// inputDone is closed when the input ends, so nothing waits for an
	// answer that can no longer come.
	inputDone chan struct{}
	// singlePrompt is set in single-prompt mode, before the reader starts.
	singlePrompt bool
	// shells holds the commands the client runs for the host shell tool.
	shells hostShells
	// sdk routes the messages of the client's in-process MCP servers.
	sdk sdkServers

	mu sync.Mutex // guards the fields below
	// sess is set once, by a runner job; others only read it.
	sess    *app.Session
	asks    map[string]string // our request id → broker interaction id
	authReq chan authReply    // set while waiting for auth_response
	// inputEnded is set with the end of input: requests to the client are
	// then refused at once (see endInput).
	inputEnded bool
	// hostShell is set when the client runs shell commands itself.
	hostShell bool
	// init holds what the client's initialize asked for (system prompt,
	// hooks); it is read when the session is created.
	init initSettings
	// initialized is set by the first initialize that was not refused.
	initialized bool
	// disallowed are the disallowedTools an initialize request added as
	// deny rules (arbor's tool names); see Options.DisallowedTools.
	disallowed []string
	// initErr is why the client's initialize was refused; turns fail
	// with it.
	initErr error
	// denials are the calls refused in the running turn.
	denials []permissionDenial
	// calls counts the running turn's tool calls; failed are the errors
	// of those that failed, by call id.
	calls  int
	failed map[string]string
	// lastStop is the stop reason of the running turn's last model call.
	lastStop string
	// modelUsage adds up the session's model calls by model.
	modelUsage map[string]modelUsage
	// pending is an assistant line held until its usage is known (the
	// subscriber's; written at the next event or at the end of the turn).
	pending *messageLine
	// raw is the Anthropic stream state of the subscriber.
	raw rawStream
	// queued are the uuids of the user messages waiting for their turn.
	queued []string
	// startContext is the SessionStart hooks' additionalContext, put
	// before the next prompt.
	startContext string
	// hookCalls are the hook_callback requests waiting for an answer.
	hookCalls map[string]chan hookReply
	// turnq tracks the turns submitted, running and interrupted before
	// they started (turnqueue.go).
	turnq turnQueue

	// hooks runs the client's hooks (initialize.hooks); it has a lock of
	// its own.
	hooks hook.Runner

	// stepStart and apiTime measure the model time of the running turn
	// (from each step's start to its assistant message), in nanoseconds.
	stepStart atomic.Int64
	apiTime   atomic.Int64
	// lastFailed is whether the last result written was an error.
	lastFailed atomic.Bool
	// contextTokens are the tokens of the last model call's context
	// (get_context_usage); autoMode is whether the client named the mode
	// it set "auto" (qwen.go). Guarded by mu.
	contextTokens int64
	autoMode      bool
	// toolCalls counts the process's tool calls, for MaxToolCalls.
	toolCalls atomic.Int64
}

type userTurn struct {
	seq       int  // the turn's number in turnq, set by submitTurn
	cont      bool // continue_last_turn: no prompt, the agent continues
	text      string
	images    []llm.Image // the message's image blocks
	sessionID string
	uuid      string            // the client's, "" when it gave none
	env       map[string]string // shell_context.env, for the turn's commands
}

// Serve runs the protocol until in ends (after finishing queued turns),
// a shutdown request arrives, or ctx is cancelled (queued work is then
// dropped and the running job cancelled).
func Serve(ctx context.Context, a *app.App, in io.Reader, out, diag io.Writer, o Options) (err error) {
	limit := a.Config().Headless.QueueLimit
	s := &Server{app: a, opts: o, diag: diag, asks: map[string]string{}, hookCalls: map[string]chan hookReply{},
		runner: app.NewRunner(limit), limit: limit, inputDone: make(chan struct{})}
	s.hooks.Base, s.hooks.Secrets = s.hookBase, a.Secrets
	s.noteMode(o.ApprovalMode)
	defer func() {
		// Claude Code exits with status 1 after an error result, which
		// the Claude Agent SDK turns into the query's error.
		if err == nil && o.ClaudeCode && s.lastFailed.Load() {
			err = ErrErrorResult
		}
	}()
	s.out = protocol.NewOutbox(out, func(err error) { fmt.Fprintf(diag, "arbor: stream-json: write: %v\n", err) })
	if s.quiet = o.Quiet; s.quiet == nil {
		s.quiet = protocol.NewQuiet(protocol.QuietAfter, nil)
	}
	defer s.quiet.Close()
	a.SetMCPSDK(s.sdkTransport)
	// After the subscription: its last lines are written too. Once
	// signalled, a client that stopped reading gets a grace period only.
	defer s.out.CloseAfter(ctx)
	if err := s.checkResume(ctx); err != nil {
		return err
	}
	s.events = a.Bus.Subscribe(s.translate)
	defer s.events.Close()

	ctx, stop := context.WithCancel(ctx)
	defer stop()
	// The session's background jobs (Bash's run_in_background, read with
	// BashOutput) live until the server ends, after its turns.
	s.jobs = tool.NewJobs(nil)
	defer s.jobs.Close()
	s.runner.Start(ctx)

	if o.Prompt != "" {
		err = s.single(ctx, in, stop)
		s.endSession(ctx, false)
		return err
	}
	// Cancelled (SIGTERM, SIGINT) while the input is open, the session
	// ends at once, its input still read: the client's SessionEnd
	// callbacks are asked while their answers can arrive, as Claude Code
	// asks them then. Reading stops after them.
	lines, stopReading := context.WithCancel(context.WithoutCancel(ctx))
	defer stopReading()
	readDone, endedEarly := make(chan struct{}), make(chan bool, 1)
	go func() {
		defer stopReading()
		select {
		case <-ctx.Done():
			s.endSession(ctx, true)
			endedEarly <- true
		case <-readDone:
			endedEarly <- false
		}
	}()
	err = s.read(lines, ctx, in, stop)
	close(readDone)
	close(s.inputDone)
	s.endInput()
	ended := <-endedEarly
	if ctx.Err() != nil {
		s.runner.Drop() // shutdown or cancelled: queued work does not start
		s.runner.Stop()
		if !ended {
			s.endSession(ctx, false)
		}
		return err
	}
	s.runner.Close() // end of input: the queued turns finish
	s.endSession(ctx, false)
	return err
}

// endSession runs the SessionEnd hooks once the session's turns are
// over or cancelled, the client's callbacks first when it can still
// answer (withClient). Claude Code asks none after the end of input:
// their answers could not be read.
func (s *Server) endSession(ctx context.Context, withClient bool) {
	sess := s.current()
	if sess == nil {
		return
	}
	var client *hook.Runner
	if withClient {
		client = &s.hooks
	}
	s.app.EndSessionWith(ctx, sess.ID, "other", client)
}

// single runs single-prompt mode: the one turn, while the input is read
// for the client's answers (can_use_tool, ask_user) and control requests;
// it returns when the turn is done. User lines are refused: the prompt is
// the only turn. If the input ends first, what the turn asks the client
// afterwards is denied or declined, so it still finishes.
func (s *Server) single(ctx context.Context, in io.Reader, stop context.CancelFunc) error {
	s.singlePrompt = true
	s.submitTurn(userTurn{text: s.opts.Prompt})
	readCtx, stopReading := context.WithCancel(ctx)
	read := make(chan error, 1)
	go func() {
		err := s.read(readCtx, readCtx, in, stop)
		close(s.inputDone)
		s.endInput()
		read <- err
	}()
	s.runner.Close() // the turn finishes
	stopReading()
	err := <-read
	if ctx.Err() != nil || readCtx.Err() != nil {
		return nil
	}
	return err
}

// read handles input lines, with ctx, until EOF, shutdown, or the
// cancellation of lines, which ends it at once even while no input
// arrives.
func (s *Server) read(lines, ctx context.Context, in io.Reader, stop context.CancelFunc) error {
	err := protocol.NewReader(in, 0).Each(lines, func(line protocol.Line) bool {
		s.quiet.Busy()
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
		if s.singlePrompt {
			s.write(resultMessage{Type: "result", Subtype: "error_during_execution", IsError: true,
				Errors:    []string{"single-prompt mode runs only the prompt given as an argument; this user message was not run"},
				SessionID: s.sessionID(), PermissionDenials: []permissionDenial{}, ModelUsage: map[string]modelUsage{}, UUID: newUUID()})
			return false
		}
		text, err := u.text()
		if err != nil { // not a user message at all: said on stderr, as a bad line is
			fmt.Fprintf(s.diag, "arbor: stream-json: line %d: %v\n", line.Number, err)
			return false
		}
		images, err := u.images()
		if err != nil { // a turn the client waits for: its result says why it was not run
			fmt.Fprintf(s.diag, "arbor: stream-json: line %d: %v\n", line.Number, err)
			s.write(resultMessage{Type: "result", Subtype: "error_during_execution", IsError: true,
				Errors: []string{fmt.Sprintf("user message on line %d was not run: %v", line.Number, err)}, SessionID: s.sessionID(),
				PermissionDenials: []permissionDenial{}, ModelUsage: map[string]modelUsage{}, UUID: newUUID()})
			return false
		}
		t := userTurn{text: text, images: images, sessionID: u.SessionID, uuid: u.UUID}
		if u.ShellContext != nil {
			t.env = u.ShellContext.Env
		}
		s.submitTurn(t)
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
	if r, ok := v.(resultMessage); ok {
		s.lastFailed.Store(r.IsError)
		defer s.quiet.Idle() // after the line is queued
	}
	if s.opts.Qwen {
		v = qwenShape(v)
	}
	if err := s.out.Put(v); err != nil {
		fmt.Fprintf(s.diag, "arbor: stream-json: write: %v\n", err)
	}
}

// errQueueFull is how work refused past headless.queue_limit is reported.
type errQueueFull struct {
	limit int
}

func (e errQueueFull) Error() string {
	return fmt.Sprintf("queue_full: %d messages and requests already wait for the session (headless.queue_limit); this one was not run", e.limit)
}

func (errQueueFull) Unwrap() error { return app.ErrQueueFull }

// submit queues a job for the session's runner; it never blocks. A job
// refused (queue full, or input over) is reported by refused.
func (s *Server) submit(kind string, run func(ctx context.Context), refused func(err error)) {
	err := s.runner.Submit(app.Job{Kind: kind, Run: run})
	if err == nil {
		return
	}
	if errors.Is(err, app.ErrQueueFull) {
		err = errQueueFull{limit: s.limit}
	}
	refused(err)
}

// submitTurn queues a user message; one refused gets an error result.
func (s *Server) submitTurn(t userTurn) {
	s.queue(t.uuid, true)
	t.seq = s.addTurn()
	s.submit("turn", func(ctx context.Context) {
		s.queue(t.uuid, false)
		s.startTurn(t.seq)
		s.turn(ctx, t)
	}, func(err error) {
		s.dropTurn(t.seq)
		s.queue(t.uuid, false)
		s.write(resultMessage{Type: "result", Subtype: "error_during_execution", IsError: true,
			Errors: []string{err.Error()}, SessionID: s.sessionID(), PermissionDenials: []permissionDenial{}, ModelUsage: map[string]modelUsage{}, UUID: newUUID()})
	})
}

// queue adds (or removes) the uuid of a user message waiting for its
// turn, for the still_queued of an interrupt.
func (s *Server) queue(uuid string, waiting bool) {
	if uuid == "" {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if waiting {
		s.queued = append(s.queued, uuid)
		return
	}
	for i, u := range s.queued {
		if u == uuid {
			s.queued = append(s.queued[:i], s.queued[i+1:]...)
			return
		}
	}
}

// stillQueued lists the uuids of the user messages that wait for a turn.
func (s *Server) stillQueued() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string{}, s.queued...)
}
