package cli_test

import (
	"context"
	"fmt"
	"os"
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

// TestDeadDriversTurnsAreTakenOverAtOnce: the worker driving a run, the
// only one, runs both leaves' turns itself — one in a slot of its own
// (cluster.Remote.RunHere; the root's turn holds the other of --turns 2
// when the leaves start), the other handed out and taken from the queue
// — and is SIGKILLed in the middle of both leaves' tools.
// Every lease lives an hour (--lease-ttl 1h --heartbeat 20m), so a
// takeover that waited for the run lease or a leaf's node lease would
// come long after the test gave up. A second worker on the same machine
// drives the run; its claims of the leaves take the dead driver's node
// leases over (and finish the dead driver's job), and the leaves go on
// from their stored transcripts: the events come in the order kill →
// the leaves' next model turns → the root's last turn → the run's end,
// each model turn once (without the takeover the run would wait an
// hour, so it is the order, not a clock, that shows it), and the dead
// job is cancelled naming the dead pid.
func TestDeadDriversTurnsAreTakenOverAtOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dsn := pgtest.DSN(t)
	mark := func(name string) string { return filepath.Join(e.home, name) }
	script := treetest.ByGoal{
		"take it over": {
			treetest.Calls(treetest.Call("spawn", map[string]any{"goal": "leaf a", "prompt": "p"}),
				treetest.Call("spawn", map[string]any{"goal": "leaf b", "prompt": "p"})),
			treetest.Complete("root draft"),
			treetest.Complete("ROOT: taken over"),
		},
	}
	for _, leaf := range []string{"a", "b"} {
		// $PPID is the worker running the leaf's turn.
		script["leaf "+leaf] = []llmtest.Turn{
			treetest.Calls(treetest.Call("shell", map[string]any{"command": "echo $PPID > " + mark(leaf+".pid") + "; exec sleep 300"})),
			treetest.Complete("leaf result"),
		}
	}
	respond := treetest.GoalResponder(script)
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
	worker := func(turns string) *proc {
		w := e.start("worker", "--listen", "127.0.0.1", "--store", dsn, "--yes", "--turns", turns, "--lease-ttl", "1h", "--heartbeat", "20m")
		waitUntil(t, time.Minute, "a worker to serve", func() bool { return strings.Contains(w.stderr.String(), "serving queue") })
		return w
	}

	first := worker("2")
	run := e.start("run", "--cluster", "--store", dsn, "--model", model, "--max-parallel", "4", "take it over")
	logs := func(ws ...*proc) string {
		var b strings.Builder
		for i, w := range ws {
			fmt.Fprintf(&b, "--- worker %d (pid %d):\n%s", i, w.cmd.Process.Pid, w.stderr.String())
		}
		fmt.Fprintf(&b, "--- run:\n%s", run.stderr.String())
		return b.String()
	}
	// The only worker drives the run and runs both leaves' turns; the
	// root's turn has ended (a model call in flight at the kill would be
	// sent again).
	waitUntil(t, time.Minute, "the root to wait", func() bool { return rootWaits(run.stderr.String()) })
	for _, leaf := range []string{"a", "b"} {
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
			if _, err := os.Stat(mark(leaf + ".pid")); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("leaf %s's tool never started\n%s", leaf, logs(first))
			}
		}
		if pid := readPID(t, mark(leaf+".pid")); pid != first.cmd.Process.Pid {
			t.Fatalf("leaf %s's tool ran under pid %d, not the driving worker's %d\n%s", leaf, pid, first.cmd.Process.Pid, logs(first))
		}
	}
	m := drivingLine.FindStringSubmatch(first.stderr.String())
	if m == nil {
		t.Fatalf("the first worker drives no run\n%s", logs(first))
	}
	id := m[1]
	second := worker("4")

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
	// Before the kill the root's first two turns and the leaves' first,
	// the last three in any order; after it the leaves' second turns, in
	// either order, then the root's synthesis.
	want := []string{"take it over/0", "leaf a/0", "leaf b/0", "take it over/1", "kill", "leaf a/1", "leaf b/1", "take it over/2"}
	if len(got) == len(want) {
		slices.Sort(got[1:4])
		slices.Sort(got[5:7])
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
	// One job of the dead driver: the leaf it handed out; the root's
	// turns and the other leaf's ran in its turn slot.
	if n := len(slices.DeleteFunc(slices.Clone(jobs), func(j job) bool { return j.State != "cancelled" || !strings.Contains(j.Errors, dead) })); n != 1 {
		t.Fatalf("the run's node jobs: %+v, want one of the dead driver (%s) cancelled", jobs, dead)
	}
}
