package telemetry

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/store"
)

// Export sends run id's trace, made from the store after the fact (arbor
// trace): the run's root span, a span per node with its stored timings,
// and under each node a chat span per stored answer of its agent and an
// execute_tool span per stored tool call. The run and node spans carry
// the ids the live export gave them (IDs), so a run exported live and
// again has the same shape and ids. It returns the number of spans made.
func (e *Exporter) Export(ctx context.Context, st Store, id string) (int, error) {
	n, err := exportTree(ctx, e, st, id, true)
	if err != nil {
		return n, err
	}
	return n, e.Flush(ctx)
}

// exportRun makes run id's run and node spans (exportTree without calls).
func exportRun(ctx context.Context, e *Exporter, st Store, id string, calls bool) error {
	_, err := exportTree(ctx, e, st, id, calls)
	return err
}

func exportTree(ctx context.Context, e *Exporter, st Store, id string, calls bool) (int, error) {
	run, err := st.GetRun(ctx, id)
	if err != nil {
		return 0, fmt.Errorf("telemetry: run %s: %w", id, err)
	}
	nodes, err := st.Nodes(ctx, id)
	if err != nil {
		return 0, fmt.Errorf("telemetry: nodes of run %s: %w", id, err)
	}
	end := run.UpdatedAt
	for _, n := range nodes {
		if n.EndedAt != nil && n.EndedAt.After(end) {
			end = *n.EndedAt
		}
	}
	// The run's root span, with the derived ids: under the span the run
	// was started under, else a trace of its own.
	tid := RunTrace(run)
	rctx, opts := context.Background(), []trace.SpanStartOption{trace.WithNewRoot()}
	if parent, ok := parseTraceParent(run.TraceParent); ok {
		rctx, opts = trace.ContextWithRemoteSpanContext(rctx, parent), nil
	}
	rctx = withFixedIDs(rctx, tid, SpanID(id, 0))
	_, root := e.tracer.Start(rctx, "arbor run", append(opts, trace.WithTimestamp(run.CreatedAt),
		trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(
			keyRunID.String(id), keyRunState.String(string(run.Status)), attribute.String("arbor.run.model", run.Model)))...)
	if run.Status == store.RunFailed || run.Error != "" {
		root.SetStatus(codes.Error, run.Error)
	}
	root.End(trace.WithTimestamp(end))
	made := 1
	for _, n := range nodes {
		k, err := exportNode(ctx, e, st, run, n, end, calls)
		made += k
		if err != nil {
			return made, err
		}
	}
	return made, nil
}

// exportNode makes node n's span under its parent's (the run's for the
// root node), its dependencies as links, and with calls its agent's
// model and tool calls under it.
func exportNode(ctx context.Context, e *Exporter, st Store, run store.Run, n store.Node, runEnd time.Time, calls bool) (int, error) {
	start, end := n.CreatedAt, runEnd
	if n.StartedAt != nil {
		start = *n.StartedAt
	}
	if n.EndedAt != nil {
		end = *n.EndedAt
	}
	tid := RunTrace(run)
	parent := trace.ContextWithRemoteSpanContext(context.Background(), SpanContext(tid, run.ID, n.ParentID))
	links := make([]trace.Link, 0, len(n.BlockedBy))
	for _, b := range n.BlockedBy {
		links = append(links, trace.Link{SpanContext: SpanContext(tid, run.ID, b),
			Attributes: []attribute.KeyValue{attribute.String("arbor.link", "blocked_by")}})
	}
	attrs := nodeAttrs(n)
	if n.Model != "" {
		attrs = append(attrs, semconv.GenAIRequestModel(n.Model))
	}
	if e.capture {
		attrs = append(attrs, keyNodeGoal.String(n.Goal))
	}
	var sess store.Session
	if n.SessionID != "" {
		s, err := st.GetSession(ctx, n.SessionID)
		if err == nil {
			sess = s
			attrs = append(attrs, semconv.GenAIConversationID(s.ID))
			attrs = append(attrs, usageAttrs(s.Usage)...)
			attrs = append(attrs, keyCost.Float64(s.CostUSD), keyCostKnown.Bool(s.CostKnown))
		}
	}
	sctx := withFixedIDs(parent, tid, SpanID(run.ID, n.ID))
	_, sp := e.tracer.Start(sctx, "invoke_agent "+nodeName(n), trace.WithTimestamp(start),
		trace.WithSpanKind(trace.SpanKindInternal), trace.WithLinks(links...), trace.WithAttributes(attrs...))
	if n.State == store.StateFailed {
		sp.SetStatus(codes.Error, n.Error)
	}
	sp.End(trace.WithTimestamp(end))
	if !calls || sess.ID == "" {
		return 1, nil
	}
	k, err := exportCalls(ctx, e, st, SpanContext(tid, run.ID, n.ID), n, sess, start)
	return 1 + k, err
}

// exportCalls makes a node's chat spans (one per stored answer, from the
// message before it to it) and execute_tool spans (one per call the
// answer made: its stored intent's timings, or, for the calls that store
// none, such as the tree's tools, from the answer to the next message).
func exportCalls(ctx context.Context, e *Exporter, st Store, node trace.SpanContext, n store.Node, s store.Session, start time.Time) (int, error) {
	msgs, err := st.Messages(ctx, s.ID, 0)
	if err != nil {
		return 0, fmt.Errorf("telemetry: messages of %s: %w", s.ID, err)
	}
	intents, err := st.Intents(ctx, s.ID)
	if err != nil {
		return 0, fmt.Errorf("telemetry: tool calls of %s: %w", s.ID, err)
	}
	byCall := make(map[string]store.Intent, len(intents))
	for _, in := range intents {
		byCall[in.CallID] = in
	}
	parent := trace.ContextWithRemoteSpanContext(context.Background(), node)
	model := s.Model
	if n.Model != "" {
		model = n.Model
	}
	made, prev := 0, start
	for i, m := range msgs {
		if m.Message.Role != llm.RoleAssistant {
			prev = m.CreatedAt
			continue
		}
		_, sp := e.tracer.Start(parent, "chat "+model, trace.WithTimestamp(prev), trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(semconv.GenAIOperationNameChat, semconv.GenAIRequestModel(model), semconv.GenAIConversationID(s.ID)))
		if e.capture {
			sp.SetAttributes(keyOutput.String(outputMessages(&agent.AssistantMessage{Message: m.Message})))
		}
		sp.End(trace.WithTimestamp(m.CreatedAt))
		prev = m.CreatedAt
		made++
		next := m.CreatedAt
		if i+1 < len(msgs) {
			next = msgs[i+1].CreatedAt
		}
		for _, c := range m.Message.ToolCalls() {
			exportTool(e, parent, s.ID, c, byCall[c.ID], m.CreatedAt, next)
			made++
		}
	}
	return made, nil
}

// exportTool makes the span of call c, with its intent's timings when it
// stored one (in.CallID set), else from..to.
func exportTool(e *Exporter, parent context.Context, session string, c llm.ToolCall, in store.Intent, from, to time.Time) {
	if in.CallID != "" {
		from, to = in.StartedAt, in.StartedAt
		if in.EndedAt != nil {
			to = *in.EndedAt
		}
	}
	attrs := []attribute.KeyValue{semconv.GenAIOperationNameExecuteTool, semconv.GenAIToolName(c.Name),
		semconv.GenAIToolCallID(c.ID), semconv.GenAIConversationID(session)}
	if e.capture {
		attrs = append(attrs, keyToolArgs.String(string(c.Input)))
		if in.CallID != "" {
			attrs = append(attrs, keyToolResult.String(in.Result))
		}
	}
	_, sp := e.tracer.Start(parent, "execute_tool "+c.Name, trace.WithTimestamp(from), trace.WithAttributes(attrs...))
	if in.IsError {
		sp.SetStatus(codes.Error, "the tool reported an error")
	}
	sp.End(trace.WithTimestamp(to))
}

// outputMessage is gen_ai.output.messages' shape: a role and its text
// parts (tool calls are their own spans).
type outputMessage struct {
	Role         string       `json:"role"`
	Parts        []outputPart `json:"parts"`
	FinishReason string       `json:"finish_reason,omitempty"`
}

type outputPart struct {
	Type    string `json:"type"`
	Content string `json:"content"`
}

// outputMessages is an answer as gen_ai.output.messages, for content
// capture.
func outputMessages(v *agent.AssistantMessage) string {
	m := outputMessage{Role: "assistant", Parts: []outputPart{}}
	if v.StopReason != "" {
		m.FinishReason = finishReason(v.StopReason)
	}
	if t := v.Message.Text(); t != "" {
		m.Parts = append(m.Parts, outputPart{Type: "text", Content: t})
	}
	b, _ := json.Marshal([]outputMessage{m})
	return string(b)
}
