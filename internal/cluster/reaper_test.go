package cluster

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/store/postgres"
)

// helperEnv, set to a DSN, makes the test binary a worker process that
// dies by SIGKILL (TestMain runs runHelperWorker instead of the tests).
const helperEnv = "ARBOR_CLUSTER_TEST_WORKER"

// helperTTL is the dying worker's lease TTL: short, so its lease expires
// soon after it is killed. Nothing is asserted about how soon.
const helperTTL = time.Second

// runHelperWorker works jobs on dsn with a unit that prints "claimed
// <run> <node> <attempt>" and then blocks until the process is killed
// (or its stdin closes: the test that started it is gone).
func runHelperWorker(dsn string) int {
	ctx := context.Background()
	st, err := postgres.Open(ctx, dsn)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	var mu sync.Mutex // one line at a time on stdout
	c, err := Open(ctx, st, Options{
		LeaseTTL:  helperTTL,
		ReapEvery: time.Hour, // this worker must not reap its own node
		Unit: UnitFunc(func(ctx context.Context, cl Claim) error {
			mu.Lock()
			fmt.Printf("claimed %s %d %d\n", cl.Args.Run, cl.Args.Node, cl.Args.Attempt)
			mu.Unlock()
			<-ctx.Done()
			return ctx.Err()
		}),
	})
	if err == nil {
		err = c.Start(ctx)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 1
}

// startDyingWorker starts a worker process on dsn and returns it with
// the first line it prints.
func startDyingWorker(t *testing.T, dsn string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+dsn)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	must(t, err)
	stdout, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	t.Cleanup(func() {
		_ = stdin.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line := make(chan string, 1)
	go func() {
		l, _ := bufio.NewReader(stdout).ReadString('\n')
		line <- strings.TrimSpace(l)
	}()
	return cmd, waitFor(t, line, "the worker process to claim")
}

func TestKilledWorkersNodeIsReapedAndClaimedOnceByAnother(t *testing.T) {
	t.Parallel()
	b := setup(t)
	run := newRun(t, b.st, 1, store.StateActive)
	inserter := openCluster(t, b.st, Options{})
	enqueue(t, inserter, NodeStep{Run: run, Node: 2, Attempt: 1})

	cmd, line := startDyingWorker(t, b.dsn)
	if want := fmt.Sprintf("claimed %s 2 1", run); line != want {
		t.Fatalf("worker process said %q, want %q", line, want)
	}
	must(t, cmd.Process.Kill()) // SIGKILL: no release, no heartbeat, job left running
	_ = cmd.Wait()
	l, err := b.st.GetLease(b.ctx, NodeLeaseKey(run, 2))
	must(t, err)

	var (
		mu    sync.Mutex
		units []Claim
	)
	claimed := make(chan Claim, 4)
	var c *Cluster
	c = openCluster(t, b.st, Options{
		LeaseTTL:  helperTTL,
		ReapEvery: 50 * time.Millisecond,
		Unit: UnitFunc(func(ctx context.Context, cl Claim) error {
			mu.Lock()
			units = append(units, cl)
			mu.Unlock()
			err := complete(ctx, c, cl, "after rescue")
			claimed <- cl
			return err
		}),
	})
	start(t, c)
	cl := waitFor(t, claimed, "the reaped node to be claimed")
	if cl.Args.Attempt != 2 || cl.Node.Attempts != 2 {
		t.Fatalf("claim after the reaper: %+v, want attempt 2", cl.Args)
	}
	if cl.Lease.ID == l.ID {
		t.Fatalf("the new claim holds the dead worker's lease %s", l.ID)
	}
	must(t, c.Stop(b.ctx))

	mu.Lock()
	defer mu.Unlock()
	if len(units) != 1 {
		t.Fatalf("units run after the kill: %d, want 1: %+v", len(units), units)
	}
	n, err := b.st.GetNode(b.ctx, run, 2)
	must(t, err)
	if n.State != store.StateComplete || n.Attempts != 2 || n.Result != "after rescue" {
		t.Fatalf("node: %s attempts %d %q", n.State, n.Attempts, n.Result)
	}
	jobs := jobsOf(t, b.st, run, 2)
	if len(jobs) != 2 || jobs[0].Attempt != 1 || jobs[0].State != "running" || jobs[1].Attempt != 2 || jobs[1].State != "completed" {
		t.Fatalf("jobs of the node: %+v (the dead worker's job stays running until River rescues it)", jobs)
	}
	// Reaping again finds nothing: the node is complete.
	again, err := c.Reap(b.ctx)
	must(t, err)
	if len(again) != 0 {
		t.Fatalf("second reap re-enqueued %+v", again)
	}
}
