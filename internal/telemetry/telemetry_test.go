package telemetry_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/store/sqlite"
	"github.com/arbor-run/arbor/internal/telemetry"
	"github.com/arbor-run/arbor/internal/telemetry/oteltest"
	"github.com/arbor-run/arbor/internal/tool"
	"github.com/arbor-run/arbor/internal/tree"
)

type bundle struct {
	ctx context.Context
	col *oteltest.Collector
	st  *sqlite.Store
	bus *agent.Bus
	tr  *telemetry.Tracer
}

// setup starts a real collector, a SQLite store and a Tracer on a bus,
// exporting to the collector over s.Protocol with env as the
// environment.
func setup(t *testing.T, s telemetry.Settings, env map[string]string) *bundle {
	t.Helper()
	ctx := context.Background()
	col := oteltest.Start(t)
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "arbor.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	if s.Protocol == "grpc" {
		s.Endpoint = col.GRPC
	} else {
		s.Endpoint = col.HTTP
	}
	getenv := func(k string) string { return env[k] }
	if !s.Enabled(getenv) {
		t.Fatal("telemetry off with an endpoint")
	}
	e, err := telemetry.Start(ctx, s, getenv)
	if err != nil {
		t.Fatal(err)
	}
	bus := agent.NewBus()
	tr := telemetry.Subscribe(bus, e, st)
	t.Cleanup(func() {
		_ = tr.Close(ctx)
		_ = e.Shutdown(ctx)
	})
	return &bundle{ctx: ctx, col: col, st: st, bus: bus, tr: tr}
}

func meta(session string) agent.Meta { return agent.Meta{SessionID: session} }

// turn publishes one conversation turn of session: a model call that
// asks for a shell call (approved, with a sandbox block), the call, and
// a final answer.
func (b *bundle) turn(session string) {
	b.bus.Publish(&agent.StepStarted{Meta: meta(session), Step: 1, Model: "anthropic/claude-test"})
	b.bus.Publish(&agent.AssistantMessage{Meta: meta(session), Message: llm.Message{Role: llm.RoleAssistant,
		Parts: []llm.Part{{Type: llm.PartText, Text: "Listing the files."}}}, StopReason: llm.StopToolUse, ResponseID: "msg_1"})
	b.bus.Publish(&agent.UsageUpdated{Meta: meta(session), Model: "anthropic/claude-test",
		Call: llm.Usage{InputTokens: 100, OutputTokens: 20, CacheReadTokens: 40}, CallCost: 0.25, CostKnown: true})
	b.bus.Publish(&agent.ToolCallStarted{Meta: meta(session), CallID: "c1", Tool: "shell", Input: json.RawMessage(`{"command":"ls"}`)})
	b.bus.Publish(&agent.InteractionRequested{Meta: meta(session), Interaction: agent.Interaction{ID: "i1", Kind: agent.KindApproval,
		SessionID: session, Approval: &tool.ApprovalRequest{CallID: "c1", Tool: "shell"}}})
	b.bus.Publish(&agent.InteractionResolved{Meta: meta(session), ID: "i1", Kind: agent.KindApproval, Resolution: "answered"})
	b.bus.Publish(&agent.ToolCallFinished{Meta: meta(session), CallID: "c1", Tool: "shell", Result: "a.txt",
		Blocked: []string{"read /etc/shadow"}})
	b.bus.Publish(&agent.StepStarted{Meta: meta(session), Step: 2, Model: "anthropic/claude-test"})
	b.bus.Publish(&agent.AssistantMessage{Meta: meta(session), Message: llm.Message{Role: llm.RoleAssistant,
		Parts: []llm.Part{{Type: llm.PartText, Text: "One file."}}}, StopReason: llm.StopEndTurn})
	b.bus.Publish(&agent.UsageUpdated{Meta: meta(session), Model: "anthropic/claude-test", Call: llm.Usage{InputTokens: 130, OutputTokens: 5}})
	b.bus.Publish(&agent.Idle{Meta: meta(session), Outcome: agent.OutcomeCompleted})
}

func named(spans []oteltest.Span, name string) []oteltest.Span {
	var out []oteltest.Span
	for _, s := range spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

// TestConversationTurns: a session of no node (arbor headless) is a
// trace per turn, the turns linked and named by the session id; model
// and tool calls nest under the turn, the approval and the sandbox's
// block are events of the tool's span; content stays off the spans.
func TestConversationTurns(t *testing.T) {
	t.Parallel()
	for _, proto := range []string{"http/protobuf", "grpc"} {
		t.Run(proto, func(t *testing.T) {
			t.Parallel()
			b := setup(t, telemetry.Settings{Protocol: proto, ServiceName: "arbor-test"}, nil)
			if err := b.st.CreateSession(b.ctx, store.Session{ID: "conv", Status: store.SessionIdle}); err != nil {
				t.Fatal(err)
			}
			b.turn("conv")
			b.turn("conv")
			if err := b.tr.Flush(b.ctx); err != nil {
				t.Fatal(err)
			}
			spans := b.col.WaitSpans(t, time.Minute, "two turns of 4 spans", func(s []oteltest.Span) bool { return len(s) >= 8 })
			if len(spans) != 8 {
				t.Fatalf("%d spans, want 8", len(spans))
			}
			turns := named(spans, "invoke_agent arbor")
			if len(turns) != 2 || turns[0].TraceID == turns[1].TraceID {
				t.Fatalf("turns: %+v; want two traces", turns)
			}
			first, second := turns[0], turns[1]
			if first.Attrs["arbor.session.turn"] == int64(2) {
				first, second = second, first
			}
			if first.ParentSpanID != "" || first.Attrs["gen_ai.conversation.id"] != "conv" || first.Resource["service.name"] != "arbor-test" {
				t.Fatalf("first turn: %+v", first)
			}
			if len(second.Links) != 1 || second.Links[0].SpanID != first.SpanID || second.Links[0].TraceID != first.TraceID {
				t.Fatalf("second turn's links: %+v; want the first turn %s", second.Links, first.SpanID)
			}
			chats := named(spans, "chat anthropic/claude-test")
			if len(chats) != 4 {
				t.Fatalf("%d chat spans, want 4", len(chats))
			}
			for _, c := range chats {
				if c.ParentSpanID != first.SpanID && c.ParentSpanID != second.SpanID {
					t.Fatalf("chat span under %s, not a turn", c.ParentSpanID)
				}
				if _, ok := c.Attrs["gen_ai.output.messages"]; ok {
					t.Fatal("content on a span without capture_content")
				}
				if c.Attrs["gen_ai.usage.input_tokens"] == int64(100) && (c.Attrs["gen_ai.usage.cache_read.input_tokens"] != int64(40) ||
					c.Attrs["arbor.cost_usd"] != 0.25 || c.Attrs["gen_ai.response.id"] != "msg_1") {
					t.Fatalf("first call's attributes: %v", c.Attrs)
				}
			}
			tools := named(spans, "execute_tool shell")
			if len(tools) != 2 {
				t.Fatalf("%d tool spans, want 2", len(tools))
			}
			var events []string
			for _, e := range tools[0].Events {
				events = append(events, e.Name)
			}
			if strings.Join(events, ",") != "approval.requested,approval.resolved,sandbox.blocked" ||
				tools[0].Events[2].Attrs["arbor.sandbox.blocked"] != "read /etc/shadow" || tools[0].Attrs["gen_ai.tool.call.id"] != "c1" {
				t.Fatalf("tool span: %+v", tools[0])
			}
			if _, ok := tools[0].Attrs["gen_ai.tool.call.arguments"]; ok {
				t.Fatal("tool arguments on a span without capture_content")
			}
		})
	}
}

// TestCaptureContent: with the conventions' switch (the variable here)
// answers and tool arguments and results go on the spans.
func TestCaptureContent(t *testing.T) {
	t.Parallel()
	b := setup(t, telemetry.Settings{}, map[string]string{"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"})
	if err := b.st.CreateSession(b.ctx, store.Session{ID: "conv", Status: store.SessionIdle}); err != nil {
		t.Fatal(err)
	}
	b.turn("conv")
	if err := b.tr.Flush(b.ctx); err != nil {
		t.Fatal(err)
	}
	spans := b.col.WaitSpans(t, time.Minute, "a turn's 4 spans", func(s []oteltest.Span) bool { return len(s) >= 4 })
	tool := named(spans, "execute_tool shell")[0]
	if tool.Attrs["gen_ai.tool.call.arguments"] != `{"command":"ls"}` || tool.Attrs["gen_ai.tool.call.result"] != "a.txt" {
		t.Fatalf("tool span content: %v", tool.Attrs)
	}
	found := false
	for _, c := range named(spans, "chat anthropic/claude-test") {
		out, _ := c.Attrs["gen_ai.output.messages"].(string)
		found = found || strings.Contains(out, `"content":"Listing the files."`) && strings.Contains(out, `"finish_reason":"tool_call"`)
	}
	if !found {
		t.Fatal("no chat span carries its answer")
	}
}

// TestNodeSessionsOfOtherDrivers: a node's session that no tree event
// of this bus named (a turn this worker runs for a driver elsewhere)
// makes no spans here: the driver makes them.
func TestNodeSessionsOfOtherDrivers(t *testing.T) {
	t.Parallel()
	b := setup(t, telemetry.Settings{}, nil)
	if err := b.st.CreateSession(b.ctx, store.Session{ID: "run.2", RunID: "run", NodeID: 2, Status: store.SessionIdle}); err != nil {
		t.Fatal(err)
	}
	if err := b.st.CreateSession(b.ctx, store.Session{ID: "conv", Status: store.SessionIdle}); err != nil {
		t.Fatal(err)
	}
	b.turn("run.2")
	b.turn("not-stored-yet") // a node's deferred session
	b.turn("conv")
	if err := b.tr.Flush(b.ctx); err != nil {
		t.Fatal(err)
	}
	spans := b.col.WaitSpans(t, time.Minute, "the conversation's 4 spans", func(s []oteltest.Span) bool { return len(s) >= 4 })
	for _, s := range spans {
		if s.Attrs["gen_ai.conversation.id"] != "conv" {
			t.Fatalf("a span of another session: %q %v", s.Name, s.Attrs)
		}
	}
}

// TestEndedNodeSessionsAreForgotten: a node's session is forgotten when
// its node ends, unless a span of it is open, so a hosted run (a
// conversation's sub-agents, which never finishes) does not keep every
// node session it ever had; its node span is still the parent of its
// calls.
func TestEndedNodeSessionsAreForgotten(t *testing.T) {
	t.Parallel()
	b := setup(t, telemetry.Settings{}, nil)
	node := func(id int64, state tree.NodeState) {
		b.bus.Publish(&tree.NodeChanged{RunID: "hosted", Node: tree.NodeView{ID: id, SessionID: fmt.Sprint("hosted.", id), State: state}})
	}
	for id := int64(2); id <= 11; id++ {
		node(id, tree.StateActive)
		b.turn(fmt.Sprint("hosted.", id))
		node(id, tree.StateComplete)
	}
	node(12, tree.StateActive) // a turn whose model call is open when the node is stopped
	b.bus.Publish(&agent.StepStarted{Meta: meta("hosted.12"), Step: 1, Model: "anthropic/claude-test"})
	node(12, tree.StateCancelled)
	if err := b.tr.Flush(b.ctx); err != nil {
		t.Fatal(err)
	}
	if got := telemetry.SessionsOf(b.tr); got != 1 {
		t.Fatalf("%d sessions kept after 10 nodes ended and one ended with a call open; want that one", got)
	}
	spans := b.col.WaitSpans(t, time.Minute, "ten nodes' calls", func(s []oteltest.Span) bool { return len(named(s, "execute_tool shell")) >= 10 })
	for _, s := range named(spans, "execute_tool shell") {
		if s.ParentSpanID == "" || s.TraceID != telemetry.TraceID("hosted").String() {
			t.Fatalf("a node's tool call is not in its run's trace under a parent: %+v", s)
		}
	}
}

// TestEnabled: on only with an endpoint, off under OTEL_SDK_DISABLED;
// an unknown protocol is refused.
func TestEnabled(t *testing.T) {
	t.Parallel()
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	for _, tc := range []struct {
		name string
		s    telemetry.Settings
		env  func(string) string
		want bool
	}{
		{"nothing", telemetry.Settings{}, env(), false},
		{"config", telemetry.Settings{Endpoint: "localhost:4317"}, env(), true},
		{"env", telemetry.Settings{}, env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"), true},
		{"traces env", telemetry.Settings{}, env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://c:4318/v1/traces"), true},
		{"disabled", telemetry.Settings{Endpoint: "localhost:4317"}, env("OTEL_SDK_DISABLED", "true"), false},
	} {
		if got := tc.s.Enabled(tc.env); got != tc.want {
			t.Errorf("%s: Enabled = %v, want %v", tc.name, got, tc.want)
		}
	}
	_, err := telemetry.Start(context.Background(), telemetry.Settings{Endpoint: "localhost:4317"}, env("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"))
	if err == nil || !strings.Contains(err.Error(), `"http/json" is not supported`) {
		t.Fatalf("Start with http/json: %v", err)
	}
}

// TestTraceparent: the ids a run's spans get are its own and stable; a
// run started under a span keeps that span's trace.
func TestTraceparent(t *testing.T) {
	t.Parallel()
	ra, rb := store.Run{ID: "run-a"}, store.Run{ID: "run-b"}
	a := telemetry.Traceparent(ra, 1)
	if a != telemetry.Traceparent(ra, 1) || a == telemetry.Traceparent(ra, 2) || a[3:35] == telemetry.Traceparent(rb, 1)[3:35] {
		t.Fatalf("traceparents: %s %s", a, telemetry.Traceparent(rb, 1))
	}
	if a[3:35] != telemetry.Traceparent(ra, 0)[3:35] || !store.ValidTraceParent(a) {
		t.Fatalf("traceparent %s", a)
	}
	under := store.Run{ID: "run-a", TraceParent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
	if got := telemetry.Traceparent(under, 1); got[3:35] != "4bf92f3577b34da6a3ce929d0e0e4736" || got[36:52] != a[36:52] {
		t.Fatalf("traceparent of a run started under a span: %s (its own trace: %s)", got, a)
	}
}

// TestExportFromStore: a stored run's trace (arbor trace) is its rows'
// shape: the root under the span the run was started under, the nodes
// nested by parent with their stored times, a dependency a link, a failed
// node an error, an answer a chat span, a stored tool call an
// execute_tool span with its intent's times.
func TestExportFromStore(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	col := oteltest.Start(t)
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "arbor.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	at := func(s int) time.Time { return time.Date(2026, 12, 6, 3, 0, s, 0, time.UTC) }
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	run := store.Run{ID: "r1", Goal: "g", Status: store.RunFailed, Model: "m", TraceParent: parent, CreatedAt: at(0), UpdatedAt: at(9)}
	if err := st.CreateRun(ctx, run); err != nil {
		t.Fatal(err)
	}
	node := func(id, parent int64, kind store.NodeKind, state store.NodeState, from, to int, blocked ...int64) store.Node {
		start, end := at(from), at(to)
		return store.Node{RunID: "r1", ID: id, ParentID: parent, Kind: kind, Goal: "g", State: state, BlockedBy: blocked,
			Error: "broke", SessionID: fmt.Sprintf("r1.%d", id), CreatedAt: at(from), StartedAt: &start, EndedAt: &end}
	}
	nodes := []store.Node{node(1, 0, store.KindGoal, store.StateFailed, 1, 8), node(2, 1, store.KindTask, store.StateComplete, 2, 4),
		node(3, 1, store.KindTask, store.StateFailed, 5, 7, 2)}
	if err := st.Commit(ctx, nil, nodes...); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if err := st.CreateSession(ctx, store.Session{ID: n.SessionID, RunID: "r1", NodeID: n.ID, Model: "anthropic/m", Status: store.SessionIdle}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := st.AppendMessages(ctx, "r1.2", llm.UserText("go"), llm.Message{Role: llm.RoleAssistant, Parts: []llm.Part{
		{Type: llm.PartToolCall, ToolCall: &llm.ToolCall{ID: "c1", Name: "shell", Input: json.RawMessage(`{}`)}}}}); err != nil {
		t.Fatal(err)
	}
	if err := st.StartIntent(ctx, store.Intent{SessionID: "r1.2", CallID: "c1", Tool: "shell", Input: json.RawMessage(`{}`), StartedAt: at(3)}); err != nil {
		t.Fatal(err)
	}
	if err := st.FinishIntent(ctx, "r1.2", "c1", "boom", true); err != nil {
		t.Fatal(err)
	}
	e, err := telemetry.Start(ctx, telemetry.Settings{Endpoint: col.GRPC, Protocol: "grpc"}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	defer e.Shutdown(ctx)
	n, err := e.Export(ctx, st, "r1")
	if err != nil || n != 6 {
		t.Fatalf("Export: %d spans, %v; want 6 (run, 3 nodes, a chat, a tool call)", n, err)
	}
	spans := col.WaitSpans(t, time.Minute, "the run's 6 spans", func(s []oteltest.Span) bool { return len(s) >= 6 })
	byID := map[string]oteltest.Span{}
	for _, s := range spans {
		if s.TraceID != parent[3:35] {
			t.Fatalf("span %q in trace %s, want the run's parent's", s.Name, s.TraceID)
		}
		byID[s.SpanID] = s
	}
	root := named(spans, "arbor run")[0]
	if root.ParentSpanID != parent[36:52] || root.StatusCode != 2 || !root.Start.Equal(at(0)) || !root.End.Equal(at(9)) {
		t.Fatalf("run span: %+v", root)
	}
	goal := named(spans, "invoke_agent goal")[0]
	if goal.ParentSpanID != root.SpanID || goal.StatusCode != 2 || !goal.Start.Equal(at(1)) || !goal.End.Equal(at(8)) {
		t.Fatalf("goal span: %+v", goal)
	}
	tasks := named(spans, "invoke_agent task")
	if len(tasks) != 2 {
		t.Fatalf("%d task spans", len(tasks))
	}
	two, three := tasks[0], tasks[1]
	if two.Attrs["arbor.node.id"] == int64(3) {
		two, three = three, two
	}
	if two.ParentSpanID != goal.SpanID || three.ParentSpanID != goal.SpanID || two.StatusCode == 2 || three.StatusCode != 2 {
		t.Fatalf("task spans: %+v %+v", two, three)
	}
	if len(three.Links) != 1 || three.Links[0].SpanID != two.SpanID || three.Links[0].Attrs["arbor.link"] != "blocked_by" {
		t.Fatalf("#3's links: %+v; want #2 (%s)", three.Links, two.SpanID)
	}
	chat := named(spans, "chat anthropic/m")
	tool := named(spans, "execute_tool shell")
	if len(chat) != 1 || chat[0].ParentSpanID != two.SpanID || len(tool) != 1 || tool[0].ParentSpanID != two.SpanID ||
		!tool[0].Start.Equal(at(3)) || tool[0].StatusCode != 2 || tool[0].Attrs["gen_ai.tool.call.id"] != "c1" {
		t.Fatalf("calls of #2: chat %+v, tool %+v", chat, tool)
	}
	if _, err := e.Export(ctx, st, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Export of a run that is not stored: %v", err)
	}
}
