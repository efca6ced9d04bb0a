package cli_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/telemetry"
	"github.com/arbor-run/arbor/internal/telemetry/oteltest"
)

// twoLevel is a scripted run of two levels: the root spawns one task
// (after one failed call, retried), the task completes, the root
// synthesizes. The usage of each call is given, to be found on spans.
const twoLevel = `turns:
  - fault: {kind: server_error}
  - text: I will count them.
    usage: {input: 120, output: 30, cache_read: 7, cache_write: 3}
    tool_calls:
      - name: spawn
        input: {goal: Count the leaves, prompt: "Count the oak's leaves."}
  - usage: {input: 80, output: 9}
    tool_calls:
      - name: complete
        input: {result: "Waiting for the count."}
  - expect: Count the leaves
    usage: {input: 50, output: 5}
    tool_calls:
      - name: complete
        input: {result: "12 leaves"}
  - expect: have ended
    usage: {input: 60, output: 6}
    tool_calls:
      - name: complete
        input: {result: "There are 12 leaves."}
`

// byName indexes spans of one trace by name.
func byName(spans []oteltest.Span, trace string) map[string][]oteltest.Span {
	m := map[string][]oteltest.Span{}
	for _, s := range spans {
		if s.TraceID == trace {
			m[s.Name] = append(m[s.Name], s)
		}
	}
	return m
}

// countTrace counts the spans of trace.
func countTrace(spans []oteltest.Span, trace string) int {
	n := 0
	for _, s := range spans {
		if s.TraceID == trace {
			n++
		}
	}
	return n
}

// TestTelemetryTwoLevelRun exports a two-level run to a real collector
// over OTLP/HTTP and reads the spans back: one trace, the run's root, the
// goal and its task nested as the tree, a chat span per model call with
// its tokens and finish reason (the retry as an event), an execute_tool
// span per tool call; then arbor trace exports the stored run again over
// gRPC to a second collector, with the same ids and shape.
func TestTelemetryTwoLevelRun(t *testing.T) {
	t.Parallel()
	col := oteltest.Start(t)
	e := newEnv(t)
	path := filepath.Join(e.home, "two.yaml")
	if err := os.WriteFile(path, []byte(twoLevel), 0o644); err != nil {
		t.Fatal(err)
	}
	script, err := llmtest.LoadScript(path)
	if err != nil {
		t.Fatal(err)
	}
	// A model server over HTTP, not script:FILE: its calls are retried.
	srv := llmtest.NewServer()
	defer srv.Close()
	srv.Push(script.Turns...)
	model := e.useProvider("anthropic", srv.URL)
	e.vars = append(e.vars, "OTEL_EXPORTER_OTLP_ENDPOINT="+col.HTTP, "OTEL_SERVICE_NAME=arbor-e2e")
	o := e.run("run", "--model", model, "--max-parallel", "1", "How many leaves?")
	if o.code != 0 || !strings.Contains(o.stdout, "There are 12 leaves.") {
		t.Fatalf("run: exit %d stdout %q\n%s", o.code, o.stdout, o.stderr)
	}
	id := runID(t, o.stderr)
	trace := telemetry.TraceID(id).String()
	spans := col.WaitSpans(t, time.Minute, "the run's 11 spans", func(s []oteltest.Span) bool { return countTrace(s, trace) >= 11 })
	if n := countTrace(spans, trace); n != 11 {
		for _, s := range spans {
			t.Logf("%s %s parent=%s %q %v", s.TraceID, s.SpanID, s.ParentSpanID, s.Name, s.Attrs)
		}
		t.Fatalf("%d spans in the run's trace, want 11 (run, 2 nodes, 4 chats, 4 tools)", n)
	}
	named := byName(spans, trace)
	root, goal, task := one(t, named, "arbor run"), one(t, named, "invoke_agent goal"), one(t, named, "invoke_agent task")
	if root.ParentSpanID != "" || root.SpanID != telemetry.SpanID(id, 0).String() || root.Attrs["arbor.run.state"] != "complete" {
		t.Fatalf("run span: %+v", root)
	}
	if root.Resource["service.name"] != "arbor-e2e" {
		t.Fatalf("service.name %v", root.Resource["service.name"])
	}
	if goal.ParentSpanID != root.SpanID || task.ParentSpanID != goal.SpanID {
		t.Fatalf("tree: goal's parent %s (run %s), task's parent %s (goal %s)", goal.ParentSpanID, root.SpanID, task.ParentSpanID, goal.SpanID)
	}
	if task.Attrs["gen_ai.operation.name"] != "invoke_agent" || task.Attrs["arbor.node.id"] != int64(2) || task.Attrs["gen_ai.usage.input_tokens"] != int64(50) {
		t.Fatalf("task span attributes: %v", task.Attrs)
	}
	chats := named["chat "+model]
	if len(chats) != 4 {
		t.Fatalf("%d chat spans, want 4: %v", len(chats), named)
	}
	under := map[string]int{}
	var first oteltest.Span
	for _, c := range chats {
		under[c.ParentSpanID]++
		if c.Attrs["gen_ai.usage.input_tokens"] == int64(120) {
			first = c
		}
	}
	if under[goal.SpanID] != 3 || under[task.SpanID] != 1 {
		t.Fatalf("chat spans by parent: %v (goal %s, task %s)", under, goal.SpanID, task.SpanID)
	}
	if first.Attrs["gen_ai.usage.output_tokens"] != int64(30) || first.Attrs["gen_ai.usage.cache_read.input_tokens"] != int64(7) ||
		first.Attrs["gen_ai.usage.cache_creation.input_tokens"] != int64(3) || first.Attrs["gen_ai.operation.name"] != "chat" ||
		first.Attrs["gen_ai.provider.name"] != "anthropic" {
		t.Fatalf("first chat span's attributes: %v", first.Attrs)
	}
	if fr, _ := first.Attrs["gen_ai.response.finish_reasons"].([]any); len(fr) != 1 || fr[0] != "tool_call" {
		t.Fatalf("finish reasons %v", first.Attrs["gen_ai.response.finish_reasons"])
	}
	if len(first.Events) != 1 || first.Events[0].Name != "retry" || first.Events[0].Attrs["arbor.retry.attempt"] != int64(1) {
		t.Fatalf("first chat span's events: %+v", first.Events)
	}
	if _, ok := first.Attrs["gen_ai.output.messages"]; ok {
		t.Fatal("content captured without capture_content")
	}
	spawn := one(t, named, "execute_tool spawn")
	if spawn.ParentSpanID != goal.SpanID || spawn.Attrs["gen_ai.tool.name"] != "spawn" || spawn.Attrs["gen_ai.tool.call.id"] == "" {
		t.Fatalf("spawn span: %+v", spawn)
	}
	if n := len(named["execute_tool complete"]); n != 3 {
		t.Fatalf("%d complete spans, want 3", n)
	}
	// Metrics: the token histogram and the run count, by the SDK's
	// flush at exit.
	col.WaitPoints(t, time.Minute, "the token usage and run metrics", func(ps []oteltest.Point) bool {
		var tokens, runs bool
		for _, p := range ps {
			tokens = tokens || p.Metric == "gen_ai.client.token.usage" && p.Attrs["gen_ai.token.type"] == "input" && p.Count == 4 && p.Sum == 310
			runs = runs || p.Metric == "arbor.runs" && p.Attrs["arbor.run.state"] == "complete" && p.Value == 1
		}
		return tokens && runs
	})

	// arbor trace: the stored run again, over gRPC, to another collector.
	col2 := oteltest.Start(t)
	e.vars = append(e.vars, "OTEL_EXPORTER_OTLP_ENDPOINT=http://"+col2.GRPC, "OTEL_EXPORTER_OTLP_PROTOCOL=grpc")
	o = e.run("trace", id)
	if o.code != 0 || !strings.Contains(o.stderr, "exported 11 spans of run "+id) {
		t.Fatalf("trace: exit %d\n%s", o.code, o.stderr)
	}
	again := byName(col2.WaitSpans(t, time.Minute, "the exported trace", func(s []oteltest.Span) bool { return countTrace(s, trace) >= 11 }), trace)
	for name, want := range named {
		got := again[name]
		if len(got) != len(want) {
			t.Fatalf("arbor trace: %d spans %q, live %d", len(got), name, len(want))
		}
		parents := map[string]int{}
		for _, s := range want {
			parents[s.ParentSpanID]++
		}
		for _, s := range got {
			parents[s.ParentSpanID]--
		}
		for p, n := range parents {
			if n != 0 {
				t.Fatalf("arbor trace: spans %q under %s differ from the live ones by %d", name, p, n)
			}
		}
	}
	if g := one(t, again, "invoke_agent goal"); g.SpanID != goal.SpanID || !g.Start.Equal(goal.Start) {
		t.Fatalf("arbor trace's goal span %s at %v, live %s at %v", g.SpanID, g.Start, goal.SpanID, goal.Start)
	}

	// Without an endpoint arbor trace says what to set.
	e.vars = append(e.vars, "OTEL_SDK_DISABLED=true")
	if o := e.run("trace", id); o.code != 2 || !strings.Contains(o.stderr, "OTEL_EXPORTER_OTLP_ENDPOINT") {
		t.Fatalf("trace without telemetry: exit %d\n%s", o.code, o.stderr)
	}
}

// one is the only span named name.
func one(t *testing.T, named map[string][]oteltest.Span, name string) oteltest.Span {
	t.Helper()
	if len(named[name]) != 1 {
		t.Fatalf("%d spans %q, want 1", len(named[name]), name)
	}
	return named[name][0]
}

// TestTelemetryHeadlessTurn: a headless session's turn is a trace of its
// own (the session is no tree node's): an invoke_agent root named by the
// session id, its model calls and its shell call under it, the
// sandbox's refusal an event of the shell call's span.
func TestTelemetryHeadlessTurn(t *testing.T) {
	t.Parallel()
	col := oteltest.Start(t)
	e := newEnv(t)
	e.sandboxDefault()
	outside := fmt.Sprintf("/var/tmp/arbor-telemetry-escape-%d.txt", os.Getpid()) // not the private /tmp of a confined command
	t.Cleanup(func() { _ = os.Remove(outside) })
	srv := llmtest.NewServer(llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "shell", Input: map[string]any{"command": "echo x > " + outside}}}},
		llmtest.Turn{Text: "blocked, as expected"})
	defer srv.Close()
	model := e.useProvider("anthropic", srv.URL)
	e.vars = append(e.vars, "OTEL_EXPORTER_OTLP_ENDPOINT="+col.HTTP)
	o := e.run("headless", "--protocol", "stream-json", "--approval-mode", "default", "--model", model, "write the file")
	if o.code != 0 || !strings.Contains(o.stdout, `"subtype":"sandbox_blocked"`) {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", o.code, o.stdout, o.stderr)
	}
	spans := col.WaitSpans(t, time.Minute, "the turn's 4 spans", func(s []oteltest.Span) bool { return len(s) >= 4 })
	if len(spans) != 4 {
		t.Fatalf("%d spans, want 4 (the turn, 2 model calls, the shell call)", len(spans))
	}
	named := byName(spans, spans[0].TraceID)
	turn := one(t, named, "invoke_agent arbor")
	if turn.ParentSpanID != "" || turn.Attrs["gen_ai.conversation.id"] == "" {
		t.Fatalf("turn span: %+v", turn)
	}
	if chats := named["chat "+model]; len(chats) != 2 || chats[0].ParentSpanID != turn.SpanID || chats[1].ParentSpanID != turn.SpanID {
		t.Fatalf("chat spans: %+v", chats)
	}
	shell := one(t, named, "execute_tool shell")
	blocked := false
	for _, ev := range shell.Events {
		blocked = blocked || ev.Name == "sandbox.blocked" && strings.Contains(fmt.Sprint(ev.Attrs["arbor.sandbox.blocked"]), "may write only in")
	}
	if shell.ParentSpanID != turn.SpanID || !blocked {
		t.Fatalf("shell span: %+v", shell)
	}
}
