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
// the other .arbor/roles/*.yaml files by name. A role switch takes effect
// from the running session's next model request (the agent's system
// prompt is replaced) and is recorded in the state
// (status_response.current_role, role_change); the planner's one
// behaviour is the handoff tool. A role switch is refused while a handoff
// is pending.
//
// Invariants: stdout carries only envelopes, the first being ready;
// diagnostics go to the diag stream. Bad input never ends the server: it
// is answered with an error envelope. The stdin reader never blocks:
// control commands are answered at once, work that uses the session's
// agent (turns, deliveries, model switches, /compact, session and
// worktree switches) is submitted to one app.Runner, which runs it one job
// at a time, so the main agent is never driven twice at once and a
// session is never swapped under a turn; past headless.queue_limit a
// client's work is refused with queue_full. Every state-carrying envelope
// takes the next value of one per-process counter, and every change of
// the cached state takes one too, pushed or not; envelopes leave in seq
// order because the counter is advanced and the line queued under one
// lock (wire.mu), and one goroutine writes the queue to stdout in order,
// so a client that stops reading stalls nothing but its own output. idle is global quiescence: no job queued or running and
// no sub-agent that can progress. Input end cancels the running work,
// interrupts the sub-agents (they continue when the session is resumed)
// and Serve returns nil. See server for the parts and their locks.
package envelope

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/protocol"
	"github.com/arbor-run/arbor/internal/tool"
)

// Options configure a server; the CLI fills them from its flags.
type Options struct {
	// Resume, when set, resumes that stored session instead of creating one.
	Resume string
	// Model, when set, is the session's model (--model), a resumed one's
	// too; "" is the configured default, or a resumed session's own.
	Model string
	// Worktree, when set, is the git worktree arbor works in (-w); the app's
	// workspace is its path.
	Worktree *app.Worktree
	// NoLocalShell refuses the local_shell command (--no-local-shell).
	NoLocalShell bool
	// Quiet gives memory back while the session waits for its client;
	// nil is protocol.NewQuiet(protocol.QuietAfter, nil).
	Quiet *protocol.Quiet
}

// server is the envelope protocol of one process. Its parts each have one
// lock and one job:
//
//   - ctl (control): the session and what drives it — the runner, the
//     current session, its workdir, model, pool and role, and the
//     accounting of queued work that decides idle;
//   - agents (subAgents): the current session's hosted tree and the
//     nodes that have an agent in this process;
//   - ix (interactions): the pending confirms, questions and handoff;
//   - cmp (compaction): the main agent's compactions and context notices;
//   - wire: the output queue (outbox), the seq counter, the
//     subscriptions and the cached state that status reports.
//
// Lock order: ctl.mu, then agents.mu, then ix.mu, then wire.mu (cmp.mu
// comes after ctl.mu and is held with no other); a goroutine holding one
// may take a later one, never an earlier one. No
// lock is held across a model call or a broker call; publishing on the
// bus never waits, so it may happen under any lock. The subscription's
// Flush waits for translate, which takes these locks: it is called with
// none held.
// Goroutines: the reader (handle) answers control commands at once and
// submits the rest to the runner; the runner's goroutine runs jobs, the
// only code that uses the session's agent or replaces the session;
// translate runs on the bus subscription's goroutine; tools run on the
// runner's (the main agent's) or on the tree engine's goroutines.
type server struct {
	// app is the process's App: its store, bus, broker and model cache
	// serve every workdir (ctl.work is the current one's view).
	app  *app.App
	opts Options
	diag io.Writer
	// events translates the bus's events into pushes; work flushes it
	// before pushing idle, so idle follows the work's pushes.
	events *agent.Subscription

	ctl    *control
	cmp    *compaction
	agents *subAgents
	ix     *interactions
	wire   *wire
	// quiet gives memory back while the session waits for its client.
	quiet *protocol.Quiet

	shells sync.WaitGroup
	// shellStops cancel the running local_shell commands (by number);
	// shellMu guards them and shellN, and is held with no other lock.
	shellMu    sync.Mutex
	shellStops map[int]context.CancelFunc
	shellN     int
	// closers are old sessions' Jobs being closed; hostClosers their trees
	// (a run can be hosted once at a time: resuming waits for them).
	closers, hostClosers sync.WaitGroup
}

// control is the session control: what the runner's jobs own. Only jobs
// on the runner replace sess, sessJobs, work, worktree and the model;
// others read them under mu.
type control struct {
	// runner runs the work that uses the session's agent, one job at a
	// time in order (see submit); it never calls back under its own lock,
	// so it may be used under mu.
	runner *app.Runner

	mu sync.Mutex // guards the fields below
	// sess is the current session, sessJobs its background jobs; pending
	// counts its ended jobs whose delivery turn has not ended, results its
	// background_result pushes (jobs.go).
	sess     *app.Session
	sessJobs *tool.Jobs
	// started are the sessions whose SessionStart hooks ran; sources
	// the SessionStart source of a session whose hooks have not run yet,
	// when it is not "startup": "clear" after /new, "resume" after
	// /resume or --resume (sessionSource).
	started          map[string]bool
	sources          map[string]string
	pending, results int
	// model is the current model ref, pool the pool it came from ("" if
	// none); roleSystem is the current role's system text.
	model, pool, roleSystem string
	// work is the app view of the current workdir and worktree the
	// managed worktree it is (nil in the main checkout); generation counts
	// their changes (worktree.go).
	work       *app.App
	worktree   *app.Worktree
	generation int

	// queued counts the main agent's work accepted and not finished.
	queued int
	// cancel cancels the running turn or compaction, nil when none.
	cancel context.CancelFunc
	// ranSinceIdle is set when an agent step ran since the last idle.
	ranSinceIdle bool
	// cancelled is set by a cancel of busy work, until the idle ending it
	// or the start of the next job, which it did not cancel.
	cancelled bool
	// active is set while a job runs on the runner; jobCancelled when a
	// cancel reached that job. cancelNext is a cancel that arrived while
	// work was queued but none ran yet: the next job to start takes it.
	// A cancel stops one piece of work; what is queued behind it runs.
	active, jobCancelled, cancelNext bool
	// idleOwed is the outcome of an idle held back by a pending handoff.
	idleOwed string
	// waiting lists the navigations (/new, /resume, /compact, /worktree)
	// queued behind other work, oldest first, as the client wrote them.
	waiting []string
	// continuations counts the continuation turns of the running loop.
	continuations int
	// inbox is what waits for delivery to the main agent; delivering is
	// set while a delivery turn is queued (subagents.go).
	inbox      []string
	delivering bool
}

// job is work on the runner's goroutine; ctx is cancelled when input ends.
type job func(ctx context.Context)

// submit queues a client's work on the runner: it never blocks, and past
// headless.queue_limit it is refused with errQueueFull. Any lock may be
// held.
func (s *server) submit(kind string, j job) error {
	err := s.ctl.runner.Submit(app.Job{Kind: kind, Run: s.tracked(j)})
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
// the limit does not refuse. It reports false once input has ended. Any
// lock may be held.
func (s *server) submitInternal(kind string, j job) bool {
	return s.ctl.runner.SubmitInternal(app.Job{Kind: kind, Run: s.tracked(j)}) == nil
}

// tracked marks j active while it runs, so that a cancel knows whether it
// stops running work or the next job to start.
func (s *server) tracked(j job) job {
	return func(ctx context.Context) {
		c := s.ctl
		c.mu.Lock()
		// Work starting now is not what an earlier cancel stopped
		// (unless that cancel was aimed at it: cancelNext).
		c.active, c.jobCancelled, c.cancelNext, c.cancelled = true, c.cancelNext, false, false
		c.mu.Unlock()
		j(ctx)
		c.mu.Lock()
		c.active, c.jobCancelled = false, false
		c.mu.Unlock()
	}
}

// Serve runs the protocol until in ends or ctx is cancelled.
func Serve(ctx context.Context, a *app.App, in io.Reader, out, diag io.Writer, o Options) error {
	w := newWire(out, diag)
	// Last: after the subscription and every part has stopped. Once
	// signalled, a client that stopped reading gets a grace period only.
	defer w.out.CloseAfter(ctx)
	s := &server{app: a, opts: o, diag: diag, wire: w, agents: newSubAgents(),
		ix: &interactions{closing: map[string]string{}}, cmp: &compaction{},
		ctl:   &control{runner: app.NewRunner(a.Config().Headless.QueueLimit), work: a, worktree: o.Worktree, model: o.Model},
		quiet: o.Quiet}
	if s.quiet == nil {
		s.quiet = protocol.NewQuiet(protocol.QuietAfter, nil)
	}
	defer s.quiet.Close()
	if err := roleRules(a, roleBuilder); err != nil {
		return fmt.Errorf("envelope: %w", err)
	}
	opened, err := s.open(ctx, o.Resume, s.sessionOptions())
	if err != nil {
		return fmt.Errorf("envelope: %w", err)
	}
	s.ctl.sess, s.ctl.sessJobs = opened.sess, opened.jobs
	if o.Resume != "" {
		s.ctl.sources = map[string]string{opened.sess.ID: "resume"}
	}
	s.ctl.model = opened.sess.Model.Ref.Ref
	s.wire.st = state{sessionID: opened.sess.ID, role: roleBuilder, updatedAt: time.Now().UTC()}
	s.events = a.Bus.Subscribe(s.translate)
	defer s.events.Close()
	s.agents.adopt(opened)
	s.ctl.mu.Lock()
	ready := readyPayload{SessionID: opened.sess.ID, Workdir: s.workdirLocked()}
	s.ctl.mu.Unlock()
	if wt := s.opts.Worktree; wt != nil {
		ready.Worktree = &readyWorktree{Name: wt.Name, Branch: wt.Branch, Path: wt.Path, RepoRoot: wt.RepoRoot}
		ready.Name, ready.Branch, ready.Path, ready.RepoRoot = wt.Name, wt.Branch, wt.Path, wt.RepoRoot
	}
	s.wire.write(typeReady, 0, ready)

	ctx, stop := context.WithCancel(ctx)
	defer stop()
	s.ctl.runner.Start(ctx)
	err = s.read(ctx, in)
	// The running job is cancelled and the queued ones run with a
	// cancelled context, so each reports how it ended.
	s.ctl.runner.Stop()
	s.ctl.mu.Lock()
	jobs := s.ctl.sessJobs
	s.ctl.mu.Unlock()
	jobs.Close()
	s.agents.host().Close()
	s.closers.Wait()
	s.hostClosers.Wait()
	s.shells.Wait()
	s.endSessions(ctx)
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
	s.wire.fail(code, le.Error())
}

// handle dispatches one command. A line that is not valid UTF-8 is
// refused whole (invalid_json): decoding would replace the bad bytes and
// run a different command (a shell command, a message) than was sent.
func (s *server) handle(ctx context.Context, line protocol.Line) {
	s.quiet.Busy()
	if !utf8.Valid(line.Raw) {
		fmt.Fprintf(s.diag, "arbor: envelope: line %d: invalid UTF-8\n", line.Number)
		s.wire.fail(codeInvalidJSON, fmt.Sprintf("line %d: not valid UTF-8; the command was not run", line.Number))
		return
	}
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
		s.cancelWork()
	case "local_shell":
		var c localShellCmd
		if err = line.Decode(&c); err == nil {
			err = s.localShell(ctx, c)
		}
	default:
		s.wire.fail(codeUnknownCommand, fmt.Sprintf("unknown command type %q", line.Type))
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
	s.wire.fail(code, msg)
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
	s.wire.subscribe(subs, events)
	return nil
}

// status writes a snapshot of the cached state with a fresh seq.
func (s *server) status() {
	sandbox := s.ws().SandboxStatus() // not under ctl.mu: the first call may start bubblewrap
	if sandbox == "off" {
		sandbox = "" // left out, as Chord's status_response has no such field
	}
	s.ctl.mu.Lock()
	defer s.ctl.mu.Unlock()
	p := statusPayload{Workdir: s.workdirLocked(), MCPServers: s.mcpServers(), Sandbox: sandbox}
	s.ix.mu.Lock()
	defer s.ix.mu.Unlock()
	if len(s.ix.confirms) > 0 {
		p.PendingConfirm = s.ix.confirms[0]
	}
	if len(s.ix.questions) > 0 {
		p.PendingQuestion = s.ix.questions[0]
	}
	p.PendingHandoff = s.ix.handoff
	var waiting string
	if len(s.ctl.waiting) > 0 {
		waiting = s.ctl.waiting[0]
	}
	s.wire.status(p, s.jobCountLocked(), waiting)
}

func (s *server) onTodos(todos []tool.Todo) {
	if todos == nil {
		todos = []tool.Todo{}
	}
	s.events.Flush() // after the assistant_message that called the tool
	s.wire.push(evTodos, todosPayload{Todos: todos}, nil)
}

// sessionOptions shape the sessions the server opens, each with its own
// background jobs (so.Jobs; open closes them when it fails). ctl.mu must
// not be held.
func (s *server) sessionOptions() app.SessionOptions {
	var jobs *tool.Jobs
	jobs = tool.NewJobs(func(j tool.Job) { s.jobDone(jobs, j) })
	s.ctl.mu.Lock()
	defer s.ctl.mu.Unlock()
	return app.SessionOptions{OnTodos: s.onTodos, Model: s.ctl.model, System: s.ctl.roleSystem, Jobs: jobs,
		Tools: []tool.Tool{s.doneTool(), s.handoffTool()}}
}

// current returns the current session.
func (s *server) current() *app.Session {
	s.ctl.mu.Lock()
	defer s.ctl.mu.Unlock()
	return s.ctl.sess
}

// ws is the app view of the current workdir (see worktree.go).
func (s *server) ws() *app.App {
	s.ctl.mu.Lock()
	defer s.ctl.mu.Unlock()
	return s.ctl.work
}
