// Package envelope serves arbor's envelope headless protocol (spec 000):
// JSON commands on stdin, one {type, seq?, payload} envelope per line on
// stdout, for bots, gateways and automation.
//
// Implemented: ready; the commands subscribe, status, send, models, role,
// confirm, question, handoff, cancel and local_shell; the slash commands
// of send (/models [status|<pool>], /role [status|<name>], /help, /stats,
// /compact, /new, /resume <id>, /loop on|off and arbor's /worktree
// [NAME|off]; bare /resume, /export, /models --agent and unknown ones
// answer an error envelope); every push of the spec's tables. The parts
// live in their own files: background shell jobs (jobs.go), loop mode and
// the done tool (loop.go), the planner's handoff (handoff.go), roles
// (role.go), sub-agents — the session's main agent is the root of a hosted
// tree run whose children are the sub-agents (subagents.go) — and
// mid-session worktree switches (worktree.go).
//
// Roles: builder, then planner when .arbor/roles/planner.yaml exists, then
// the other .arbor/roles/*.yaml files by name. An agent's system prompt is
// fixed when it is created, so a role switch is recorded in the state
// (status_response.current_role, role_change) and the role's system text
// applies only to the sessions opened afterwards; the planner's one
// behaviour is the handoff tool. A role switch is refused while a handoff
// is pending.
//
// Invariants: stdout carries only envelopes, the first being ready;
// diagnostics go to the diag stream. Bad input never ends the server: it
// is answered with an error envelope. Every state-carrying envelope takes
// the next value of one per-process counter, and every change of the cached
// state takes one too, pushed or not; envelopes leave in seq order because
// the counter is advanced and the line written under one lock. Work that
// uses the session's agent (turns, deliveries, model switches, /compact,
// session and worktree switches) runs on one runner (app.Runner), one job at a
// time, so the main agent is never driven twice at once and a session is
// never swapped under a turn. idle is global quiescence: no job queued or
// running and no sub-agent that can progress. Input end cancels the running
// work, interrupts the sub-agents (they continue when the session is
// resumed) and Serve returns nil.
package envelope

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/protocol"
	"github.com/arbor-run/arbor/internal/tool"
	"github.com/arbor-run/arbor/internal/tree"
)

// Options configure a server; the CLI fills them from its flags.
type Options struct {
	// Resume, when set, resumes that stored session instead of creating one.
	Resume string
	// Worktree, when set, is the git worktree arbor works in (-w); the app's
	// workspace is its path.
	Worktree *app.Worktree
	// NoLocalShell refuses the local_shell command (--no-local-shell).
	NoLocalShell bool
}

// state is the cached status the server reports; guarded by server.mu.
type state struct {
	busy        bool
	phase       string
	phaseDetail string
	confirms    []*confirmRequest  // pending, oldest first
	questions   []*questionRequest // pending, oldest first
	lastError   string
	lastOutcome string
	sessionID   string
	role        string
	updatedAt   time.Time
	runningJobs int
	// loop is set while /loop is on (see loop.go).
	loop bool
	// handoff is the pending handoff_request, nil when none (handoff.go).
	handoff *handoffRequest
}

type server struct {
	// app is the process's App: its store, bus, broker and model cache
	// serve every workdir (work, below, is the current one's view).
	app  *app.App
	opts Options
	out  *protocol.Writer
	diag io.Writer
	// events translates the bus's events into pushes; work flushes it
	// before pushing idle, so idle follows the work's pushes.
	events *agent.Subscription

	// mu guards every field below it but jobs and shells, and is held
	// while writing a seq'd line.
	mu sync.Mutex
	// sess is the current session; only a runner job replaces it.
	sess *app.Session
	// model is the current model ref, pool the pool it came from ("" if
	// none); roleSystem is the current role's system text.
	model, pool, roleSystem string
	// idleOwed is the outcome of an idle held back by a pending handoff.
	idleOwed string
	// notices counts the session's context_notice pushes.
	notices int
	// manualCompact is set while /compact runs; compactions counts the
	// compactions started, so /compact can tell that nothing happened.
	manualCompact bool
	compactions   int
	// plan is the plan_id of the running compaction.
	plan    string
	seq     uint64
	st      state
	subs    map[string]bool // nil = every subscribable event
	closing map[string]string
	cancel  context.CancelFunc // of the running turn, nil when none
	queued  int                // sends accepted and not finished
	// ranSinceIdle is set when an agent step ran since the last idle.
	ranSinceIdle bool
	// cancelled is set by a cancel of busy work, until the idle ending it.
	cancelled bool
	// continuations counts the continuation turns of the running loop.
	continuations int
	// handoffs counts the handoffs requested; it numbers their ids.
	handoffs int

	// work is the app view of the current workdir and worktree the
	// managed worktree it is (nil in the main checkout); generation counts
	// their changes (worktree.go).
	work       *app.App
	worktree   *app.Worktree
	generation int

	// host is the current session's tree; subAgents (by task id) and
	// subByNode are its nodes that have an agent in this process, tasks
	// the task ids of its nodes, live the nodes that can still progress;
	// inbox is what waits for delivery to the main agent, delivering is
	// set while a delivery turn is queued (see subagents.go).
	host         *tree.Host
	subAgents    map[string]*subAgent
	subByNode    map[int64]*subAgent
	tasks        map[int64]string
	live         map[int64]bool
	inbox        []string
	delivering   bool
	agentSeq     int
	formerAgents map[string]string // task id → its last agent id, for the whole process
	// partial marks the agents (by agent id) whose streamed text has not
	// been committed by an assistant_message yet.
	partial map[string]bool

	// sessJobs are the current session's background jobs; pending counts
	// its ended jobs whose delivery turn has not ended, results its
	// background_result pushes.
	sessJobs         *tool.Jobs
	pending, results int

	// runner runs the work that uses the session's agent, one job at a
	// time in order (see submit); it is never called back under its lock,
	// so it may be used under s.mu.
	runner *app.Runner
	shells sync.WaitGroup
	// closers are old sessions' Jobs being closed; hostClosers their trees
	// (a run can be hosted once at a time: resuming waits for them).
	closers, hostClosers sync.WaitGroup
}

// job is work on the runner's goroutine; ctx is cancelled when input ends.
type job func(ctx context.Context)

// submit queues a client's work on the runner: it never blocks, and past
// headless.queue_limit it is refused with errQueueFull. s.mu may be held.
func (s *server) submit(kind string, j job) error {
	err := s.runner.Submit(app.Job{Kind: kind, Run: j})
	switch {
	case errors.Is(err, app.ErrQueueFull):
		return fmt.Errorf("%w: %w", errQueueFull, err)
	case errors.Is(err, app.ErrRunnerClosed):
		return fmt.Errorf("%w: input has ended", errUnavailable)
	}
	return err
}

// submitInternal queues work that the server derives from work already
// accepted (a background result, a loop's next turn, the inbox), which
// the limit does not refuse. It reports false once input has ended.
// s.mu may be held.
func (s *server) submitInternal(kind string, j job) bool {
	return s.runner.SubmitInternal(app.Job{Kind: kind, Run: j}) == nil
}

// Serve runs the protocol until in ends or ctx is cancelled.
func Serve(ctx context.Context, a *app.App, in io.Reader, out, diag io.Writer, o Options) error {
	s := &server{app: a, work: a, worktree: o.Worktree, opts: o, out: protocol.NewWriter(out), diag: diag,
		closing: map[string]string{}, formerAgents: map[string]string{},
		partial: map[string]bool{}, runner: app.NewRunner(a.Config().Headless.QueueLimit)}
	opened, err := s.open(ctx, o.Resume, s.sessionOptions())
	if err != nil {
		return fmt.Errorf("envelope: session: %w", err)
	}
	s.sess, s.sessJobs = opened.sess, opened.jobs
	s.model = s.sess.Model.Ref.Ref
	s.st = state{sessionID: s.sess.ID, role: roleBuilder, updatedAt: time.Now().UTC()}
	s.events = a.Bus.Subscribe(s.translate)
	defer s.events.Close()
	s.mu.Lock()
	s.adoptLocked(opened)
	s.mu.Unlock()
	ready := readyPayload{SessionID: s.sess.ID}
	if wt := s.opts.Worktree; wt != nil {
		ready.Name, ready.Branch, ready.Path, ready.RepoRoot = wt.Name, wt.Branch, wt.Path, wt.RepoRoot
	}
	s.write(typeReady, 0, ready)

	ctx, stop := context.WithCancel(ctx)
	defer stop()
	s.runner.Start(ctx)
	err = s.read(ctx, in)
	// The running job is cancelled and the queued ones run with a
	// cancelled context, so each reports how it ended.
	s.runner.Stop()
	s.mu.Lock()
	jobs, host := s.sessJobs, s.host
	s.mu.Unlock()
	jobs.Close()
	host.Close()
	s.closers.Wait()
	s.hostClosers.Wait()
	s.shells.Wait()
	return err
}

// read handles input lines until EOF or until ctx is cancelled (SIGTERM),
// which ends it at once even while no input arrives.
func (s *server) read(ctx context.Context, in io.Reader) error {
	err := protocol.NewReader(in, protocol.MaxLine).Each(ctx,
		func(line protocol.Line) bool { s.handle(ctx, line); return true }, s.lineError)
	if err != nil {
		return fmt.Errorf("envelope: read input: %w", err)
	}
	return nil
}

func (s *server) lineError(le *protocol.LineError) {
	fmt.Fprintf(s.diag, "arbor: envelope: %v\n", le)
	code := codeInvalidCommand
	switch {
	case errors.Is(le, protocol.ErrLineTooLong):
		code = codeLineTooLong
	case errors.Is(le, protocol.ErrInvalidJSON):
		code = codeInvalidJSON
	}
	s.fail(code, le.Error())
}

// handle dispatches one command.
func (s *server) handle(ctx context.Context, line protocol.Line) {
	var err error
	switch line.Type {
	case "subscribe":
		var c subscribeCmd
		if err = line.Decode(&c); err == nil {
			err = s.subscribe(c)
		}
	case "status":
		s.status()
	case "send":
		var c sendCmd
		if err = line.Decode(&c); err == nil {
			err = s.send(c)
		}
	case "models":
		var c modelsCmd
		if err = line.Decode(&c); err == nil {
			err = s.models(c)
		}
	case "role":
		var c roleCmd
		if err = line.Decode(&c); err == nil {
			s.role(c)
		}
	case "confirm":
		var c confirmCmd
		if err = line.Decode(&c); err == nil {
			err = s.confirm(c)
		}
	case "question":
		var c questionCmd
		if err = line.Decode(&c); err == nil {
			err = s.question(c)
		}
	case "handoff":
		var c handoffCmd
		if err = line.Decode(&c); err == nil {
			err = s.handoff(c)
		}
	case "cancel":
		s.mu.Lock()
		// The idle that ends the work reports it cancelled.
		s.cancelled = s.st.busy
		s.mu.Unlock()
		s.stopTree()
		s.mu.Lock()
		if s.cancel != nil {
			s.cancel()
		}
		s.mu.Unlock()
	case "local_shell":
		var c localShellCmd
		if err = line.Decode(&c); err == nil {
			err = s.localShell(ctx, c)
		}
	default:
		s.fail(codeUnknownCommand, fmt.Sprintf("unknown command type %q", line.Type))
		return
	}
	if err != nil {
		typ := line.Type
		var se *slashError
		if errors.As(err, &se) {
			typ = "" // the message names the slash command
		}
		s.commandError(typ, err)
	}
}

// Command errors, classified into codes by commandError.
var (
	errUnknownRequest = errors.New("no pending request with that id")
	errUnknownEvent   = errors.New("unknown event type")
	errBadCommand     = errors.New("invalid command")
	errTUIOnly        = errors.New("is only available in the local TUI mode")
	errUnknownSlash   = errors.New("unknown command")
	errUnavailable    = errors.New("not available")
	errQueueFull      = errors.New("too much work queued")
)

func (s *server) commandError(typ string, err error) {
	code := codeFailed
	switch {
	case errors.Is(err, protocol.ErrInvalidJSON):
		code = codeInvalidJSON
	case errors.Is(err, errUnknownRequest):
		code = codeUnknownRequest
	case errors.Is(err, errUnknownEvent):
		code = codeUnknownEvent
	case errors.Is(err, errBadCommand):
		code = codeInvalidCommand
	case errors.Is(err, errTUIOnly):
		code = codeTUIOnly
	case errors.Is(err, errUnknownSlash):
		code = codeUnknownCommand
	case errors.Is(err, errUnavailable):
		code = codeUnavailable
	case errors.Is(err, errQueueFull):
		code = codeQueueFull
	}
	msg := err.Error()
	if typ != "" {
		msg = typ + ": " + msg
	}
	s.fail(code, msg)
}

// write encodes payload into an envelope and writes it.
func (s *server) write(typ string, seq uint64, payload any) {
	raw, err := json.Marshal(payload)
	if err != nil {
		fmt.Fprintf(s.diag, "arbor: envelope: encode %s: %v\n", typ, err)
		return
	}
	if err := s.out.Write(Envelope{Type: typ, Seq: seq, Payload: raw}); err != nil {
		fmt.Fprintf(s.diag, "arbor: envelope: write: %v\n", err)
	}
}

// fail writes a command error envelope (no seq: it carries no state).
func (s *server) fail(code, msg string) {
	s.write(typeError, 0, errorPayload{Message: msg, Code: code})
}

// mutateLocked applies fn to the cached state and takes a seq for it.
// s.mu must be held.
func (s *server) mutateLocked(fn func(*state)) uint64 {
	if fn != nil {
		fn(&s.st)
		s.st.updatedAt = time.Now().UTC()
	}
	s.seq++
	return s.seq
}

// push changes the state with fn (nil = no change) and, when the client
// subscribed to typ, writes the event with the new seq.
func (s *server) push(typ string, payload any, fn func(*state)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pushLocked(typ, payload, fn)
}

func (s *server) pushLocked(typ string, payload any, fn func(*state)) {
	seq := s.mutateLocked(fn)
	if s.subs == nil || s.subs[typ] {
		s.write(typ, seq, payload)
	}
}

func (s *server) subscribe(c subscribeCmd) error {
	subs := map[string]bool{}
	for _, e := range c.Events {
		if !slices.Contains(subscribable, e) {
			return fmt.Errorf("%w: %q", errUnknownEvent, e)
		}
		subs[e] = true
	}
	events := c.Events
	if events == nil {
		events = []string{}
	}
	s.mu.Lock()
	s.subs = subs
	s.mu.Unlock()
	s.write(typeSubscribeResponse, 0, subscribeResponse{Events: events})
	return nil
}

// status writes a snapshot of the cached state with a fresh seq.
func (s *server) status() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.syncJobsLocked()
	st := s.st
	p := statusPayload{
		SessionID: st.sessionID, Busy: st.busy, Phase: st.phase, PhaseDetail: st.phaseDetail,
		Workdir: s.workdirLocked(), LastError: st.lastError, LastOutcome: st.lastOutcome,
		CurrentRole: st.role, UpdatedAt: st.updatedAt, RunningJobs: st.runningJobs,
	}
	if len(st.confirms) > 0 {
		p.PendingConfirm = st.confirms[0]
	}
	if len(st.questions) > 0 {
		p.PendingQuestion = st.questions[0]
	}
	p.PendingHandoff = st.handoff
	s.seq++
	s.write(typeStatusResponse, s.seq, p)
}

func (s *server) onTodos(todos []tool.Todo) {
	if todos == nil {
		todos = []tool.Todo{}
	}
	s.events.Flush() // after the assistant_message that called the tool
	s.push(evTodos, todosPayload{Todos: todos}, nil)
}

// sessionOptions shape the sessions the server opens, each with its own
// background jobs (so.Jobs; open closes them when it fails). s.mu must not
// be held.
func (s *server) sessionOptions() app.SessionOptions {
	var jobs *tool.Jobs
	jobs = tool.NewJobs(func(j tool.Job) { s.jobDone(jobs, j) })
	s.mu.Lock()
	defer s.mu.Unlock()
	return app.SessionOptions{Title: "headless", OnTodos: s.onTodos, Model: s.model, System: s.roleSystem, Jobs: jobs,
		Tools: []tool.Tool{s.doneTool(), s.handoffTool()}}
}

// current returns the current session.
func (s *server) current() *app.Session {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sess
}

// ws is the app view of the current workdir (see worktree.go).
func (s *server) ws() *app.App {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.work
}
