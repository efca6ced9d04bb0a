package cli_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/store/postgres/pgtest"
	"github.com/arbor-run/arbor/internal/telemetry"
	"github.com/arbor-run/arbor/internal/telemetry/oteltest"
	"github.com/arbor-run/arbor/internal/tree/treetest"
)

// TestTelemetryClusterRunIsOneTrace runs a cluster run on two arbor
// workers exporting to one real collector, started under a span
// (TRACEPARENT) the workers know only from the run's row; it kills the
// worker driving it once its first spans are exported, and reads one
// trace back: the killed worker's spans and the spans of the worker that
// took the run over, every one under the run's root span, itself under
// the span the run was started under.
func TestTelemetryClusterRunIsOneTrace(t *testing.T) {
	t.Parallel()
	col := oteltest.Start(t)
	e := newEnv(t)
	dsn := pgtest.DSN(t)
	started := filepath.Join(e.home, "leaf.started")
	srv := llmtest.NewServerFunc(treetest.GoalResponder(treetest.ByGoal{
		"trace the cluster": {
			treetest.Calls(treetest.Call("spawn", map[string]any{"goal": "slow leaf", "prompt": "p"})),
			treetest.Complete("root draft"),
			treetest.Complete("ROOT: traced"),
		},
		"slow leaf": {
			treetest.Calls(treetest.Call("shell", map[string]any{"command": "touch " + started + "; sleep 4"})),
			treetest.Complete("leaf result"),
		},
	}))
	defer srv.Close()
	model := e.useProvider("anthropic", srv.URL)
	// Spans leave each worker within 100 ms, so the killed one's are
	// out before the kill.
	e.vars = append(e.vars, "OTEL_EXPORTER_OTLP_ENDPOINT="+col.HTTP, "OTEL_BSP_SCHEDULE_DELAY=100")

	workers := []*proc{
		e.start("worker", "--listen", "127.0.0.1", "--store", dsn, "--concurrency", "2", "--yes"),
		e.start("worker", "--listen", "127.0.0.1", "--store", dsn, "--concurrency", "2", "--yes"),
	}
	for i, w := range workers {
		waitUntil(t, time.Minute, fmt.Sprintf("worker %d to serve", i), func() bool { return strings.Contains(w.stderr.String(), "serving queue") })
	}
	// Only the process that starts the run is under a span (a CI job's,
	// say): the workers find its trace in the run's row.
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	e.vars = append(e.vars, "TRACEPARENT="+parent)
	run := e.start("run", "--cluster", "--store", dsn, "--model", model, "trace the cluster")
	logs := func() string {
		var b strings.Builder
		for i, w := range workers {
			fmt.Fprintf(&b, "--- worker %d:\n%s", i, w.stderr.String())
		}
		fmt.Fprintf(&b, "--- run:\n%s", run.stderr.String())
		return b.String()
	}
	driver := func(except int) int {
		for i, w := range workers {
			if i != except && drivingLine.MatchString(w.stderr.String()) {
				return i
			}
		}
		return -1
	}
	waitUntil(t, time.Minute, "the leaf's tool to run", func() bool { _, err := os.Stat(started); return err == nil })
	first := driver(-1)
	if first < 0 {
		t.Fatalf("no worker drives the run:\n%s", logs())
	}
	id := drivingLine.FindStringSubmatch(workers[first].stderr.String())[1]
	trace := parent[3:35]
	root := telemetry.SpanID(id, 0).String()
	// The root's first model call and its spawn are exported by the
	// driver before it dies.
	col.WaitSpans(t, time.Minute, "the first driver's spans", func(s []oteltest.Span) bool {
		return len(byName(s, trace)["execute_tool spawn"]) == 1
	})
	_ = workers[first].cmd.Process.Signal(syscall.SIGKILL)
	<-workers[first].exited
	waitUntil(t, time.Minute, "the other worker to take the run over", func() bool { return driver(first) >= 0 })
	second := driver(first)

	select {
	case <-run.exited:
	case <-time.After(2 * time.Minute):
		t.Fatalf("run --cluster did not end\n%s", logs())
	}
	if run.code != 0 || strings.TrimSpace(run.stdout.String()) != "ROOT: traced" {
		t.Fatalf("run --cluster: exit %d stdout %q\n%s", run.code, run.stdout.String(), logs())
	}
	_ = workers[second].cmd.Process.Signal(syscall.SIGTERM) // flushes its spans
	<-workers[second].exited

	spans := col.WaitSpans(t, time.Minute, "the run's root span", func(s []oteltest.Span) bool {
		return len(byName(s, trace)["arbor run"]) == 1
	})
	ids := map[string]bool{}
	pids := map[string]map[any]bool{} // span name → the processes that made such spans
	for _, s := range spans {
		if s.TraceID == trace {
			ids[s.SpanID] = true
		}
	}
	for _, s := range spans {
		if s.TraceID != trace {
			continue
		}
		if s.SpanID == root && s.ParentSpanID != parent[36:52] {
			t.Fatalf("the run's span has parent %s, want the span it was started under", s.ParentSpanID)
		}
		if s.SpanID != root && !ids[s.ParentSpanID] {
			t.Fatalf("span %q %s has parent %s, not in the run's trace", s.Name, s.SpanID, s.ParentSpanID)
		}
		if pids[s.Name] == nil {
			pids[s.Name] = map[any]bool{}
		}
		pids[s.Name][s.Resource["process.pid"]] = true
	}
	named := byName(spans, trace)
	if len(named["invoke_agent goal"]) != 1 || len(named["invoke_agent task"]) != 1 {
		t.Fatalf("node spans: %d goal, %d task\n%v", len(named["invoke_agent goal"]), len(named["invoke_agent task"]), named)
	}
	killed, took := int64(workers[first].cmd.Process.Pid), int64(workers[second].cmd.Process.Pid)
	chat := "chat " + model
	if !pids[chat][killed] || !pids[chat][took] {
		for _, s := range spans {
			t.Logf("%s %s parent=%s %q pid=%v step=%v conv=%v", s.TraceID, s.SpanID, s.ParentSpanID, s.Name, s.Resource["process.pid"], s.Attrs["arbor.step"], s.Attrs["gen_ai.conversation.id"])
		}
		t.Log(logs())
		t.Fatalf("chat spans made by %v; want both the killed worker %d and the one that took over %d", pids[chat], killed, took)
	}
	if !pids["arbor run"][took] {
		t.Fatalf("the run span was made by %v, want the worker that ended the run (%d)", pids["arbor run"], took)
	}
}
