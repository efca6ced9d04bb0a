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
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/tool"
)

// Store is what the loop persists. It is a journal of eleven calls, wider
// than the usual small interface because the loop's crash safety depends on
// all of them together; store.Store implements it.
type Store interface {
	AppendMessages(ctx context.Context, sessionID string, msgs ...llm.Message) (int64, error)
	// SaveStep writes a step's messages, usage and status in one
	// transaction: a plain turn costs two commits (the user message with
	// the active status, the answer with its usage and the idle status).
	SaveStep(ctx context.Context, st store.Step) (int64, error)
	Messages(ctx context.Context, sessionID string, afterSeq int64) ([]store.MessageRecord, error)
	StartIntent(ctx context.Context, in store.Intent) error
	FinishIntent(ctx context.Context, sessionID, callID, result string, isError bool) error
	SetIntentPGID(ctx context.Context, sessionID, callID string, pgid int) error
	Intents(ctx context.Context, sessionID string) ([]store.Intent, error)
	AddUsage(ctx context.Context, u store.UsageRecord) error
	SaveCompaction(ctx context.Context, c store.Compaction) error
	LatestCompaction(ctx context.Context, sessionID string) (store.Compaction, error)
	SetSessionStatus(ctx context.Context, id string, status store.SessionStatus) error
}

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

// StepQueuer is a Store that can queue a step's write and wait for it
// later, keeping it in order with the writes queued after it
// (sqlite.Store.QueueStep).
type StepQueuer interface {
	QueueStep(ctx context.Context, st store.Step) (wait func() (int64, error))
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
	// transaction, instead of before the call. A crash during the call
	// loses it, and the node sends it again.
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
}

// modelState is the model an agent's steps use.
type modelState struct {
	provider llm.Provider
	name     string // the provider's model name
	ref      string // the name shown to people
	price    *llm.Price
	window   int64
}

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
	summary string  // summary of compacted messages, "" if none

	mu        sync.Mutex // guards usage, cost, costKnown
	usage     llm.Usage
	cost      float64
	costKnown bool

	loop loopDetector
	// callIDs holds every tool call id of the session, so a model that
	// reuses ids (some compatible servers number them per response) cannot
	// make two calls share an intent or a result.
	callIDs map[string]bool
	// unsettled holds, after Load, the intents of a stored assistant
	// message whose tool calls have no results yet (by call id); nil when
	// there is none. See settle.
	unsettled map[string]store.Intent
	// pressureWarned is set once ContextPressure was published for the
	// current context; a compaction clears it.
	pressureWarned bool
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
	// not stored yet (Config.Resendable); the next write stores it first.
	held bool
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

// EnsureStored writes the session record of Config.Create now, if the
// agent has not stored it yet; writes other than the loop's own (a
// distillation's usage) need the session first.
func (a *Agent) EnsureStored(ctx context.Context) error {
	if a.create == nil {
		return nil
	}
	return a.save(ctx, store.Step{})
}

// SessionID returns the agent's session.
func (a *Agent) SessionID() string { return a.cfg.SessionID }

// Usage returns the tokens and cost of this agent's model calls so far.
func (a *Agent) Usage() (llm.Usage, float64, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.usage, a.cost, a.costKnown
}

// SetModel switches the provider and model for later steps; a step
// already under way finishes on the model it started with. It may be
// called from any goroutine, also while Send runs.
func (a *Agent) SetModel(p llm.Provider, model, ref string, price *llm.Price, window int64) {
	a.modelMu.Lock()
	defer a.modelMu.Unlock()
	if window <= 0 {
		window = a.model.window
	}
	a.model = modelState{provider: p, name: model, ref: ref, price: price, window: window}
}

// SetSystem replaces the system prompt from the next model request; a
// request under way keeps the prompt it was sent with. It may be called
// from any goroutine, also while Send runs.
func (a *Agent) SetSystem(system string) {
	a.modelMu.Lock()
	defer a.modelMu.Unlock()
	a.system = system
}

// System is the system prompt of the next model request.
func (a *Agent) System() string {
	a.modelMu.Lock()
	defer a.modelMu.Unlock()
	return a.system
}

// currentModel is the model for the next step.
func (a *Agent) currentModel() modelState {
	a.modelMu.Lock()
	defer a.modelMu.Unlock()
	return a.model
}

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
	if a.cfg.Resendable && !a.held {
		a.history = append(a.history, entry{msg: msg})
		a.held = true
	} else if err := a.save(ctx, store.Step{Messages: []llm.Message{msg}, Status: store.SessionActive}); err != nil {
		return a.finish(ctx, Result{Outcome: OutcomeFailed, Err: err})
	}
	return a.finish(ctx, a.run(ctx))
}

// Continue runs steps on the stored context without a new message, as after
// Load when the session was interrupted mid-turn: tool calls left without
// results are settled first (see Load), then the model is asked again —
// unless one of those calls ended the turn.
func (a *Agent) Continue(ctx context.Context) Result {
	endTurn, err := a.settle(ctx)
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
		a.publish(&StepStarted{Step: step, Model: m.ref})
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

// call makes one streaming model call, publishing deltas as they arrive.
func (a *Agent) call(ctx context.Context, m modelState) (*llm.Response, error) {
	req := &llm.Request{
		Model:     m.name,
		System:    a.System(),
		Messages:  a.contextMessages(),
		Tools:     a.cfg.Tools.Specs(),
		MaxTokens: a.cfg.MaxTokens,
	}
	var resp *llm.Response
	for ev, err := range m.provider.Stream(WithSession(ctx, a.cfg.SessionID), req) {
		if err != nil {
			return nil, fmt.Errorf("model call to %s: %w", m.ref, err)
		}
		switch ev := ev.(type) {
		case llm.TextDelta:
			a.publish(&TextDelta{Text: ev.Text})
		case llm.ThinkingDelta:
			a.publish(&ThinkingDelta{Text: ev.Text})
		case llm.ToolCallBegin:
			a.publish(&ToolInputStarted{Index: ev.Index, CallID: ev.ID, Tool: ev.Name})
		case llm.ToolCallDelta:
			a.publish(&ToolInputDelta{Index: ev.Index, JSON: ev.JSON})
		case llm.ToolCallEnd:
			a.publish(&ToolInputFinished{Index: ev.Index})
		case llm.Done:
			resp = ev.Response
		}
	}
	if resp == nil {
		return nil, fmt.Errorf("model call to %s: %w", m.ref, llm.ErrNoResponse)
	}
	a.normalizeCalls(&resp.Message)
	return resp, nil
}

// normalizeCalls gives every tool call a session-unique id and valid JSON
// input, so the stored transcript can always be sent back to a provider.
func (a *Agent) normalizeCalls(m *llm.Message) {
	parts := make([]llm.Part, len(m.Parts))
	copy(parts, m.Parts)
	m.Parts = parts
	for i, p := range m.Parts {
		if p.Type != llm.PartToolCall || p.ToolCall == nil {
			continue
		}
		c := *p.ToolCall
		if c.ID == "" || a.callIDs[c.ID] {
			base := c.ID
			if base == "" {
				base = "call"
			}
			for n := len(a.callIDs) + 1; ; n++ {
				if id := fmt.Sprintf("%s_%d", base, n); !a.callIDs[id] {
					c.ID = id
					break
				}
			}
		}
		a.callIDs[c.ID] = true
		if len(c.Input) == 0 || !json.Valid(c.Input) {
			c.Input = json.RawMessage(`{}`)
		}
		m.Parts[i].ToolCall = &c
	}
}

// record stores the assistant message of a call to m with its usage and,
// when set, the session status the step ends in, in one transaction.
func (a *Agent) record(ctx context.Context, resp *llm.Response, m modelState, status store.SessionStatus, queue bool) error {
	if len(resp.Message.Parts) == 0 {
		resp.Message.Parts = []llm.Part{llm.TextPart("")}
	}
	resp.Message.Role = llm.RoleAssistant
	rec, updated := a.tally(resp.Usage, m)
	step := store.Step{Messages: []llm.Message{resp.Message}, Usage: &rec, Status: status}
	if !queue || !a.queueSave(context.WithoutCancel(ctx), step) {
		if err := a.save(context.WithoutCancel(ctx), step); err != nil {
			return err
		}
	}
	a.publish(&AssistantMessage{Message: resp.Message, StopReason: resp.StopReason, Model: m.ref, ResponseID: resp.ID})
	a.publish(updated)
	return nil
}

// DefaultOutputEstimate bounds the output a call is assumed to produce,
// for the Gate's estimate: the response cap, but no more than this (the
// Anthropic provider's default cap). Estimating every call at a 64k cap
// would let only one call run near the end of any budget; a call that
// writes more than this can overshoot by the difference.
const DefaultOutputEstimate = 8192

// OutputEstimate is the output assumed of a call whose response cap is
// limit (0 = the provider's default).
func OutputEstimate(limit int64) int64 {
	if limit <= 0 {
		return DefaultOutputEstimate
	}
	return min(limit, DefaultOutputEstimate)
}

// gate asks the Gate, if any, for a call to m whose input is about input
// tokens.
func (a *Agent) gate(ctx context.Context, input int64, m modelState) error {
	if a.cfg.Gate == nil {
		return nil
	}
	est := llm.Usage{InputTokens: input, OutputTokens: OutputEstimate(a.cfg.MaxTokens)}
	cost := 0.0
	if m.price != nil {
		cost = m.price.Cost(est)
	}
	return a.cfg.Gate(ctx, est, cost)
}

// account records the usage of a model call that stored no message (a
// compaction summary) on model m: totals, charge, store, event.
func (a *Agent) account(ctx context.Context, u llm.Usage, m modelState) error {
	rec, updated := a.tally(u, m)
	if err := a.cfg.Store.AddUsage(context.WithoutCancel(ctx), rec); err != nil {
		return fmt.Errorf("record usage: %w", err)
	}
	a.publish(updated)
	return nil
}

// tally adds one model call's usage on model m to the session's totals
// and charges it; it returns the record to store and the event to publish
// once stored.
func (a *Agent) tally(u llm.Usage, m modelState) (store.UsageRecord, *UsageUpdated) {
	cost, known := 0.0, m.price != nil
	if known {
		cost = m.price.Cost(u)
	}
	a.mu.Lock()
	a.usage = a.usage.Add(u)
	a.cost += cost
	a.costKnown = a.costKnown && known
	total, totalCost, totalKnown := a.usage, a.cost, a.costKnown
	a.mu.Unlock()
	// Charge before anything can fail: the call was made, so the
	// reservation its gate made is settled whatever happens next.
	if a.cfg.Charge != nil {
		a.cfg.Charge(u, cost)
	}
	rec := store.UsageRecord{
		SessionID: a.cfg.SessionID, Model: m.ref, Usage: u,
		CostUSD: cost, CostKnown: known, At: time.Now().UTC(),
	}
	return rec, &UsageUpdated{Model: m.ref, Call: u, CallCost: cost, Total: total, TotalCost: totalCost, CostKnown: totalKnown}
}

// setStatus stores the session's status unless this agent stored it last.
// A failure is not the turn's: the status is advisory (listings, resume
// hints), while the transcript is what the loop's safety rests on.
func (a *Agent) setStatus(ctx context.Context, status store.SessionStatus) {
	if a.status == status {
		return
	}
	if a.waitPending() != nil {
		return
	}
	if err := a.cfg.Store.SetSessionStatus(ctx, a.cfg.SessionID, status); err == nil {
		a.status = status
	}
}

// append stores msgs and adds them to the context.
func (a *Agent) append(ctx context.Context, msgs ...llm.Message) error {
	return a.save(ctx, store.Step{Messages: msgs})
}

// save stores st for this session in one transaction and adds its
// messages to the context.
func (a *Agent) save(ctx context.Context, st store.Step) error {
	if err := a.waitPending(); err != nil {
		return err
	}
	st = a.stepFor(st)
	last, err := a.cfg.Store.SaveStep(ctx, st)
	if err != nil {
		return fmt.Errorf("store messages: %w", err)
	}
	a.wrote(st, last)
	return nil
}

// stepFor completes st as this agent's next write: its session, the
// session's record while it is not stored, and a held message first.
func (a *Agent) stepFor(st store.Step) store.Step {
	st.SessionID = a.cfg.SessionID
	st.Create = a.create
	if a.held {
		st.Messages = append([]llm.Message{a.history[len(a.history)-1].msg}, st.Messages...)
		if st.Status == "" {
			st.Status = store.SessionActive
		}
	}
	return st
}

// wrote records that st (from stepFor) was stored, or queued, with last
// as the session's last seq: its messages join history with their seqs
// (a held one is already there) and it returns their history indexes.
func (a *Agent) wrote(st store.Step, last int64) []int {
	seq := last - int64(len(st.Messages))
	idx := make([]int, 0, len(st.Messages))
	msgs := st.Messages
	if a.held {
		seq++
		a.history[len(a.history)-1].seq = seq
		idx = append(idx, len(a.history)-1)
		msgs, a.held = msgs[1:], false
	}
	for _, m := range msgs {
		seq++
		idx = append(idx, len(a.history))
		a.history = append(a.history, entry{seq: seq, msg: m})
		for _, c := range m.ToolCalls() {
			a.callIDs[c.ID] = true
		}
	}
	a.create = nil
	if st.Status != "" {
		a.status = st.Status
	}
	return idx
}

// pendingStep is a step whose write was queued (queueSave): its messages
// are the history entries at idx, numbered provisionally as the session's
// next seqs, which its wait confirms.
type pendingStep struct {
	wait func() (int64, error)
	idx  []int
	idle *Idle // announced once the step is stored (finish)
	err  error // a failed wait's error (a wait runs once)
	done bool
}

// queueSave is save for a store that can queue the write (StepQueuer):
// the write is queued, not waited for, and its messages join history at
// once. It reports false, having done nothing, when the store cannot
// queue.
func (a *Agent) queueSave(ctx context.Context, st store.Step) bool {
	q, ok := a.cfg.Store.(StepQueuer)
	if !ok {
		return false
	}
	st = a.stepFor(st)
	last := a.lastStoredSeq() + int64(len(st.Messages))
	a.pending = append(a.pending, &pendingStep{wait: q.QueueStep(ctx, st), idx: a.wrote(st, last)})
	return true
}

// lastStoredSeq is the seq of the last message in history that has one
// (stored or queued), 0 when none has.
func (a *Agent) lastStoredSeq() int64 {
	for i := len(a.history) - 1; i >= 0; i-- {
		if a.history[i].seq > 0 {
			return a.history[i].seq
		}
	}
	return 0
}

// waitPending waits for the queued steps, oldest first, and numbers their
// messages as the store did. A failed write stays: every later write of
// the agent reports it.
func (a *Agent) waitPending() error {
	for len(a.pending) > 0 {
		p := a.pending[0]
		if !p.done {
			last, err := p.wait()
			p.done, p.err = true, err
			if err == nil {
				first := last - int64(len(p.idx)) + 1
				for i, at := range p.idx {
					a.history[at].seq = first + int64(i)
				}
			}
			if p.idle != nil {
				a.publish(p.idle)
				p.idle = nil
			}
		}
		if p.err != nil {
			return fmt.Errorf("store messages: %w", p.err)
		}
		a.pending = a.pending[1:]
	}
	a.pending = nil
	return nil
}

// contextMessages is what the model is sent: the summary of compacted
// turns, if any, folded into the first kept user message, then the rest.
func (a *Agent) contextMessages() []llm.Message {
	out := make([]llm.Message, 0, len(a.history)+1)
	for _, e := range a.history {
		out = append(out, e.msg)
	}
	if a.summary != "" {
		note := llm.Message{Role: llm.RoleUser, Parts: []llm.Part{llm.TextPart(summaryPreamble + a.summary)}}
		out = append([]llm.Message{note}, out...)
	}
	return mergeRoles(out)
}

// mergeRoles joins consecutive messages of one role (a turn ended by a tool
// leaves tool results that the next user message follows), since providers
// expect roles to alternate. The store keeps them apart.
func mergeRoles(msgs []llm.Message) []llm.Message {
	out := msgs[:0:0]
	for _, m := range msgs {
		if n := len(out); n > 0 && out[n-1].Role == m.Role {
			merged := out[n-1]
			merged.Parts = append(append([]llm.Part(nil), merged.Parts...), m.Parts...)
			out[n-1] = merged
			continue
		}
		out = append(out, m)
	}
	return out
}

const summaryPreamble = "[Earlier turns of this conversation were compacted. Summary:]\n"
