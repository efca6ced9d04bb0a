package cluster

import (
	"bufio"
	"context"
	"errors"
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
// helperTTLEnv replaces it (a Go duration).
const (
	helperTTL    = time.Second
	helperTTLEnv = "ARBOR_CLUSTER_TEST_TTL"
)

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
	ttl := helperTTL
	if v := os.Getenv(helperTTLEnv); v != "" {
		if ttl, err = time.ParseDuration(v); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
	}
	var mu sync.Mutex // one line at a time on stdout
	c, err := Open(ctx, st, Options{
		LeaseTTL:  ttl,
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

// startDyingWorker starts a worker process on dsn, its leases living
// ttl, and returns it with the first line it prints.
func startDyingWorker(t *testing.T, dsn string, ttl time.Duration) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+dsn, helperTTLEnv+"="+ttl.String())
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

	cmd, line := startDyingWorker(t, b.dsn, helperTTL)
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
	// The pass that reaped the node sweeps the dead worker's job after it
	// (SweepDeadJobs); the new claim may finish first, so wait for the
	// sweep before stopping (a stop cuts the pass short).
	for deadline := time.Now().Add(time.Minute); jobsOf(t, b.st, run, 2)[0].State == "running"; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the dead worker's job is still running a minute after its node was reaped")
		}
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
	// The pass that reaped the node swept the dead worker's job after it
	// (SweepDeadJobs): finished, not left running for River's rescue.
	if len(jobs) != 2 || jobs[0].Attempt != 1 || jobs[0].State != "cancelled" || jobs[1].Attempt != 2 || jobs[1].State != "completed" {
		t.Fatalf("jobs of the node: %+v (the dead worker's job is finished by the reaper's pass)", jobs)
	}
	// Reaping again finds nothing: the node is complete.
	again, err := c.Reap(b.ctx)
	must(t, err)
	if len(again) != 0 {
		t.Fatalf("second reap re-enqueued %+v", again)
	}
}

// TestReaperRules checks which nodes a reaper pass re-enqueues, on a
// clock of its own: a dead node (its job running since long ago, its
// lease expired) once; a node with a waiting job or a live lease, a node
// never dispatched and a complete node never; and no pass while another
// holds the reaper lock.
func TestReaperRules(t *testing.T) {
	t.Parallel()
	b := setup(t)
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	now := t0.Add(time.Hour)
	c := openCluster(t, b.st, Options{LeaseTTL: time.Minute, Now: func() time.Time { return now }})
	run := newRun(t, b.st, 5, store.StateActive)
	// 2: dead. 3: its job waits. 4: live lease. 5: never dispatched.
	// 6: dead but complete.
	enqueue(t, c, NodeStep{Run: run, Node: 2, Attempt: 1}, NodeStep{Run: run, Node: 3, Attempt: 1},
		NodeStep{Run: run, Node: 4, Attempt: 1}, NodeStep{Run: run, Node: 6, Attempt: 1})
	for _, id := range []int64{2, 4, 6} {
		_, err := b.st.Pool().Exec(b.ctx, `UPDATE river_job SET state = 'running', attempt = 1,
			attempted_at = now() - interval '1 hour' WHERE args->>'run' = $1 AND (args->>'node')::bigint = $2`, run, id)
		must(t, err)
	}
	owner := store.NewOwner()
	for id, at := range map[int64]time.Time{2: t0, 4: now} {
		_, err := b.st.AcquireLease(b.ctx, store.LeaseRequest{Key: NodeLeaseKey(run, id), Owner: owner, Now: at, TTL: time.Minute})
		must(t, err)
	}
	n6, err := b.st.GetNode(b.ctx, run, 6)
	must(t, err)
	n6.State = store.StateComplete
	must(t, b.st.Commit(b.ctx, nil, n6))

	t.Run("not while another pass holds the lock", func(t *testing.T) {
		tx, err := b.st.Pool().Begin(b.ctx)
		must(t, err)
		defer func() { _ = tx.Rollback(b.ctx) }()
		_, err = tx.Exec(b.ctx, `SELECT pg_advisory_xact_lock(hashtext('arbor.reaper'), hashtext(current_schema()))`)
		must(t, err)
		got, err := c.Reap(b.ctx)
		must(t, err)
		if len(got) != 0 {
			t.Fatalf("reaped %+v while the lock was held", got)
		}
	})

	got, err := c.Reap(b.ctx)
	must(t, err)
	if want := []NodeStep{{Run: run, Node: 2, Attempt: 2}}; len(got) != 1 || got[0] != want[0] {
		t.Fatalf("reaped %+v, want %+v", got, want)
	}
	n2, err := b.st.GetNode(b.ctx, run, 2)
	must(t, err)
	if n2.Attempts != 2 || n2.State != store.StateActive {
		t.Fatalf("reaped node: %s attempts %d", n2.State, n2.Attempts)
	}
	if _, err := b.st.GetLease(b.ctx, NodeLeaseKey(run, 2)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the dead lease is still there: %v", err)
	}
	// The dead holder's late heartbeat fails: it must stop.
	_, err = b.st.RenewLease(b.ctx, store.LeaseRequest{Key: NodeLeaseKey(run, 2), Owner: owner, Now: now, TTL: time.Minute})
	if !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("renewal of the reaped lease: %v, want ErrLeaseLost", err)
	}
	if jobs := jobsOf(t, b.st, run, 2); len(jobs) != 2 || jobs[1].Attempt != 2 || jobs[1].State != "available" {
		t.Fatalf("jobs of the reaped node: %+v", jobs)
	}
	again, err := c.Reap(b.ctx)
	must(t, err)
	if len(again) != 0 {
		t.Fatalf("second pass reaped %+v: the new job is live", again)
	}
}
