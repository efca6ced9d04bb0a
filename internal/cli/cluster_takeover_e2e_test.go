package cli_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/store/postgres/pgtest"
	"github.com/arbor-run/arbor/internal/tree/treetest"
)

// TestDeadDriversTurnsAreTakenOverAtOnce: the worker driving a run runs
// its leaf's turn itself and is SIGKILLed in the middle of the leaf's
// tool. Every lease lives an hour (--lease-ttl 1h --heartbeat 20m), so a
// takeover that waited for the run lease or the leaf's node lease would
// come long after the test gave up. A second worker on the same machine
// drives the run, its claim of the leaf takes the dead driver's node
// lease over and finishes the dead driver's job, and the leaf goes on
// from its stored transcript: the events come in the order kill → the
// leaf's next model turn → the root's last turn → the run's end, each
// model turn once (on a fresh run the test would hang for an hour
// without the takeover, so it is the order, not a clock, that shows it), and the dead job is cancelled naming the dead pid.
func TestDeadDriversTurnsAreTakenOverAtOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dsn := pgtest.DSN(t)
	mark := func(name string) string { return filepath.Join(e.home, name) }
	respond := treetest.GoalResponder(treetest.ByGoal{
		"take it over": {
			treetest.Calls(treetest.Call("spawn", map[string]any{"goal": "leaf", "prompt": "p"})),
			treetest.Complete("root draft"),
			treetest.Complete("ROOT: taken over"),
		},
		"leaf": {
			// $PPID is the worker running the leaf's turn.
			treetest.Calls(treetest.Call("shell", map[string]any{"command": "echo $PPID > " + mark("leaf.pid") + "; exec sleep 300"})),
			treetest.Complete("leaf result"),
		},
	})
	var (
		mu     sync.Mutex
		events []string // model turns served ("goal/turn") and the kill, in order
	)
	srv := llmtest.NewServerFunc(func(req llmtest.Request) llmtest.Turn {
		mu.Lock()
		events = append(events, fmt.Sprintf("%s/%d", treetest.GoalOf(req), treetest.Turns(req)))
		mu.Unlock()
		return respond(req)
	})
	defer srv.Close()
	model := e.useProvider("anthropic", srv.URL)
	worker := func() *proc {
		w := e.start("worker", "--listen", "127.0.0.1", "--store", dsn, "--yes", "--lease-ttl", "1h", "--heartbeat", "20m")
		waitUntil(t, time.Minute, "a worker to serve", func() bool { return strings.Contains(w.stderr.String(), "serving queue") })
		return w
	}

	first := worker()
	run := e.start("run", "--cluster", "--store", dsn, "--model", model, "take it over")
	logs := func(ws ...*proc) string {
		var b strings.Builder
		for i, w := range ws {
			fmt.Fprintf(&b, "--- worker %d (pid %d):\n%s", i, w.cmd.Process.Pid, w.stderr.String())
		}
		fmt.Fprintf(&b, "--- run:\n%s", run.stderr.String())
		return b.String()
	}
	// The only worker drives the run and runs the leaf's turn; the
	// root's turn has ended (a model call in flight at the kill would be
	// sent again).
	waitUntil(t, time.Minute, "the root to wait", func() bool { return strings.Contains(run.stderr.String(), "#1 active → waiting") })
	if pid := readPID(t, mark("leaf.pid")); pid != first.cmd.Process.Pid {
		t.Fatalf("the leaf's tool ran under pid %d, not the driving worker's %d\n%s", pid, first.cmd.Process.Pid, logs(first))
	}
	m := drivingLine.FindStringSubmatch(first.stderr.String())
	if m == nil {
		t.Fatalf("the first worker drives no run\n%s", logs(first))
	}
	id := m[1]
	second := worker()

	mu.Lock()
	events = append(events, "kill")
	mu.Unlock()
	_ = first.cmd.Process.Signal(syscall.SIGKILL)
	<-first.exited

	select {
	case <-run.exited:
	case <-time.After(2 * time.Minute):
		t.Fatalf("run --cluster did not end\n%s", logs(first, second))
	}
	if run.code != 0 || strings.TrimSpace(run.stdout.String()) != "ROOT: taken over" {
		t.Fatalf("run --cluster: exit %d stdout %q\n%s", run.code, run.stdout.String(), logs(first, second))
	}
	if !strings.Contains(second.stderr.String(), "driving run "+id) {
		t.Fatalf("the second worker never drove run %s\n%s", id, logs(first, second))
	}
	mu.Lock()
	got := slices.Clone(events)
	mu.Unlock()
	// Before the kill the root's first two turns and the leaf's first, the
	// latter two in either order.
	want := []string{"take it over/0", "take it over/1", "leaf/0", "kill", "leaf/1", "take it over/2"}
	if len(got) == len(want) && got[1] == "leaf/0" {
		got[1], got[2] = got[2], got[1]
	}
	if !slices.Equal(got, want) {
		t.Fatalf("events %q, want %q\n%s", got, want, logs(first, second))
	}

	// The dead driver's job of the leaf's turn is finished, naming it.
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(t.Context(), `SELECT state, coalesce((SELECT string_agg(x->>'error', '; ') FROM unnest(errors) x), '')
		FROM river_job WHERE kind = 'arbor.node_step' AND args->>'run' = $1 ORDER BY id`, id)
	if err != nil {
		t.Fatal(err)
	}
	type job struct{ State, Errors string }
	jobs, err := pgx.CollectRows(rows, pgx.RowToStructByPos[job])
	if err != nil {
		t.Fatal(err)
	}
	dead := fmt.Sprintf("pid %d ", first.cmd.Process.Pid)
	if !slices.ContainsFunc(jobs, func(j job) bool { return j.State == "cancelled" && strings.Contains(j.Errors, dead) }) {
		t.Fatalf("the run's node jobs: %+v, want the dead driver's (%s) cancelled", jobs, dead)
	}
}
