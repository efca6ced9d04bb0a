package cli_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
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

// TestClusterSpreadsOneRunsNodes: the nodes of one cluster run execute
// on several worker processes (each takes at most two jobs at once, and
// three leaves run together), and a worker SIGKILLed while it runs one of
// them, not the driver, has that node's turn handed to another worker,
// which goes on from the stored transcript: the interrupted tool is not
// run again, no model turn is served twice, and the run completes.
func TestClusterSpreadsOneRunsNodes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dsn := pgtest.DSN(t)
	mark := func(name string) string { return filepath.Join(e.home, name) }
	leaves := []string{"leaf a", "leaf b", "leaf c"}
	script := treetest.ByGoal{"spread it": {
		treetest.Calls(
			treetest.Call("spawn", map[string]any{"goal": leaves[0], "prompt": "p"}),
			treetest.Call("spawn", map[string]any{"goal": leaves[1], "prompt": "p"}),
			treetest.Call("spawn", map[string]any{"goal": leaves[2], "prompt": "p"})),
		treetest.Complete("root draft"),
		treetest.Complete("ROOT: spread"),
	}}
	for i, goal := range leaves {
		// $PPID is the worker running the node's shell tool.
		script[goal] = []llmtest.Turn{
			treetest.Calls(treetest.Call("shell", map[string]any{"command": fmt.Sprintf(
				"echo $PPID > %s; sleep 4; echo %d >> %s", mark(fmt.Sprintf("leaf%d.pid", i)), i, mark("work.log"))})),
			treetest.Complete(fmt.Sprintf("result %d", i)),
		}
	}
	respond := treetest.GoalResponder(script)
	var (
		mu     sync.Mutex
		served = map[string]int{}       // goal/turn → requests
		at     = map[string]time.Time{} // goal/turn → when first served
	)
	srv := llmtest.NewServerFunc(func(req llmtest.Request) llmtest.Turn {
		key := fmt.Sprintf("%s/%d", treetest.GoalOf(req), treetest.Turns(req))
		mu.Lock()
		served[key]++
		if at[key].IsZero() {
			at[key] = time.Now()
		}
		mu.Unlock()
		return respond(req)
	})
	defer srv.Close()
	model := e.useProvider("anthropic", srv.URL)

	workers := make([]*proc, 3)
	for i := range workers {
		workers[i] = e.start("worker", "--listen", "127.0.0.1", "--store", dsn, "--concurrency", "1", "--turns", "1", "--yes")
	}
	for i, w := range workers {
		waitUntil(t, time.Minute, fmt.Sprintf("worker %d to serve", i), func() bool { return strings.Contains(w.stderr.String(), "serving queue") })
	}
	run := e.start("run", "--cluster", "--store", dsn, "--model", model, "--max-parallel", "3", "spread it")
	logs := func() string {
		var b strings.Builder
		for i, w := range workers {
			fmt.Fprintf(&b, "--- worker %d (pid %d):\n%s", i, w.cmd.Process.Pid, w.stderr.String())
		}
		fmt.Fprintf(&b, "--- run:\n%s", run.stderr.String())
		return b.String()
	}
	pidOf := map[int]int{} // worker pid → index
	for i, w := range workers {
		pidOf[w.cmd.Process.Pid] = i
	}
	ranOn := make([]int, len(leaves)) // leaf → worker index
	waitUntil(t, time.Minute, "the three leaves' tools to run", func() bool {
		for i := range leaves {
			b, err := os.ReadFile(mark(fmt.Sprintf("leaf%d.pid", i)))
			if err != nil {
				return false
			}
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				return false
			}
			w, ok := pidOf[pid]
			if !ok {
				t.Fatalf("leaf %d's tool ran under pid %d, not a worker\n%s", i, pid, logs())
			}
			ranOn[i] = w
		}
		return true
	})
	distinct := slices.Compact(slices.Sorted(slices.Values(ranOn)))
	t.Logf("the leaves ran on workers %v", ranOn)
	if len(distinct) < 2 {
		t.Fatalf("the three leaves all ran on worker %d\n%s", ranOn[0], logs())
	}
	driver := -1
	for i, w := range workers {
		if drivingLine.MatchString(w.stderr.String()) {
			driver = i
		}
	}
	victim := -1
	for _, w := range ranOn {
		if w != driver {
			victim = w
			break
		}
	}
	if victim < 0 {
		t.Fatalf("every leaf ran on the driver (worker %d)\n%s", driver, logs())
	}
	var lost []int // the leaves the victim ran
	for i, w := range ranOn {
		if w == victim {
			lost = append(lost, i)
		}
	}
	_ = workers[victim].cmd.Process.Signal(syscall.SIGKILL)
	<-workers[victim].exited
	killed := time.Now()

	select {
	case <-run.exited:
	case <-time.After(2 * time.Minute):
		t.Fatalf("run --cluster did not end\n%s", logs())
	}
	if run.code != 0 || strings.TrimSpace(run.stdout.String()) != "ROOT: spread" {
		t.Fatalf("run --cluster: exit %d stdout %q\n%s", run.code, run.stdout.String(), logs())
	}
	mu.Lock()
	defer mu.Unlock()
	for _, i := range lost {
		if at[leaves[i]+"/1"].IsZero() {
			t.Errorf("%s never went on after worker %d was killed", leaves[i], victim)
			continue
		}
		resumed := at[leaves[i]+"/1"].Sub(killed)
		t.Logf("worker %d (running %s) killed; the node's next model call came %s later", victim, leaves[i], resumed.Round(time.Millisecond))
		// The worker was on this machine, so its node lease counts as dead
		// at once; on another machine it would be the lease time (9 s).
		if resumed > 9*time.Second {
			t.Errorf("%s went on %s after its worker was killed, more than the lease time", leaves[i], resumed)
		}
	}
	for key, n := range served {
		if n != 1 {
			t.Errorf("%s served %d times, want once", key, n)
		}
	}
	b, _ := os.ReadFile(mark("work.log"))
	var want []string
	for i := range leaves {
		if !slices.Contains(lost, i) {
			want = append(want, strconv.Itoa(i))
		}
	}
	if got := strings.Fields(string(b)); !slices.Equal(slices.Sorted(slices.Values(got)), want) {
		t.Errorf("work.log %q: want the lines of leaves %v once each (the killed worker's tools neither finish nor run again)", b, want)
	}
	if t.Failed() {
		t.Log(logs())
	}
}

// TestControlReachesATurnOnAnotherWorker: the run's driver runs no turns
// (--turns 0), so its node's turn runs on a second worker. A pause from
// arbor serve ends the turn's tool process there; a resume hands the
// turn out again, which goes on from the stored transcript (the
// interrupted tool reported, not run again); a stop from arbor stop ends
// the next tool process, and the run ends. The time from each request to
// the tool process's end is logged: River's job cancel and the control
// notification reach the worker at once.
func TestControlReachesATurnOnAnotherWorker(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dsn := pgtest.DSN(t)
	e.vars = append(e.vars, "ARBOR_STORE="+dsn)
	mark := func(name string) string { return filepath.Join(e.home, name) }
	srv := llmtest.NewServerFunc(treetest.GoalResponder(treetest.ByGoal{
		"steer it": {
			treetest.Calls(treetest.Call("spawn", map[string]any{"goal": "long leaf", "prompt": "p"})),
			treetest.Complete("draft"),
			treetest.Complete("ROOT: steered"),
		},
		"long leaf": {
			treetest.Calls(treetest.Call("shell", map[string]any{"command": "echo $PPID $$ > " + mark("tool1.pid") + "; exec sleep 300"})),
			treetest.Calls(treetest.Call("shell", map[string]any{"command": "echo $PPID $$ > " + mark("tool2.pid") + "; exec sleep 300"})),
			treetest.Complete("never"),
		},
	}))
	defer srv.Close()
	model := e.useProvider("anthropic", srv.URL)
	driver := e.start("worker", "--listen", "127.0.0.1", "--turns", "0", "--yes")
	waitUntil(t, time.Minute, "the driver to serve", func() bool { return strings.Contains(driver.stderr.String(), "serving queue") })
	o := e.run("run", "--cluster", "--detach", "--model", model, "steer it")
	run := strings.TrimSpace(o.stdout)
	if o.code != 0 || run == "" {
		t.Fatalf("run --detach: %d %q\n%s", o.code, o.stdout, o.stderr)
	}
	waitUntil(t, time.Minute, "the driver to drive the run", func() bool { return strings.Contains(driver.stderr.String(), "driving run "+run) })
	turns := e.start("worker", "--listen", "127.0.0.1", "--yes")
	defer func() {
		if t.Failed() {
			t.Logf("driver:\n%s\nturns:\n%s", driver.stderr.String(), turns.stderr.String())
		}
	}()
	// toolOf waits for a tool's pid file: the worker running it and the
	// tool's own pid.
	toolOf := func(name string) (worker, pid int) {
		waitUntil(t, time.Minute, name, func() bool {
			b, err := os.ReadFile(mark(name))
			f := strings.Fields(string(b))
			if err != nil || len(f) != 2 {
				return false
			}
			worker, _ = strconv.Atoi(f[0])
			pid, _ = strconv.Atoi(f[1])
			return pid > 0
		})
		return worker, pid
	}
	gone := func(what string, pid int, since time.Time) time.Duration {
		waitUntil(t, 30*time.Second, what, func() bool { return !running(pid) })
		d := time.Since(since)
		t.Logf("%s after %s", what, d.Round(time.Millisecond))
		if d > 5*time.Second {
			t.Errorf("%s took %s", what, d)
		}
		return d
	}
	w1, pid1 := toolOf("tool1.pid")
	if w1 != turns.cmd.Process.Pid {
		t.Fatalf("the leaf's tool ran under pid %d, not the turns' worker %d", w1, turns.cmd.Process.Pid)
	}

	web := startServe(t, e)
	t0 := time.Now()
	web.mustPost("/api/runs/"+run+"/nodes/2/pause", `{}`)
	gone("the paused node's tool process ended", pid1, t0)
	waitUntil(t, time.Minute, "the node to be paused", func() bool { return strings.Contains(e.run("tree", run).stdout, "#2 [paused]") })
	web.mustPost("/api/runs/"+run+"/nodes/2/resume", `{}`)
	_, pid2 := toolOf("tool2.pid")

	t0 = time.Now()
	if o := e.run("stop", run, "#2"); o.code != 0 || !strings.Contains(o.stdout, "by the worker driving it") {
		t.Fatalf("stop: %d %q %q", o.code, o.stdout, o.stderr)
	}
	gone("the stopped node's tool process ended", pid2, t0)
	waitUntil(t, time.Minute, "the run to complete", func() bool { return strings.Contains(e.run("runs").stdout, run+"  complete") })
	// The resumed turn was told its tool was interrupted; each turn of
	// the leaf was served once.
	served := map[int]int{}
	for _, r := range srv.Requests() {
		if treetest.GoalOf(r) == "long leaf" {
			served[treetest.Turns(r)]++
			if treetest.Turns(r) == 1 && !strings.Contains(strings.ToLower(r.LastUserText()), "interrupt") {
				t.Errorf("the resumed turn was told %q", r.LastUserText())
			}
		}
	}
	if served[0] != 1 || served[1] != 1 || served[2] != 0 {
		t.Errorf("the leaf's turns were served %v, want turn 0 and 1 once each", served)
	}
}
