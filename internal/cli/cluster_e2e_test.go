package cli_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/store/postgres/pgtest"
	"github.com/arbor-run/arbor/internal/tree/treetest"
)

// waitUntil polls cond every 50 ms until it holds, failing t after
// limit with what it waited for (limits are hang guards, not timings).
func waitUntil(t testing.TB, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	waitLogged(t, limit, what, cond, nil)
}

// waitLogged is waitUntil that, when it gives up, also prints what logs
// returns (the processes' stderr), to tell a hang from a slow machine.
func waitLogged(t testing.TB, limit time.Duration, what string, cond func() bool, logs func() string) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			if logs != nil {
				t.Fatalf("gave up waiting for %s after %s:\n%s", what, limit, logs())
			}
			t.Fatalf("gave up waiting for %s after %s", what, limit)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestClusterRunOnAWorker: arbor run --cluster hands the offline tree demo
// to an arbor worker on the same PostgreSQL store and prints its
// transitions and result as if it drove it; --detach returns the run id
// at once and the worker completes it; without PostgreSQL the flags are
// refused.
func TestClusterRunOnAWorker(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dsn := pgtest.DSN(t)
	script, err := filepath.Abs("../../examples/tree.yaml")
	if err != nil {
		t.Fatal(err)
	}
	w := e.start("worker", "--listen", "127.0.0.1", "--store", dsn, "--concurrency", "1")
	waitUntil(t, time.Minute, "the worker to serve", func() bool { return strings.Contains(w.stderr.String(), "serving queue default") })

	o := e.run("run", "--cluster", "--store", dsn, "--model", "script:"+script, "--max-parallel", "1", "Which tree should we plant in the courtyard?")
	if o.code != 0 || !strings.HasPrefix(o.stdout, "Plant a pine.") {
		t.Fatalf("run --cluster: exit %d stdout %q\n%s\nworker:\n%s", o.code, o.stdout, o.stderr, w.stderr.String())
	}
	id := runID(t, o.stderr)
	// The lines are made from the rows read after each change
	// notification: transitions closer together than a read (the root's
	// waiting → synthesizing → complete) may show as one, and a worker
	// that ends the run before the first read shows every node as first
	// seen complete ("+ complete").
	for _, want := range []string{"queued on default for the workers", "task(spawn) Research the oak", "complete goal Which tree", "run " + id + " complete"} {
		if !strings.Contains(strings.ReplaceAll(o.stderr, "complete  goal", "complete goal"), want) {
			t.Fatalf("run --cluster stderr lacks %q:\n%s", want, o.stderr)
		}
	}
	if !strings.Contains(w.stderr.String(), "driving run "+id) {
		t.Fatalf("worker log:\n%s", w.stderr.String())
	}
	if o := e.run("tree", id, "--store", dsn); !strings.Contains(o.stdout, "run "+id+" [complete] model script:"+script+", queue default\n") {
		t.Fatalf("tree's first line:\n%s", o.stdout)
	}

	// --detach: the id on stdout, at once; the worker ends the run (a
	// script model serves each process's turns from the top: this one
	// is the worker's second run, so it gets a fresh script server).
	o = e.run("run", "--cluster", "--detach", "--store", dsn, "--model", "script:"+script, "--max-parallel", "1", "Which tree should we plant in the courtyard?")
	detached := strings.TrimSpace(o.stdout)
	if o.code != 0 || detached == "" || strings.Contains(detached, "\n") {
		t.Fatalf("run --detach: exit %d stdout %q\n%s", o.code, o.stdout, o.stderr)
	}
	waitUntil(t, time.Minute, "the detached run to complete", func() bool {
		return strings.Contains(e.run("runs", "--store", dsn).stdout, detached+"  complete")
	})

	// Refusals: --detach alone, --cluster on SQLite, --yes with --cluster.
	for _, args := range [][]string{
		{"run", "--detach", "goal"},
		{"run", "--cluster", "--yes", "--store", dsn, "goal"},
	} {
		if o := e.run(args...); o.code != 2 {
			t.Fatalf("%v: exit %d, want 2\n%s", args, o.code, o.stderr)
		}
	}
	if o := e.run("run", "--cluster", "--model", "script:"+script, "goal"); o.code != 2 || !strings.Contains(o.stderr, "needs a PostgreSQL store") {
		t.Fatalf("--cluster on SQLite: exit %d\n%s", o.code, o.stderr)
	}
	if o := e.run("worker"); o.code != 2 || !strings.Contains(o.stderr, "needs a PostgreSQL store") {
		t.Fatalf("worker on SQLite: exit %d\n%s", o.code, o.stderr)
	}
	// -C names a directory the worker serves, as --workspace does (it was
	// an unknown flag there: the worker's --workspace hid the global one).
	if o := e.run("-C", e.workspace, "worker"); o.code != 2 || !strings.Contains(o.stderr, "needs a PostgreSQL store") {
		t.Fatalf("worker -C on SQLite: exit %d\n%s", o.code, o.stderr)
	}

	// SIGTERM: the worker stops and exits 0.
	_ = w.cmd.Process.Signal(syscall.SIGTERM)
	<-w.exited
	if w.code != 0 {
		t.Fatalf("worker after SIGTERM: exit %d\n%s", w.code, w.stderr.String())
	}
}

var drivingLine = regexp.MustCompile(`driving run (\S+)`)

// rootWaits reports whether the output of `arbor run --cluster` shows the
// root waiting for its children: as the transition it saw, or, when it
// began to follow the run after the transition, as the state it found
// ("#1 + waiting").
func rootWaits(out string) bool {
	return strings.Contains(out, "#1 active → waiting") || strings.Contains(out, "#1 + waiting")
}

// TestClusterSurvivesAKilledWorker is the multi-process test of the
// cluster: three arbor worker processes and one arbor run --cluster on one
// PostgreSQL store. The worker driving the run is SIGKILLed while two of
// its nodes run shell tools; another worker takes the run over; an ask is
// answered from a fourth process; a stop from a fifth ends a node's tool
// process on the worker driving it; the run completes with every result
// once.
func TestClusterSurvivesAKilledWorker(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dsn := pgtest.DSN(t)
	mark := func(name string) string { return filepath.Join(e.home, name) }
	script := treetest.ByGoal{
		"ship the cluster": {
			treetest.Calls(
				treetest.Call("spawn", map[string]any{"goal": "slow leaf", "prompt": "p"}),
				treetest.Call("ask", map[string]any{"question": "Which region?", "options": []any{"eu", "us"}}),
				treetest.Call("spawn", map[string]any{"goal": "stoppable leaf", "prompt": "p"})),
			treetest.Complete("root draft"),
			treetest.Complete("ROOT: shipped"),
		},
		"slow leaf": {
			treetest.Calls(treetest.Call("shell", map[string]any{"command": "touch " + mark("slow.started") + "; sleep 4; echo slow >> " + mark("work.log")})),
			treetest.Complete("slow result"),
		},
		"stoppable leaf": {
			treetest.Calls(treetest.Call("shell", map[string]any{"command": "echo $$ > " + mark("stop1.pid") + "; exec sleep 300"})),
			treetest.Calls(treetest.Call("shell", map[string]any{"command": "echo $$ > " + mark("stop2.pid") + "; exec sleep 300"})),
			treetest.Complete("never reached"),
		},
	}
	respond := treetest.GoalResponder(script)
	var (
		mu     sync.Mutex
		served = map[string]int{} // goal/turn → requests
	)
	srv := llmtest.NewServerFunc(func(req llmtest.Request) llmtest.Turn {
		mu.Lock()
		served[fmt.Sprintf("%s/%d", treetest.GoalOf(req), treetest.Turns(req))]++
		mu.Unlock()
		return respond(req)
	})
	defer srv.Close()
	model := e.useProvider("anthropic", srv.URL)

	workers := make([]*proc, 3)
	for i := range workers {
		workers[i] = e.start("worker", "--listen", "127.0.0.1", "--store", dsn, "--concurrency", "2", "--yes")
	}
	for i, w := range workers {
		waitUntil(t, time.Minute, fmt.Sprintf("worker %d to serve", i), func() bool { return strings.Contains(w.stderr.String(), "serving queue") })
	}
	run := e.start("run", "--cluster", "--store", dsn, "--model", model, "ship the cluster")
	logs := func() string {
		var b strings.Builder
		for i, w := range workers {
			fmt.Fprintf(&b, "--- worker %d:\n%s", i, w.stderr.String())
		}
		fmt.Fprintf(&b, "--- run:\n%s", run.stderr.String())
		return b.String()
	}
	exists := func(name string) func() bool {
		return func() bool { _, err := os.Stat(mark(name)); return err == nil }
	}
	driver := func(except int) int {
		for i, w := range workers {
			if i != except && drivingLine.MatchString(w.stderr.String()) {
				return i
			}
		}
		return -1
	}
	// wrote is whether the file name holds a pid: the shell has run past
	// its echo. The file exists from the redirection's open on, and a
	// kill between the open and the write would leave it empty for good.
	wrote := func(name string) func() bool {
		return func() bool {
			b, err := os.ReadFile(mark(name))
			_, perr := strconv.Atoi(strings.TrimSpace(string(b)))
			return err == nil && perr == nil
		}
	}
	// The root's turn has ended (its model call in flight would be sent
	// again after the kill: a dead worker loses at most one step) and
	// both tools run.
	waitLogged(t, time.Minute, "the root to wait and both tools to run", func() bool {
		return rootWaits(run.stderr.String()) && exists("slow.started")() && wrote("stop1.pid")()
	}, logs)
	first := driver(-1)
	if first < 0 {
		t.Fatalf("no worker drives the run:\n%s", logs())
	}
	id := drivingLine.FindStringSubmatch(workers[first].stderr.String())[1]

	// Kill the worker driving the run, in the middle of both tools.
	_ = workers[first].cmd.Process.Signal(syscall.SIGKILL)
	<-workers[first].exited
	killed := time.Now()
	waitLogged(t, time.Minute, "another worker to take the run over", func() bool { return driver(first) >= 0 }, logs)
	takeover := time.Since(killed)
	second := driver(first)
	t.Logf("run %s: worker %d killed, worker %d drove it %s later", id, first, second, takeover.Round(time.Millisecond))
	// The engine's run lease lives 6 s; the reaper passes every 3 s and
	// sees at once that a holder on this machine is gone, so this is a
	// reaper period and a hand-off; 9 s (the lease time and a reaper
	// period, what a worker on another machine would take) is the bound.
	if takeover > 9*time.Second {
		t.Fatalf("takeover took %s, more than the lease time and a reaper period\n%s", takeover, logs())
	}

	if o := e.run("tree", id, "--store", dsn); !strings.Contains(o.stdout, fmt.Sprintf(", queue default, driven by pid %d on ", workers[second].cmd.Process.Pid)) {
		t.Fatalf("tree's first line names the new driver:\n%s", o.stdout)
	}
	// The ask, answered from a fourth process, reaches the new driver
	// through the database (a control request), as from another machine.
	if o := e.run("answer", id, "#3", "eu", "--store", dsn); o.code != 0 || !strings.Contains(o.stdout, "delivered to the worker driving it") {
		t.Fatalf("answer: %d %q %q\n%s", o.code, o.stdout, o.stderr, logs())
	}
	// The stoppable leaf's tool was interrupted by the kill; its agent
	// starts another, which a stop from a fifth process ends.
	waitLogged(t, time.Minute, "the stoppable leaf's second tool", exists("stop2.pid"), logs)
	pid := readPID(t, mark("stop2.pid"))
	if o := e.run("stop", id, "#4", "--store", dsn); o.code != 0 || !strings.Contains(o.stdout, "by the worker driving it") {
		t.Fatalf("stop: %d %q %q\n%s", o.code, o.stdout, o.stderr, logs())
	}
	waitUntil(t, 30*time.Second, "the stopped node's tool process to end", func() bool { return !running(pid) })
	// The killed worker's tool process was ended by the worker that took
	// the node over (its intent names the process group).
	old := readPID(t, mark("stop1.pid"))
	waitUntil(t, 30*time.Second, "the killed worker's tool process to end", func() bool { return !running(old) })

	select {
	case <-run.exited:
	case <-time.After(2 * time.Minute):
		t.Fatalf("run --cluster did not end\n%s", logs())
	}
	if run.code != 0 || strings.TrimSpace(run.stdout.String()) != "ROOT: shipped" {
		t.Fatalf("run --cluster: exit %d stdout %q\n%s", run.code, run.stdout.String(), logs())
	}

	// Every result once: each node's turns were served once, but the
	// slow leaf's and the stoppable leaf's first (whose answers were
	// stored before the kill: their tools were interrupted, not rerun).
	mu.Lock()
	defer mu.Unlock()
	for key, n := range served {
		if n != 1 {
			t.Errorf("%s served %d times, want once", key, n)
		}
	}
	for _, key := range []string{"ship the cluster/0", "ship the cluster/1", "ship the cluster/2", "slow leaf/0", "slow leaf/1", "stoppable leaf/0", "stoppable leaf/1"} {
		if served[key] != 1 {
			t.Errorf("%s served %d times, want 1 (all: %v)", key, served[key], served)
		}
	}
	if b, _ := os.ReadFile(mark("work.log")); strings.Count(string(b), "slow") > 1 {
		t.Errorf("the slow tool ran twice: %q", b)
	}
	o := e.run("tree", id, "--store", dsn)
	for _, want := range []string{"#1 [complete]", "#2 [complete]", "#3 [complete]", "#4 [cancelled]"} {
		if !strings.Contains(o.stdout, want) {
			t.Errorf("tree lacks %q:\n%s", want, o.stdout)
		}
	}
	if t.Failed() {
		t.Log(logs())
	}
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	var pid int
	waitUntil(t, 10*time.Second, "pid in "+path, func() bool {
		b, err := os.ReadFile(path)
		if err != nil {
			return false
		}
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	})
	return pid
}

// TestStoppedWorkerHandsItsRunOn: SIGTERM to the worker driving a run
// whose node runs a shell tool makes it exit 0 at once, leaving the run
// running; the other worker takes it on and the run completes, the
// interrupted tool reported to its agent and not run again.
func TestStoppedWorkerHandsItsRunOn(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dsn := pgtest.DSN(t)
	mark := filepath.Join(e.home, "tool.log")
	srv := llmtest.NewServerFunc(treetest.GoalResponder(treetest.ByGoal{
		"hand it on": {
			treetest.Calls(treetest.Call("shell", map[string]any{"command": "echo started >> " + mark + "; sleep 300"})),
			treetest.Complete("handed on"),
		},
	}))
	defer srv.Close()
	model := e.useProvider("anthropic", srv.URL)
	workers := []*proc{e.start("worker", "--listen", "127.0.0.1", "--store", dsn, "--yes"), e.start("worker", "--listen", "127.0.0.1", "--store", dsn, "--yes")}
	for _, w := range workers {
		waitUntil(t, time.Minute, "a worker to serve", func() bool { return strings.Contains(w.stderr.String(), "serving queue") })
	}
	run := e.start("run", "--cluster", "--store", dsn, "--model", model, "hand it on")
	waitUntil(t, time.Minute, "the tool to run", func() bool { b, _ := os.ReadFile(mark); return len(b) > 0 })
	first := -1
	for i, w := range workers {
		if drivingLine.MatchString(w.stderr.String()) {
			first = i
		}
	}
	if first < 0 {
		t.Fatal("no worker drives the run")
	}
	_ = workers[first].cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-workers[first].exited:
	case <-time.After(30 * time.Second):
		t.Fatalf("the stopped worker did not exit:\n%s", workers[first].stderr.String())
	}
	if workers[first].code != 0 || !strings.Contains(workers[first].stderr.String(), "let run") {
		t.Fatalf("stopped worker: exit %d\n%s", workers[first].code, workers[first].stderr.String())
	}
	select {
	case <-run.exited:
	case <-time.After(time.Minute):
		t.Fatalf("the run did not end:\n%s\n%s", workers[1-first].stderr.String(), run.stderr.String())
	}
	if run.code != 0 || strings.TrimSpace(run.stdout.String()) != "handed on" {
		t.Fatalf("run: exit %d %q\n%s\nother worker:\n%s", run.code, run.stdout.String(), run.stderr.String(), workers[1-first].stderr.String())
	}
	if !drivingLine.MatchString(workers[1-first].stderr.String()) {
		t.Fatalf("the other worker never drove the run:\n%s", workers[1-first].stderr.String())
	}
	if b, _ := os.ReadFile(mark); strings.Count(string(b), "started") != 1 {
		t.Fatalf("the tool ran %d times", strings.Count(string(b), "started"))
	}
	// The agent was told its tool was interrupted.
	reqs := srv.Requests()
	if last := reqs[len(reqs)-1].LastUserText(); !strings.Contains(strings.ToLower(last), "interrupt") {
		t.Fatalf("the resumed agent was told %q", last)
	}
}

// running reports whether process pid exists and is not a zombie (an
// orphan ended but not yet reaped by init).
func running(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state …: the state follows the last ')'.
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}

// TestResumeHandsAClusterRunBackToTheWorkers: a cluster run that spent
// its token budget is continued by arbor resume --max-tokens on the
// workers (not in the resuming process), which complete it.
func TestResumeHandsAClusterRunBackToTheWorkers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dsn := pgtest.DSN(t)
	big := llmtest.Usage{Input: 1000, Output: 10}
	with := func(turn llmtest.Turn) llmtest.Turn { turn.Usage = big; return turn }
	srv := llmtest.NewServerFunc(treetest.GoalResponder(treetest.ByGoal{
		"spend it": {
			with(treetest.Calls(treetest.Call("spawn", map[string]any{"goal": "child", "prompt": "p"}))),
			with(treetest.Complete("draft")),
			with(treetest.Complete("ROOT: resumed")),
		},
		"child": {with(treetest.Complete("child result"))},
	}))
	defer srv.Close()
	model := e.useProvider("anthropic", srv.URL)
	w := e.start("worker", "--listen", "127.0.0.1", "--store", dsn)
	waitUntil(t, time.Minute, "the worker to serve", func() bool { return strings.Contains(w.stderr.String(), "serving queue") })

	o := e.run("run", "--cluster", "--store", dsn, "--model", model, "--max-tokens", "1500", "spend it")
	if o.code != 1 || !strings.Contains(o.stderr, "arbor resume") {
		t.Fatalf("run over budget: exit %d %q\n%s", o.code, o.stdout, o.stderr)
	}
	id := runID(t, o.stderr)
	o = e.run("resume", id, "--store", dsn, "--max-tokens", "100000")
	if o.code != 0 || strings.TrimSpace(o.stdout) != "ROOT: resumed" || !strings.Contains(o.stderr, "handed back to the workers") {
		t.Fatalf("resume: exit %d %q\n%s\nworker:\n%s", o.code, o.stdout, o.stderr, w.stderr.String())
	}
	if n := strings.Count(w.stderr.String(), "driving run "+id); n != 2 {
		t.Fatalf("the worker drove the run %d times, want 2 (before and after the resume):\n%s", n, w.stderr.String())
	}
}

// TestClusterLiveViewAnswersAsk: arbor run --cluster on a terminal shows
// the live view of the run a worker drives; the question of its ask node
// and the approval of a write, which the worker publishes, are answered
// in the view and reach the worker as control requests.
func TestClusterLiveViewAnswersAsk(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dsn := pgtest.DSN(t)
	srv := llmtest.NewServerFunc(treetest.Responder(treetest.Script{
		1: {
			treetest.Calls(
				treetest.Call("ask", map[string]any{"question": "Which region?", "options": []any{"us-east", "eu-west"}, "default": "us-east"}),
				treetest.Call("spawn", map[string]any{"goal": "Deploy", "prompt": "Deploy to the chosen region.", "blocked_by": []any{"#2"}})),
			treetest.Complete("draft"),
			treetest.Complete("Deployed."),
		},
		3: {
			treetest.Calls(treetest.Call("write_file", map[string]any{"path": "deployed.txt", "content": "eu-west"})),
			treetest.Complete("deployed"),
		},
	}))
	defer srv.Close()
	model := e.useProvider("anthropic", srv.URL)
	w := e.start("worker", "--listen", "127.0.0.1", "--store", dsn) // no --yes: the write waits for a person
	waitUntil(t, time.Minute, "the worker to serve", func() bool { return strings.Contains(w.stderr.String(), "serving queue") })
	con, wait := startOnTerminal(t, e, "run", "--cluster", "--store", dsn, "--model", model, "deploy the service")
	con.expect("Which region?", 1)
	con.expect("eu-west", 1)
	con.send("2\r")
	// The worker's approval of #3's write, published to the database,
	// is approved in the view.
	con.expect("[y] yes", 1)
	con.send("y")
	stdout, code := wait()
	if code != 0 || strings.TrimSpace(stdout) != "Deployed." {
		t.Fatalf("exit %d stdout %q\n%s\nworker:\n%s", code, stdout, con.text(), w.stderr.String())
	}
	for _, req := range srv.Requests() {
		if treetest.NodeOf(req) == 3 && !strings.Contains(req.Messages[0].Text(), "eu-west") {
			t.Fatalf("#3 should get the answer:\n%s", req.Messages[0].Text())
		}
	}
	if !strings.Contains(con.text(), "Deploy") || !strings.Contains(con.text(), "#3") {
		t.Fatalf("the view should show the tree:\n%s", con.text())
	}
	if b, err := os.ReadFile(filepath.Join(e.workspace, "deployed.txt")); err != nil || string(b) != "eu-west" {
		var told []string
		for _, req := range srv.Requests() {
			if treetest.NodeOf(req) == 3 {
				told = append(told, req.LastUserText())
			}
		}
		t.Fatalf("the approved write: %q %v\n#3 was told: %q\nworker:\n%s", b, err, told, w.stderr.String())
	}
}

// TestWorkerServesOnlyItsWorkspaces: a worker limited to another
// directory by --workspace never drives the run (it snoozes the
// hand-off and says so); a worker that has the run's workspace does.
func TestWorkerServesOnlyItsWorkspaces(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dsn := pgtest.DSN(t)
	srv := llmtest.NewServerFunc(treetest.GoalResponder(treetest.ByGoal{"where": {treetest.Complete("here")}}))
	defer srv.Close()
	model := e.useProvider("anthropic", srv.URL)
	elsewhere := t.TempDir()
	limited := e.start("worker", "--listen", "127.0.0.1", "--store", dsn, "--workspace", elsewhere)
	waitUntil(t, time.Minute, "the limited worker to serve", func() bool { return strings.Contains(limited.stderr.String(), "serving queue") })
	o := e.run("run", "--cluster", "--detach", "--store", dsn, "--model", model, "where")
	id := strings.TrimSpace(o.stdout)
	if o.code != 0 || id == "" {
		t.Fatalf("run --detach: %d %q\n%s", o.code, o.stdout, o.stderr)
	}
	waitUntil(t, time.Minute, "the limited worker to refuse the run", func() bool {
		return strings.Contains(limited.stderr.String(), "workspace not served here")
	})
	full := e.start("worker", "--listen", "127.0.0.1", "--store", dsn)
	waitUntil(t, time.Minute, "the run to complete", func() bool {
		return strings.Contains(e.run("runs", "--store", dsn).stdout, id+"  complete")
	})
	if strings.Contains(limited.stderr.String(), "driving run") {
		t.Fatalf("the limited worker drove the run:\n%s", limited.stderr.String())
	}
	if !strings.Contains(full.stderr.String(), "driving run "+id) {
		t.Fatalf("the full worker did not drive the run:\n%s", full.stderr.String())
	}
}

// TestServeSteersClusterRun: arbor serve steers a cluster run that a
// worker drives through the database, as it would from another machine:
// the ask is answered, the write approved (once: a second resolution is
// a conflict), and the run completes.
func TestServeSteersClusterRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.vars = append(e.vars, "ARBOR_STORE="+pgtest.DSN(t))
	srv := llmtest.NewServerFunc(treetest.Responder(treetest.Script{
		1: {
			treetest.Calls(
				treetest.Call("ask", map[string]any{"question": "Which region?"}),
				treetest.Call("spawn", map[string]any{"goal": "writer", "prompt": "Write a.txt.", "blocked_by": []any{"#2"}})),
			treetest.Complete("draft"),
			treetest.Complete("final: eu"),
		},
		3: {
			treetest.Calls(treetest.Call("write_file", map[string]any{"path": "a.txt", "content": "from the web"})),
			treetest.Complete("written"),
		},
	}))
	defer srv.Close()
	model := e.useProvider("anthropic", srv.URL)
	// The run's driver runs no turns (--turns 0) and the second worker
	// drives no run (it starts after the first took the run): every turn
	// runs on the second, and its approvals and the ask's answer cross
	// from one worker to the other.
	w := e.start("worker", "--listen", "127.0.0.1", "--turns", "0") // no --yes
	waitUntil(t, time.Minute, "the worker to serve", func() bool { return strings.Contains(w.stderr.String(), "serving queue") })
	o := e.run("run", "--cluster", "--detach", "--model", model, "steer the cluster")
	run := strings.TrimSpace(o.stdout)
	if o.code != 0 || run == "" {
		t.Fatalf("run --detach: %d %q\n%s", o.code, o.stdout, o.stderr)
	}
	waitUntil(t, time.Minute, "the first worker to drive the run", func() bool { return strings.Contains(w.stderr.String(), "driving run "+run) })
	turns := e.start("worker", "--listen", "127.0.0.1")
	defer func() {
		if t.Failed() {
			t.Logf("driver:\n%s\nturns:\n%s", w.stderr.String(), turns.stderr.String())
		}
	}()
	web := startServe(t, e)
	events := web.events(run)

	waitUntil(t, time.Minute, "the ask to be asked", func() bool { return strings.Contains(w.stderr.String(), "#2 pending → active") })
	// The worker asks a moment after the activation; until then the
	// answer is refused.
	waitUntil(t, time.Minute, "the answer to be taken", func() bool {
		return web.post("/api/runs/"+run+"/nodes/2/answer", `{"answer": "eu"}`, nil) == http.StatusOK
	})
	iid := web.approval(events, map[string]bool{}, 3, "write_file")
	web.mustPost("/api/runs/"+run+"/interactions/"+iid, `{"allow": true}`)
	if code := web.post("/api/runs/"+run+"/interactions/"+iid, `{"allow": true}`, nil); code != http.StatusConflict {
		t.Fatalf("resolving twice: %d", code)
	}
	waitUntil(t, time.Minute, "the run to complete", func() bool { return strings.Contains(e.run("runs").stdout, run+"  complete") })
	if b, err := os.ReadFile(filepath.Join(e.workspace, "a.txt")); err != nil || string(b) != "from the web" {
		t.Fatalf("a.txt: %q %v\nworker:\n%s", b, err, w.stderr.String())
	}
	if strings.Contains(turns.stderr.String(), "driving run") {
		t.Fatalf("the turns' worker drove a run:\n%s", turns.stderr.String())
	}
}

// TestClusterRunWithoutWorkerSaysSo: a cluster run that no worker takes
// says so after a while instead of waiting in silence.
func TestClusterRunWithoutWorkerSaysSo(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dsn := pgtest.DSN(t)
	srv := llmtest.NewServerFunc(treetest.GoalResponder(treetest.ByGoal{"alone": {treetest.Complete("never")}}))
	defer srv.Close()
	run := e.start("run", "--cluster", "--queue", "nobody", "--store", dsn, "--model", e.useProvider("anthropic", srv.URL), "alone")
	waitUntil(t, time.Minute, "the hint", func() bool {
		return strings.Contains(run.stderr.String(), "no worker has taken run") && strings.Contains(run.stderr.String(), "arbor worker --queue nobody")
	})
}
