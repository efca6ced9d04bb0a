package telemetry

import (
	"context"
	"errors"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/tree"
)

// Store is what the Tracer and Export read: the run's rows, and whose a
// session is.
type Store interface {
	GetRun(ctx context.Context, id string) (store.Run, error)
	Nodes(ctx context.Context, runID string) ([]store.Node, error)
	GetSession(ctx context.Context, id string) (store.Session, error)
	Messages(ctx context.Context, sessionID string, afterSeq int64) ([]store.MessageRecord, error)
	Intents(ctx context.Context, sessionID string) ([]store.Intent, error)
}

// Tracer turns the events of one bus into spans and metrics. Model and
// tool calls become spans as they end, under their node's span (whose id
// is known before that span is made, see IDs) or, for a conversation
// that is no node's (arbor headless, serve, mcp), under a span of the
// turn: one trace per turn, linked to the previous turn of the session
// and named by gen_ai.conversation.id. When a run ends its run and node
// spans are made from the stored rows, as Export makes them.
//
// The sessions map and everything in it belong to the subscription's
// goroutine (handle); Flush and Close only wait for it. A node's session
// is forgotten when its node or its run ends, another driver's node
// session when its turn does; a conversation's is kept (its next turn
// links to the last).
type Tracer struct {
	e   *Exporter
	st  Store
	sub *agent.Subscription

	sessions map[string]*session // by session id; owned by handle
	pending  map[string]trace.Span
	traces   map[string]trace.TraceID // by run id, read from its row once; owned by handle
}

// session is what the Tracer knows of one session.
type session struct {
	ignore bool   // a node's whose run another process drives: its spans are made there
	run    string // the run of a node's session bound here
	parent trace.SpanContext
	// conversation: a session of no node; its turns are traces.
	conversation bool
	id           string
	turn         trace.Span
	turns        int
	prevTurn     trace.SpanContext

	chat      trace.Span
	chatModel string
	chatStart time.Time
	chatStep  int
	retried   bool // the open call failed and is being made again
	finish    string
	tools     map[string]trace.Span // open tool calls by call id
	lastTool  string
}

// Subscribe starts a Tracer on bus: every event published from now on is
// turned into spans through e. st is read when a run ends and when a
// session is first seen.
func Subscribe(bus *agent.Bus, e *Exporter, st Store) *Tracer {
	t := &Tracer{e: e, st: st, sessions: map[string]*session{}, pending: map[string]trace.Span{}, traces: map[string]trace.TraceID{}}
	t.sub = bus.Subscribe(t.handle)
	return t
}

// Flush waits until every event published so far is handled and exports
// the spans and metrics ended.
func (t *Tracer) Flush(ctx context.Context) error {
	t.sub.Flush()
	return t.e.Flush(ctx)
}

// Close stops following the bus (after the events queued are handled)
// and flushes. It is safe to call twice; the Exporter is the caller's to
// shut down.
func (t *Tracer) Close(ctx context.Context) error {
	t.sub.Close()
	return t.e.Flush(ctx)
}

func (t *Tracer) handle(ev agent.Event) {
	ctx := context.Background()
	at := agent.MetaOf(ev).At
	switch v := ev.(type) {
	case *tree.NodeChanged:
		t.e.m.nodes.Add(ctx, 1, metric.WithAttributes(keyNodeState.String(string(v.Node.State)), keyNodeKind.String(string(v.Node.Kind))))
		switch {
		case v.Node.SessionID == "":
		case v.Node.State.Terminal():
			t.forget(v.Node.SessionID, v.RunID)
		default:
			t.bind(v.Node.SessionID, v.RunID, v.Node.ID)
		}
	case *tree.AgentStarted:
		t.bind(v.Node.SessionID, v.RunID, v.Node.ID)
	case *tree.RunFinished:
		t.e.m.runs.Add(ctx, 1, metric.WithAttributes(keyRunState.String(string(v.Outcome))))
		// The rows are durable before the event; a failed read loses
		// the run's spans here, not the run (arbor trace makes them).
		_ = exportRun(ctx, t.e, t.st, v.RunID, false)
		for id, s := range t.sessions { // a resumed run binds them again
			if s.run == v.RunID {
				delete(t.sessions, id)
			}
		}
		delete(t.traces, v.RunID)
	case *agent.StepStarted:
		if s := t.session(v.SessionID, at); s != nil {
			t.startChat(s, v, at)
		}
	case *agent.Retrying:
		if s := t.known(v.SessionID); s != nil && s.chat != nil {
			s.retried = true
			s.chat.AddEvent("retry", trace.WithTimestamp(at), trace.WithAttributes(
				keyAttempt.Int(v.Attempt), keyDelay.Int64(v.Delay.Milliseconds()), attribute.String("error.message", v.Error)))
		}
	case *agent.AssistantMessage:
		if s := t.known(v.SessionID); s != nil && s.chat != nil {
			s.finish = finishReason(v.StopReason)
			if v.ResponseID != "" {
				s.chat.SetAttributes(keyResponseID.String(v.ResponseID))
			}
			if t.e.capture {
				s.chat.SetAttributes(keyOutput.String(outputMessages(v)))
			}
		}
	case *agent.UsageUpdated:
		t.usage(v, at)
	case *agent.ToolCallStarted:
		if s := t.session(v.SessionID, at); s != nil {
			t.startTool(s, v, at)
		}
	case *agent.ToolCallFinished:
		if s := t.known(v.SessionID); s != nil {
			t.endTool(s, v, at)
		}
	case *agent.InteractionRequested:
		t.interaction(v, at)
	case *agent.InteractionResolved:
		if sp := t.pending[v.ID]; sp != nil {
			delete(t.pending, v.ID)
			sp.AddEvent(string(v.Kind)+".resolved", trace.WithTimestamp(at),
				trace.WithAttributes(keyResolution.String(v.Resolution)))
		}
	case *agent.Error:
		if s := t.known(v.SessionID); s != nil {
			t.endTurn(s, at, v.Message)
		}
	case *agent.Idle:
		if s := t.sessions[v.SessionID]; s != nil && s.ignore {
			delete(t.sessions, v.SessionID) // looked up again at its next turn
		}
		if s := t.known(v.SessionID); s != nil {
			msg := ""
			if v.Outcome != agent.OutcomeCompleted {
				msg = string(v.Outcome)
			}
			t.endTurn(s, at, msg)
		}
	}
}

// bind says session id is node's of run, driven here.
func (t *Tracer) bind(id, run string, node int64) {
	if id == "" {
		return
	}
	s := t.sessions[id]
	if s == nil || s.ignore || s.conversation {
		s = &session{id: id, tools: map[string]trace.Span{}}
		t.sessions[id] = s
	}
	s.run, s.parent = run, SpanContext(t.traceOf(run), run, node)
}

// forget drops node session id of run, whose node ended, unless a span of
// it is still open (a late event of its turn ends it; the run's end
// drops it then). A hosted run (a conversation's sub-agents) never ends,
// so its nodes' sessions were kept for the life of the process.
func (t *Tracer) forget(id, run string) {
	if s := t.sessions[id]; s != nil && s.run == run && s.chat == nil && len(s.tools) == 0 {
		delete(t.sessions, id)
	}
}

// traceOf is run's trace id, from its row the first time.
func (t *Tracer) traceOf(run string) trace.TraceID {
	if tid, ok := t.traces[run]; ok {
		return tid
	}
	r, err := t.st.GetRun(context.Background(), run)
	if err != nil {
		return TraceID(run) // read again at the next binding
	}
	tid := RunTrace(r)
	t.traces[run] = tid
	return tid
}

// known is session id as far as it is traced here, nil otherwise.
func (t *Tracer) known(id string) *session {
	s := t.sessions[id]
	if s == nil || s.ignore {
		return nil
	}
	return s
}

// session is session id, looked up in the store the first time: a
// session of no node is a conversation (a trace per turn). A node's
// session that no tree event here named (stored with its run, or not
// stored yet: only a node's session is created with its first step) is
// run by this worker for a driver elsewhere, which makes its spans from
// the events this worker sends it.
func (t *Tracer) session(id string, at time.Time) *session {
	if id == "" {
		return nil
	}
	if s := t.sessions[id]; s != nil {
		if s.ignore {
			return nil
		}
		if s.conversation && s.turn == nil {
			t.startTurn(s, at)
		}
		return s
	}
	rec, err := t.st.GetSession(context.Background(), id)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil // asked again at the next event
	}
	s := &session{id: id, tools: map[string]trace.Span{}}
	t.sessions[id] = s
	if err != nil || rec.RunID != "" {
		s.ignore = true
		return nil
	}
	s.conversation = true
	t.startTurn(s, at)
	return s
}

// startTurn opens the span of a conversation's turn: a trace of its own,
// linked to the session's previous turn.
func (t *Tracer) startTurn(s *session, at time.Time) {
	s.turns++
	opts := []trace.SpanStartOption{trace.WithTimestamp(at), trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithNewRoot(), trace.WithAttributes(
			semconv.GenAIOperationNameInvokeAgent, semconv.GenAIAgentName(agentName),
			semconv.GenAIConversationID(s.id), keyTurnOf.Int(s.turns))}
	if s.prevTurn.IsValid() {
		opts = append(opts, trace.WithLinks(trace.Link{SpanContext: s.prevTurn}))
	}
	_, s.turn = t.e.tracer.Start(context.Background(), "invoke_agent "+agentName, opts...)
	s.parent = s.turn.SpanContext()
}

func (t *Tracer) startChat(s *session, v *agent.StepStarted, at time.Time) {
	if s.chat != nil && s.retried && s.chatStep == v.Step {
		s.retried = false // the same call, made again: one span, its retries events
		return
	}
	if s.chat != nil { // a call that never reported its end
		s.chat.SetStatus(codes.Error, "no response")
		s.chat.End(trace.WithTimestamp(at))
	}
	ctx := trace.ContextWithRemoteSpanContext(context.Background(), s.parent)
	_, s.chat = t.e.tracer.Start(ctx, "chat "+v.Model, trace.WithTimestamp(at), trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(semconv.GenAIOperationNameChat, semconv.GenAIRequestModel(v.Model),
			semconv.GenAIProviderNameKey.String(v.Provider), semconv.GenAIConversationID(s.id), keyStep.Int(v.Step)))
	s.chatModel, s.chatStart, s.chatStep, s.retried, s.finish = v.Model, at, v.Step, false, ""
}

// usage records a model call's tokens and ends its span (the usage is
// the last event of a call; a compaction's call has no span).
func (t *Tracer) usage(v *agent.UsageUpdated, at time.Time) {
	ctx := context.Background()
	model := semconv.GenAIRequestModel(v.Model)
	op := semconv.GenAIOperationNameChat
	t.e.m.tokens.Record(ctx, v.Call.InputTokens, metric.WithAttributes(op, model, semconv.GenAITokenTypeInput))
	t.e.m.tokens.Record(ctx, v.Call.OutputTokens, metric.WithAttributes(op, model, semconv.GenAITokenTypeOutput))
	s := t.known(v.SessionID)
	if s == nil || s.chat == nil {
		return
	}
	s.chat.SetAttributes(usageAttrs(v.Call)...)
	s.chat.SetAttributes(keyCost.Float64(v.CallCost), keyCostKnown.Bool(v.CostKnown))
	if s.finish != "" {
		s.chat.SetAttributes(semconv.GenAIResponseFinishReasons(s.finish))
	}
	s.chat.End(trace.WithTimestamp(at))
	t.e.m.duration.Record(ctx, at.Sub(s.chatStart).Seconds(), metric.WithAttributes(op, model))
	s.chat = nil
}

func (t *Tracer) startTool(s *session, v *agent.ToolCallStarted, at time.Time) {
	ctx := trace.ContextWithRemoteSpanContext(context.Background(), s.parent)
	attrs := []attribute.KeyValue{semconv.GenAIOperationNameExecuteTool, semconv.GenAIToolName(v.Tool),
		semconv.GenAIToolCallID(v.CallID), semconv.GenAIConversationID(s.id)}
	if t.e.capture {
		attrs = append(attrs, keyToolArgs.String(string(v.Input)))
	}
	_, sp := t.e.tracer.Start(ctx, "execute_tool "+v.Tool, trace.WithTimestamp(at),
		trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	if old := s.tools[v.CallID]; old != nil {
		old.End(trace.WithTimestamp(at))
	}
	s.tools[v.CallID], s.lastTool = sp, v.CallID
}

func (t *Tracer) endTool(s *session, v *agent.ToolCallFinished, at time.Time) {
	sp := s.tools[v.CallID]
	if sp == nil {
		return
	}
	delete(s.tools, v.CallID)
	for _, b := range v.Blocked {
		sp.AddEvent("sandbox.blocked", trace.WithTimestamp(at), trace.WithAttributes(keyBlocked.String(b)))
	}
	if t.e.capture {
		sp.SetAttributes(keyToolResult.String(v.Result))
	}
	if v.IsError {
		sp.SetStatus(codes.Error, "the tool reported an error")
		sp.SetAttributes(semconv.ErrorTypeKey.String("tool_error"))
	}
	sp.End(trace.WithTimestamp(at))
}

// interaction marks a wait for a person on the tool call it holds: the
// call the approval names, else the session's latest open call.
func (t *Tracer) interaction(v *agent.InteractionRequested, at time.Time) {
	in := v.Interaction
	sid := in.SessionID
	if sid == "" {
		sid = v.SessionID
	}
	s := t.known(sid)
	if s == nil {
		return
	}
	call := s.lastTool
	if in.Approval != nil && in.Approval.CallID != "" {
		call = in.Approval.CallID
	}
	sp := s.tools[call]
	if sp == nil {
		sp = s.turn
	}
	if sp == nil {
		return
	}
	sp.AddEvent(string(in.Kind)+".requested", trace.WithTimestamp(at), trace.WithAttributes(keyKind.String(string(in.Kind))))
	t.pending[in.ID] = sp
}

// endTurn closes what a session's turn left open; errMsg is "" when it
// completed.
func (t *Tracer) endTurn(s *session, at time.Time, errMsg string) {
	if s.chat != nil {
		s.chat.SetStatus(codes.Error, errMsg)
		s.chat.End(trace.WithTimestamp(at))
		s.chat = nil
	}
	for id, sp := range s.tools {
		sp.End(trace.WithTimestamp(at))
		delete(s.tools, id)
	}
	if s.turn != nil {
		if errMsg != "" {
			s.turn.SetStatus(codes.Error, errMsg)
		}
		s.turn.End(trace.WithTimestamp(at))
		s.prevTurn, s.turn = s.turn.SpanContext(), nil
	}
}

// nodeName is a node's gen_ai.agent.name: its kind.
func nodeName(n store.Node) string { return string(n.Kind) }

func nodeAttrs(n store.Node) []attribute.KeyValue {
	return []attribute.KeyValue{
		semconv.GenAIOperationNameInvokeAgent, semconv.GenAIAgentName(nodeName(n)),
		semconv.GenAIAgentID(strconv.FormatInt(n.ID, 10)), keyRunID.String(n.RunID),
		keyNodeID.Int64(n.ID), keyNodeKind.String(string(n.Kind)), keyNodeState.String(string(n.State)),
	}
}
