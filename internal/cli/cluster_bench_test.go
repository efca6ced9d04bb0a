package cli_test

// Benchmarks of the cluster (issue #15): runs submitted to arbor worker
// processes on PostgreSQL, against the instant scripted model server over
// HTTP. They need the Debian postgresql package, which scripts/test.sh
// installs (or ARBOR_TEST_POSTGRES).
//
//	go test -run '^$' -bench Cluster -benchtime 3x ./internal/cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/cluster"
	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/store/postgres"
	"github.com/arbor-run/arbor/internal/store/postgres/pgtest"
	"github.com/arbor-run/arbor/internal/tree"
	"github.com/arbor-run/arbor/internal/tree/treetest"
)

// benchCluster is a PostgreSQL schema with worker processes serving it,
// a scripted model server, and an in-process store and insert-only
// cluster to submit runs and watch them.
type benchCluster struct {
	e       *env
	dsn     string
	st      *postgres.Store
	c       *cluster.Cluster
	model   string
	srv     *llmtest.Server
	seq     int
	workers []*proc
}

func newBenchCluster(b *testing.B, workers, concurrency int, respond func(llmtest.Request) llmtest.Turn, args ...string) *benchCluster {
	b.Helper()
	e := newEnv(b)
	dsn := pgtest.DSN(b)
	srv := llmtest.NewServerFunc(respond)
	b.Cleanup(srv.Close)
	model := e.useProvider("anthropic", srv.URL)
	st, err := postgres.Open(b.Context(), dsn)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	c, err := cluster.Open(b.Context(), st, cluster.Options{})
	if err != nil {
		b.Fatal(err)
	}
	var ws []*proc
	for i := range workers {
		vars := e.vars
		if p := os.Getenv("ARBOR_BENCH_WORKER_PROFILE"); p != "" && i == 0 {
			// The first worker's CPU profile, written when it stops.
			e.vars = append(slices.Clone(vars), "ARBOR_CPUPROFILE="+p)
		}
		w := e.start(append([]string{"worker", "--listen", "127.0.0.1", "--store", dsn, "--concurrency", fmt.Sprint(concurrency), "--yes"}, args...)...)
		waitUntil(b, time.Minute, "a worker to serve", func() bool { return strings.Contains(w.stderr.String(), "serving queue") })
		e.vars = vars
		ws = append(ws, w)
	}
	return &benchCluster{e: e, dsn: dsn, st: st, c: c, model: model, srv: srv, workers: ws}
}

// stop stops the workers with SIGTERM and waits for them (a profiled
// worker writes its profile then).
func (bc *benchCluster) stop() {
	for _, w := range bc.workers {
		_ = w.cmd.Process.Signal(syscall.SIGTERM)
		<-w.exited
	}
}

// workersCPU is the CPU time the worker processes used so far (user and
// system, from /proc).
func (bc *benchCluster) workersCPU(b *testing.B) time.Duration {
	b.Helper()
	var total time.Duration
	for _, w := range bc.workers {
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", w.cmd.Process.Pid))
		if err != nil {
			b.Fatal(err)
		}
		// The fields after the command's closing parenthesis: utime and
		// stime are the 12th and 13th, in clock ticks (100 per second).
		f := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+1:]))
		for _, i := range []int{11, 12} {
			n, err := strconv.ParseInt(f[i], 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			total += time.Duration(n) * 10 * time.Millisecond
		}
	}
	return total
}

// submit hands a new run of goal to the workers and returns its id.
func (bc *benchCluster) submit(b *testing.B, goal string, parallel int) string {
	b.Helper()
	bc.seq++
	r, root := tree.New(tree.Options{}).NewRun(tree.RunOptions{
		ID: fmt.Sprintf("bench-%d-%d", time.Now().UnixNano(), bc.seq), Goal: goal, Model: bc.model,
		Workspace: bc.e.workspace, Mode: "default", MaxParallel: parallel, Queue: "default",
	})
	if err := bc.c.Submit(b.Context(), r, root); err != nil {
		b.Fatal(err)
	}
	return r.ID
}

// wait blocks until run id has ended and fails b unless it completed.
func (bc *benchCluster) wait(b *testing.B, id string) {
	b.Helper()
	ctx, cancel := context.WithTimeout(b.Context(), 5*time.Minute)
	defer cancel()
	changes, err := bc.st.RunChanges(ctx, id)
	if err != nil {
		b.Fatal(err)
	}
	for {
		r, err := bc.st.GetRun(ctx, id)
		if err != nil {
			b.Fatal(err)
		}
		switch r.Status {
		case store.RunComplete:
			return
		case store.RunRunning:
		default:
			b.Fatalf("run %s %s: %s", id, r.Status, r.Error)
		}
		select {
		case <-changes:
		case <-time.After(time.Second):
		case <-ctx.Done():
			b.Fatalf("run %s did not end", id)
		}
	}
}

// fanOutScript: the root spawns children in one step, ends its turn, and
// synthesizes; each child completes at once.
func fanOutScript(children int) func(llmtest.Request) llmtest.Turn {
	spawns := make([]llmtest.ToolCall, children)
	for i := range spawns {
		spawns[i] = treetest.Call("spawn", map[string]any{"goal": fmt.Sprintf("part %d", i), "prompt": "p"})
	}
	return func(req llmtest.Request) llmtest.Turn {
		node, turn := treetest.NodeOf(req), treetest.Turns(req)
		switch {
		case node == 1 && turn == 0:
			return treetest.Calls(spawns...)
		case node == 1 && turn == 1:
			return treetest.Complete("draft")
		case node == 1:
			return treetest.Complete("final")
		default:
			return treetest.Complete(fmt.Sprintf("result of #%d", node))
		}
	}
}

// BenchmarkClusterFanOut1000 is the 1,000-node fan-out and fan-in of
// tree.BenchmarkFanOutFanIn1000 (64 agents at once) with the model an
// HTTP server: driven by arbor run itself on SQLite and on PostgreSQL
// (local=…, one process, its start included), and as a cluster run on
// PostgreSQL driven by one of 1 or 3 worker processes, its node turns
// handed out to every worker (turns=spread, up to 64 at once on each) or
// run in the driving worker (turns=local, worker --local-turns).
func BenchmarkClusterFanOut1000(b *testing.B) {
	for _, local := range []string{"sqlite", "postgres"} {
		b.Run("local="+local, func(b *testing.B) {
			e := newEnv(b)
			srv := llmtest.NewServerFunc(fanOutScript(1000))
			b.Cleanup(srv.Close)
			args := []string{"run", "--model", e.useProvider("anthropic", srv.URL), "--max-parallel", "64", "-q"}
			if local == "postgres" {
				args = append(args, "--store", pgtest.DSN(b))
			}
			for b.Loop() {
				if o := e.run(append(args, "fan out")...); o.code != 0 || strings.TrimSpace(o.stdout) != "final" {
					b.Fatalf("run: exit %d %q\n%s", o.code, o.stdout, o.stderr)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/run")
			b.ReportMetric(0, "ns/op")
		})
	}
	for _, workers := range []int{1, 3} {
		for _, turns := range []string{"local", "spread"} {
			b.Run(fmt.Sprintf("workers=%d/turns=%s", workers, turns), func(b *testing.B) {
				args := []string{"--turns", "64"}
				if turns == "local" {
					args = []string{"--local-turns"}
				}
				bc := newBenchCluster(b, workers, 4, fanOutScript(1000), args...)
				cpu0 := bc.workersCPU(b)
				for b.Loop() {
					bc.wait(b, bc.submit(b, "fan out", 64))
				}
				b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/run")
				b.ReportMetric(float64((bc.workersCPU(b)-cpu0).Milliseconds())/float64(b.N), "worker-cpu-ms/run")
				bc.stop()
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}

// chainScript: each of levels nodes spawns one child, ends its turn and
// synthesizes; the last completes at once. A level's cost is its hops:
// a node's end → its parent's synthesis model call, and a spawn → the
// child's first model call.
func chainScript(levels int) func(llmtest.Request) llmtest.Turn {
	return func(req llmtest.Request) llmtest.Turn {
		node, turn := treetest.NodeOf(req), treetest.Turns(req)
		switch {
		case node < int64(levels) && turn == 0:
			return treetest.Calls(treetest.Call("spawn", map[string]any{"goal": fmt.Sprintf("level %d", node+1), "prompt": "p"}))
		case node < int64(levels) && turn == 1:
			return treetest.Complete("draft")
		case node < int64(levels):
			return treetest.Complete(fmt.Sprintf("result of #%d", node))
		default:
			return treetest.Complete("leaf")
		}
	}
}

// BenchmarkClusterChain50 is a 50-level chain (one node at a time, so
// every hop is latency: tree.BenchmarkChain200's shape), driven by arbor
// run on SQLite and on PostgreSQL and by one worker on PostgreSQL.
func BenchmarkClusterChain50(b *testing.B) {
	const levels = 50
	for _, local := range []string{"sqlite", "postgres"} {
		b.Run("local="+local, func(b *testing.B) {
			e := newEnv(b)
			srv := llmtest.NewServerFunc(chainScript(levels))
			b.Cleanup(srv.Close)
			args := []string{"run", "--model", e.useProvider("anthropic", srv.URL), "-q"}
			if local == "postgres" {
				args = append(args, "--store", pgtest.DSN(b))
			}
			for b.Loop() {
				if o := e.run(append(args, "chain")...); o.code != 0 || strings.TrimSpace(o.stdout) != "result of #1" {
					b.Fatalf("run: exit %d %q\n%s", o.code, o.stdout, o.stderr)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*levels), "µs/level")
			b.ReportMetric(0, "ns/op")
		})
	}
	for _, turns := range []string{"local", "spread"} {
		b.Run("workers=1/turns="+turns, func(b *testing.B) {
			args := []string{}
			if turns == "local" {
				args = append(args, "--local-turns")
			}
			bc := newBenchCluster(b, 1, 4, chainScript(levels), args...)
			for b.Loop() {
				bc.wait(b, bc.submit(b, "chain", 8))
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*levels), "µs/level")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkClusterRuns12 submits twelve 100-node fan-outs at once to 1
// or 3 workers driving up to 4 runs each: what spreading runs over
// workers buys (on this 2-core machine, workers, PostgreSQL and the
// model server share the cores).
func BenchmarkClusterRuns12(b *testing.B) {
	for _, workers := range []int{1, 3} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			bc := newBenchCluster(b, workers, 4, fanOutScript(100))
			for b.Loop() {
				ids := make([]string, 12)
				for i := range ids {
					ids[i] = bc.submit(b, "fan out", 16)
				}
				var wg sync.WaitGroup
				for _, id := range ids {
					wg.Go(func() { bc.wait(b, id) })
				}
				wg.Wait()
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/12-runs")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkClusterHandoff is the cluster's dispatch hop: from Submit's
// commit to the new run's first model request, through River's
// notification, a worker's fetch, its run lease and the engine's first
// schedule (one worker, idle between runs).
func BenchmarkClusterHandoff(b *testing.B) {
	for _, turns := range []string{"local", "spread"} {
		b.Run("turns="+turns, func(b *testing.B) {
			var args []string
			if turns == "local" {
				args = append(args, "--local-turns")
			}
			benchmarkHandoff(b, args...)
		})
	}
}

func benchmarkHandoff(b *testing.B, args ...string) {
	var (
		mu    sync.Mutex
		first = map[string]time.Time{}
	)
	bc := newBenchCluster(b, 1, 4, func(req llmtest.Request) llmtest.Turn {
		g := treetest.GoalOf(req)
		mu.Lock()
		if _, ok := first[g]; !ok {
			first[g] = time.Now()
		}
		mu.Unlock()
		return treetest.Complete("done")
	}, args...)
	var hops []time.Duration
	n := 0
	for b.Loop() {
		goal := fmt.Sprintf("hop %d", n)
		t0 := time.Now()
		id := bc.submit(b, goal, 1)
		bc.wait(b, id)
		mu.Lock()
		hops = append(hops, first[goal].Sub(t0))
		mu.Unlock()
		n++
	}
	slices.Sort(hops)
	b.ReportMetric(float64(hops[len(hops)/2].Microseconds()), "µs/handoff-median")
	b.ReportMetric(float64(hops[len(hops)*9/10].Microseconds()), "µs/handoff-p90")
	b.ReportMetric(0, "ns/op")
}
