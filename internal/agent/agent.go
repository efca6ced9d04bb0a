// Package agent is arbor's one agent loop, used by the root agent and by
// every child node alike, with its typed events, its event bus and the
// interaction broker through which tools wait on people and clients.
//
// A step is one model call plus the tool calls it asked for. Invariants:
//   - the assistant message is stored before any of its tools runs, and an
//     intent row is stored before each tool runs, so after a crash a tool
//     that may have run is reported to the model as interrupted, never run
//     twice, and the process group it recorded is killed first (see
//     Agent.Load);
//   - every tool call in the stored transcript gets exactly one result, even
//     when the run is cancelled (the result then says so);
//   - the full transcript stays in the store; compaction only changes what
//     the model is sent.
package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/tool"
)

// Outcome says how a Send ended.
type Outcome string

const (
	OutcomeCompleted Outcome = "completed"
	OutcomeMaxTurns  Outcome = "max_turns"
	OutcomeCancelled Outcome = "cancelled"
	OutcomeFailed    Outcome = "failed"
	OutcomeLoop      Outcome = "loop_detected"
)

// Result is the outcome of one Send.
type Result struct {
	Outcome Outcome
	// Text is the last assistant text.
	Text  string
	Steps int
	// Err is set for OutcomeFailed.
	Err error
	// EndedByTool is set when a tool ended the turn (Result.EndTurn).
	EndedByTool bool
	// Stored, when set, waits for the turn's last write, which was queued
	// in the store and not waited for (Config.QueueEnd), and returns its
	// error. The agent waits for it itself before its next write.
	Stored func() error
}

// Config wires one agent. Provider, Tools, Store and Bus are required.
type Config struct {
	SessionID string
	// Model is the provider's model name; ModelRef the name shown to people.
	Model    string
	ModelRef string
	Provider llm.Provider
	System   string
	Tools    *tool.Registry
	Store    Store
	Bus      *Bus
	// Price is nil when the model's price is unknown.
	Price *llm.Price
	// MaxTurns bounds the steps of one Send; default 50.
	MaxTurns int
	// MaxTokens caps each response; 0 = provider default.
	MaxTokens int64
	// LoopLimit: the same tool call (name + arguments) this many times in a
	// row draws a warning to the model; twice as many stops the run.
	// Default 3; negative disables.
	LoopLimit int
	// ContextWindow in tokens (default 128k) and the compaction policy.
	ContextWindow int64
	Compaction    CompactionPolicy
	// Gate, when set, is asked before every model call (steps and
	// compaction summaries) with an estimate of the call: its input as
	// the context's estimated tokens, its output as OutputEstimate of
	// MaxTokens, and their cost at Price (0 when unknown). It may wait for room; an error ends the Send as
	// failed with that error. The tree's budgets reserve the estimate.
	Gate func(ctx context.Context, est llm.Usage, estCost float64) error
	// Charge, when set, is told each model call's usage and cost as soon
	// as it is recorded, before the next Gate; it settles what the Gate
	// reserved (the tree's budgets use it).
	Charge func(call llm.Usage, cost float64)
	// Flush, when set, is called before the results of a step's tools
	// are stored: tools that leave their own writes for later (the tree's
	// spawns, committed together) make them durable then, so the
	// transcript never records an effect the store does not have. An
	// error fails the turn; the results are not stored.
	Flush func(ctx context.Context) error
	// Resendable says every message Send is given can be made again
	// after a crash (a tree node's prompt and notices, from its node): it
	// is stored with the answer of the model call it starts, in one
	// transaction, however long the call takes. A crash during the call
	// loses it, and the node sends it again. Any other message is stored
	// with that answer too when it comes within sendFlush (50 ms), and on
	// its own at sendFlush otherwise, so a crash loses it only within
	// sendFlush of its Send.
	Resendable bool
	// QueueEnd, with a Store that is a StepQueuer, queues writes instead
	// of waiting for them where nothing outside the store depends on them
	// yet: the results of the tools that end a turn (Result.EndTurn), and
	// the answer of a step whose calls are all of idempotent tools (run
	// again after a crash, as when the answer was stored and they were
	// not). Later writes queue behind them, every model call waits for
	// them first, and Send returns with Result.Stored, which the caller
	// waits for with the write it makes next (a tree node's end: one group
	// commit for the turn's writes instead of several in a row). Events
	// are announced as without it, except Idle, which waits for the
	// turn's last write.
	QueueEnd bool
	// Create, when set, is the session record not stored yet: it is
	// created with the agent's first write, in the same transaction (a
	// tree node's session and its first message are one commit). See
	// EnsureStored.
	Create *store.Session
	// Secrets are values (API keys, tokens) that must never reach the
	// transcript, the model or events: tool output containing one is stored
	// and shown with the value replaced by [REDACTED].
	Secrets []string
	// Hooks, when set, are the session's project hooks at the points of
	// a turn the loop owns (its end, a compaction).
	Hooks TurnHooks
	// TurnEnded, when set, is called as every Send and Continue ends,
	// before the session's status is stored (a tree node's background
	// jobs end with its turn).
	TurnEnded func()
	// ToolsLeftOut, when set, is told when the model's provider takes
	// fewer tools in a request than Tools offers (llm.Limits), so that
	// requests leave out the sources' last tools (left, by name): at the
	// first such request and whenever what is left out changes.
	ToolsLeftOut func(model string, limit int, left []string)
}

// TurnHooks are what the loop asks of a session's hooks (app adapts the
// hook runner to it). Neither may fail the turn: a broken hook is the
// hooks' to report.
type TurnHooks interface {
	// Stopping is asked when a turn completed. Feedback, when not "", is
	// sent to the model as the next message and the turn goes on, unless
	// a tool ended it.
	Stopping(ctx context.Context, s StopCheck) (feedback string)
	// Compacting is told before the context is compacted. Refusal, when
	// not "", refuses the compaction and says why (Claude Code's PreCompact
	// hook that blocks): the context stays as it is.
	Compacting(ctx context.Context, c Compaction) (refusal string)
	// Compacted is told when a compaction has its summary, before the
	// summary replaces the older turns: extra, when not "", is kept after
	// the summary (Claude Code's SessionStart hooks with source
	// "compact", whose context follows its summary).
	Compacted(ctx context.Context, c Compaction) (extra string)
}

// Compaction is what TurnHooks are told of a compaction.
type Compaction struct {
	Trigger string // "manual" or "auto"
	// Instructions are the person's for the summary (a manual
	// compaction's: "/compact keep the numbers"), "" when none.
	Instructions string
	// Model is the model that writes the summary, by the provider's
	// name for it.
	Model string
}

// StopCheck is what TurnHooks.Stopping is told of a completed turn.
type StopCheck struct {
	// Active: the turn went on after an earlier feedback.
	Active bool
	// ByTool: a tool ended the turn (a tree node's complete).
	ByTool bool
	// Last is the text of the turn's last answer, secrets redacted.
	Last string
}

// maxStopFeedback bounds how often Stop hooks may send a turn back to
// work (Claude Code tells them with stop_hook_active).
const maxStopFeedback = 8

// entry is one message of the model's context with its store seq (0 for
// the synthetic summary message).
type entry struct {
	seq int64
	msg llm.Message
}

// Agent runs one session's conversation. Send and Load must not be called
// concurrently; Usage, SetModel and SetSystem may be called from any goroutine.
type Agent struct {
	cfg Config // fixed after New, except the model fields (see model)

	// model is what SetModel changes: the provider, model names, price
	// and context window. Each step (and each compaction) reads it once,
	// so a switch takes effect at the next step and never mid-call.
	modelMu sync.Mutex // guards model and system
	model   modelState
	// system is the system prompt; SetSystem changes it from the next
	// model request.
	system string

	history []entry // the model's context, oldest first
	// histMu guards history's changes, which only the loop makes, against
	// History's reads from other goroutines (a hook's transcript); the
	// loop's own reads take no lock.
	histMu  sync.RWMutex
	summary string // summary of compacted messages, "" if none

	mu        sync.Mutex // guards usage, cost, costKnown
	usage     llm.Usage
	cost      float64
	costKnown bool

	loop loopDetector
	// callIDs holds every tool call id of the session, so a model that
	// reuses ids (some compatible servers number them per response) cannot
	// make two calls share an intent or a result.
	callIDs map[string]bool
	// stopped is set by a call whose result stops the turn
	// (tool.Result.Stop) until the turn ends with it (takeStop).
	stopped error
	// unsettled holds, after Load, the intents of a stored assistant
	// message whose tool calls have no results yet (by call id); nil when
	// there is none. See settle.
	unsettled map[string]store.Intent
	// leftOut is the tools the last request left out, joined by " ".
	leftOut string
	// pressureWarned is set once ContextPressure was published for the
	// current context; a compaction clears it.
	pressureWarned bool
	// autoRefused is set when the hooks refused an automatic compaction,
	// until the turn ends: it is not asked for again within the turn, so
	// a PreCompact hook that blocks runs once a turn, not at every step.
	autoRefused bool
	// status is the session status this agent last stored ("" before its
	// first write), so that a status already written with a step's
	// messages is not written again.
	status store.SessionStatus
	// create is Config.Create until the write that stored it.
	create *store.Session
	// pending are the queued writes of steps (Config.QueueEnd), oldest
	// first, until waitPending.
	pending []*pendingStep
	// held is set while the last entry of history is a message of Send
	// not stored yet; the next write stores it first.
	held bool
	// sending writes a held message on its own unless the agent writes
	// first (add), for a session that is not Resendable.
	sending *sending
}

// New returns an agent for cfg with an empty context; call Load to resume a
// stored session.
func New(cfg Config) *Agent {
	if cfg.MaxTurns <= 0 {
		cfg.MaxTurns = 50
	}
	if cfg.LoopLimit == 0 {
		cfg.LoopLimit = 3
	}
	if cfg.ContextWindow <= 0 {
		cfg.ContextWindow = 128_000
	}
	cfg.Compaction = cfg.Compaction.withDefaults()
	if cfg.ModelRef == "" {
		cfg.ModelRef = cfg.Model
	}
	m := modelState{provider: cfg.Provider, name: cfg.Model, ref: cfg.ModelRef, price: cfg.Price, window: cfg.ContextWindow}
	return &Agent{cfg: cfg, model: m, system: cfg.System, costKnown: true, loop: loopDetector{limit: cfg.LoopLimit}, callIDs: map[string]bool{}, create: cfg.Create}
}

// SessionID returns the agent's session.
func (a *Agent) SessionID() string { return a.cfg.SessionID }

func (a *Agent) publish(e Event) {
	e.meta().SessionID = a.cfg.SessionID
	a.cfg.Bus.Publish(e)
}

// Send appends msg to the conversation and runs steps until the model
// answers without calling tools, the turn limit is reached, a loop is
// detected, ctx is cancelled or an error ends it. It always publishes Idle
// last.
func (a *Agent) Send(ctx context.Context, msg llm.Message) Result {
	if _, err := a.settle(ctx); err != nil {
		return a.finish(ctx, Result{Outcome: OutcomeFailed, Err: err})
	}
	_ = a.takeStop() // a stop while settling an ended turn's calls: the new message goes on
	if err := a.add(ctx, msg); err != nil {
		return a.finish(ctx, Result{Outcome: OutcomeFailed, Err: err})
	}
	return a.finish(ctx, a.stopHooks(ctx, a.run(ctx)))
}

// add appends a message of the sender's to the conversation. It is held:
// stored with the answer of the call it starts, in one transaction. A
// message that cannot be made again (not Config.Resendable) is written
// on its own if that answer takes longer than sendFlush (flushLater).
func (a *Agent) add(ctx context.Context, msg llm.Message) error {
	if a.held {
		return a.save(ctx, store.Step{Messages: []llm.Message{msg}, Status: store.SessionActive})
	}
	a.histMu.Lock()
	a.history = append(a.history, entry{msg: msg})
	a.histMu.Unlock()
	a.held = true
	if !a.cfg.Resendable {
		a.flushLater(ctx)
	}
	return nil
}

// takeStop is the error a call's result stopped the turn with, if any,
// and clears it.
func (a *Agent) takeStop() error {
	err := a.stopped
	a.stopped = nil
	return err
}

// stopHooks asks the Stop hooks whether a completed turn may end; their
// feedback sends it back to work, at most maxStopFeedback times.
func (a *Agent) stopHooks(ctx context.Context, res Result) Result {
	for i := 0; a.cfg.Hooks != nil && res.Outcome == OutcomeCompleted; i++ {
		fb := a.cfg.Hooks.Stopping(ctx, StopCheck{Active: i > 0, ByTool: res.EndedByTool, Last: a.redact(res.Text)})
		if fb == "" || res.EndedByTool {
			return res
		}
		if i == maxStopFeedback {
			return Result{Outcome: OutcomeFailed, Text: res.Text, Steps: res.Steps,
				Err: fmt.Errorf("the Stop hooks sent the turn back %d times; stopped", maxStopFeedback)}
		}
		if err := a.add(ctx, llm.UserText("Stop hook feedback: "+a.redact(fb))); err != nil {
			return Result{Outcome: OutcomeFailed, Text: res.Text, Steps: res.Steps, Err: err}
		}
		steps := res.Steps
		res = a.run(ctx)
		res.Steps += steps
	}
	return res
}

// Continue runs steps on the stored context without a new message, as after
// Load when the session was interrupted mid-turn: tool calls left without
// results are settled first (see Load), then the model is asked again —
// unless one of those calls ended the turn.
func (a *Agent) Continue(ctx context.Context) Result {
	endTurn, err := a.settle(ctx)
	if err == nil {
		err = a.takeStop()
	}
	switch {
	case err != nil:
		return a.finish(ctx, Result{Outcome: OutcomeFailed, Err: err})
	case ctx.Err() != nil:
		return a.finish(ctx, Result{Outcome: OutcomeCancelled})
	case endTurn:
		return a.finish(ctx, Result{Outcome: OutcomeCompleted, Text: a.lastText(), EndedByTool: true})
	}
	return a.finish(ctx, a.run(ctx))
}

// NeedsContinue reports whether the context ends in something the model
// has not answered yet: a user message, tool results, or tool calls still
// to settle.
func (a *Agent) NeedsContinue() bool {
	return a.unsettled != nil || len(a.history) > 0 && a.history[len(a.history)-1].msg.Role == llm.RoleUser
}

// lastText is the text of the last assistant message that has some.
func (a *Agent) lastText() string {
	for i := len(a.history) - 1; i >= 0; i-- {
		if m := a.history[i].msg; m.Role == llm.RoleAssistant && m.Text() != "" {
			return m.Text()
		}
	}
	return ""
}

func (a *Agent) finish(ctx context.Context, r Result) Result {
	if a.cfg.TurnEnded != nil {
		a.cfg.TurnEnded()
	}
	status := store.SessionIdle
	switch r.Outcome {
	case OutcomeCancelled:
		status = store.SessionInterrupted
	case OutcomeFailed:
		status = store.SessionFailed
		a.publish(&Error{Message: r.Err.Error()})
	}
	// The status must land even when ctx was cancelled; the last step
	// of a completed turn stored it already. A turn that ends before its
	// first answer (Ctrl-C, a failed call) still holds its message, or
	// has not created its session: they are stored with the status, so
	// an orderly stop leaves the session as a resume expects it (only a
	// crash loses a held message, which its node sends again).
	if n := len(a.pending); n > 0 && a.status == status {
		p := a.pending[n-1]
		// The queued step stores the status; Idle is announced once it
		// is stored (waitPending), by whoever waits for it first.
		p.idle = &Idle{Outcome: r.Outcome, Result: r.Text}
		r.Stored = a.waitPending
		return r
	}
	if a.held || a.create != nil {
		if err := a.save(context.WithoutCancel(ctx), store.Step{Status: status}); err == nil {
			a.publish(&Idle{Outcome: r.Outcome, Result: r.Text})
			return r
		}
	}
	a.setStatus(context.WithoutCancel(ctx), status)
	a.publish(&Idle{Outcome: r.Outcome, Result: r.Text})
	return r
}

func (a *Agent) run(ctx context.Context) Result {
	if !a.held { // a held message is stored with the active status
		a.setStatus(ctx, store.SessionActive)
	}
	a.loop.reset()
	a.autoRefused = false
	var last string
	for step := 1; ; step++ {
		if step > a.cfg.MaxTurns {
			return Result{Outcome: OutcomeMaxTurns, Text: last, Steps: step - 1}
		}
		if err := ctx.Err(); err != nil {
			return Result{Outcome: OutcomeCancelled, Text: last, Steps: step - 1}
		}
		// Compaction first: its summary is a model call with a gate of
		// its own, and the step's estimate is of the compacted context.
		m := a.currentModel()
		a.maybeCompact(ctx, m)
		if err := a.gate(ctx, a.estimateTokens(), m); err != nil {
			return Result{Outcome: OutcomeFailed, Text: last, Steps: step - 1, Err: err}
		}
		if err := a.waitPending(); err != nil { // stored before the next call
			return Result{Outcome: OutcomeFailed, Text: last, Steps: step - 1, Err: err}
		}
		a.publish(&StepStarted{Step: step, Model: m.ref, Provider: m.provider.Name()})
		resp, err := a.call(ctx, m)
		if err != nil {
			if ctx.Err() != nil {
				return Result{Outcome: OutcomeCancelled, Text: last, Steps: step}
			}
			return Result{Outcome: OutcomeFailed, Text: last, Steps: step, Err: err}
		}
		if t := resp.Message.Text(); t != "" {
			last = t
		}
		calls := resp.Message.ToolCalls()
		// A step without tool calls ends the turn: its status is stored
		// with its message.
		var (
			status   store.SessionStatus
			truncate = len(calls) == 0 && resp.StopReason == llm.StopMaxTokens && last == ""
		)
		switch {
		case truncate:
			status = store.SessionFailed
		case len(calls) == 0:
			status = store.SessionIdle
		}
		// A step whose calls can all run again after a crash (the tree's
		// tools) need not wait for its answer to be stored before they
		// run: the write is queued, every later write of the turn queues
		// behind it, and the next model call waits for all of them.
		if err := a.record(ctx, resp, m, status, a.cfg.QueueEnd && len(calls) > 0 && a.allIdempotent(calls)); err != nil {
			return Result{Outcome: OutcomeFailed, Text: last, Steps: step, Err: err}
		}
		if truncate {
			return Result{Outcome: OutcomeFailed, Steps: step, Err: errors.New("the model hit its output limit before answering")}
		}
		if len(calls) == 0 {
			return Result{Outcome: OutcomeCompleted, Text: last, Steps: step}
		}
		stop, endTurn, err := a.runTools(ctx, calls, nil)
		if err != nil {
			return Result{Outcome: OutcomeFailed, Text: last, Steps: step, Err: err}
		}
		if err := a.takeStop(); err != nil {
			return Result{Outcome: OutcomeFailed, Text: last, Steps: step, Err: err}
		}
		if ctx.Err() != nil {
			return Result{Outcome: OutcomeCancelled, Text: last, Steps: step}
		}
		if stop {
			return Result{Outcome: OutcomeLoop, Text: last, Steps: step,
				Err: fmt.Errorf("stopped: the model repeated the same tool call %d times", a.loop.count)}
		}
		if endTurn {
			return Result{Outcome: OutcomeCompleted, Text: last, Steps: step, EndedByTool: true}
		}
	}
}
