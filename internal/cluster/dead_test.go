package cluster

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/arbor-run/arbor/internal/store"
)

// TestClaimTakesADeadHoldersLeaseOver: a worker SIGKILLed on this
// machine while it holds a node lease that lives an hour. While it lives
// another job's claim of the node is refused; once it is dead the claim
// takes the lease over at once — the hour is never waited for — and the
// dead holder's job is finished in the same transaction, saying why.
func TestClaimTakesADeadHoldersLeaseOver(t *testing.T) {
	t.Parallel()
	b := setup(t)
	run := newRun(t, b.st, 1, store.StateActive)
	// c inserts on a queue the dying worker does not work.
	c := openCluster(t, b.st, Options{LeaseTTL: time.Hour, Queue: "elsewhere"})
	args := NodeStep{Run: run, Node: 2, Attempt: 1}
	enqueue(t, openCluster(t, b.st, Options{}), args)

	cmd, line := startDyingWorker(t, b.dsn, time.Hour)
	if want := fmt.Sprintf("claimed %s 2 1", run); line != want {
		t.Fatalf("worker process said %q, want %q", line, want)
	}
	// A second job of the same attempt, as a driver hands a turn out
	// again: nobody works it (c is not started), it is claimed below.
	enqueue(t, c, args)
	jobs := jobsOf(t, b.st, run, 2)
	if len(jobs) != 2 || jobs[0].State != "running" || jobs[1].State != "available" {
		t.Fatalf("jobs before the kill: %+v", jobs)
	}
	dead, next := jobs[0].ID, jobs[1].ID
	held, err := b.st.GetLease(b.ctx, args.LeaseKey())
	must(t, err)

	if _, err := c.claim(b.ctx, args, next); !errors.Is(err, store.ErrLeaseHeld) {
		t.Fatalf("claim while the holder lives: %v, want store.ErrLeaseHeld", err)
	}
	must(t, cmd.Process.Kill())
	_ = cmd.Wait()

	cl, err := c.claim(b.ctx, args, next)
	must(t, err)
	if cl.Lease.ID == held.ID || !strings.HasSuffix(cl.Lease.ID, fmt.Sprintf("/%d", next)) {
		t.Fatalf("lease after the claim: %s, want job %d's (the dead one was %s)", cl.Lease.ID, next, held.ID)
	}
	jobs = jobsOf(t, b.st, run, 2)
	if jobs[0].ID != dead || jobs[0].State != "cancelled" || jobs[1].State != "available" {
		t.Fatalf("jobs after the claim: %+v, want the dead one (%d) cancelled", jobs, dead)
	}
	if why := jobErrors(t, b, dead); len(why) != 1 || !strings.Contains(why[0], fmt.Sprintf("pid %d", cmd.Process.Pid)) ||
		!strings.Contains(why[0], fmt.Sprintf("job %d", next)) {
		t.Fatalf("the dead job's errors: %q, want one naming pid %d and job %d", why, cmd.Process.Pid, next)
	}
}

// TestSweepFinishesOnlyDeadJobs sets up running jobs as River leaves
// them behind a dead worker and checks which ones a sweep finishes: a
// node job without a live lease that started over a TTL ago and a drive
// job that started over twice its timeout ago; never a node job holding
// a live lease, one younger than a TTL, one waiting to run, or a young
// drive job. A second sweep finds nothing; none runs while another
// holds the sweep lock.
func TestSweepFinishesOnlyDeadJobs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	now := time.Now()
	run := newRun(t, b.st, 4, store.StateActive)
	c := openCluster(t, b.st, Options{LeaseTTL: time.Minute, Now: func() time.Time { return now }})
	enqueue(t, c, NodeStep{Run: run, Node: 2, Attempt: 1}, NodeStep{Run: run, Node: 3, Attempt: 1},
		NodeStep{Run: run, Node: 4, Attempt: 1}, NodeStep{Run: run, Node: 5, Attempt: 1})
	must(t, c.EnqueueDrive(b.ctx, "old-run", "default"))
	must(t, c.EnqueueDrive(b.ctx, "young-run", "default"))
	ids := map[string]int64{}
	rows, err := b.st.Pool().Query(b.ctx, `SELECT id, coalesce(args->>'node', args->>'run') FROM river_job ORDER BY id`)
	must(t, err)
	for rows.Next() {
		var (
			id  int64
			key string
		)
		must(t, rows.Scan(&id, &key))
		ids[key] = id
	}
	must(t, rows.Err())
	running := func(key string, ago time.Duration) {
		_, err := b.st.Pool().Exec(b.ctx, `UPDATE river_job SET state = 'running', attempt = 1,
			attempted_at = now() - make_interval(secs => $2) WHERE id = $1`, ids[key], ago.Seconds())
		must(t, err)
	}
	running("2", time.Hour)      // dead: no lease
	running("3", time.Hour)      // live: holds its lease
	running("4", 10*time.Second) // young: between its fetch and its claim
	// node 5's job stays available
	running("old-run", 3*driveTimeout)
	running("young-run", driveTimeout/2)
	holder := store.NewOwner()
	holder.ID += fmt.Sprintf("/%d", ids["3"])
	_, err = b.st.AcquireLease(b.ctx, store.LeaseRequest{Key: NodeLeaseKey(run, 3), Owner: holder, Now: now, TTL: time.Minute})
	must(t, err)
	// Node 2 has a lease, expired, of its dead job.
	dead := store.NewOwner()
	dead.ID += fmt.Sprintf("/%d", ids["2"])
	_, err = b.st.AcquireLease(b.ctx, store.LeaseRequest{Key: NodeLeaseKey(run, 2), Owner: dead, Now: now.Add(-2 * time.Minute), TTL: time.Minute})
	must(t, err)

	// Another process's sweep holds the lock: this one does nothing.
	tx, err := b.st.Pool().Begin(b.ctx)
	must(t, err)
	var locked bool
	must(t, tx.QueryRow(b.ctx, lockSweeper).Scan(&locked))
	if !locked {
		t.Fatal("the sweep lock is taken before the test took it")
	}
	got, err := c.SweepDeadJobs(b.ctx)
	must(t, err)
	must(t, tx.Rollback(b.ctx))
	if len(got) != 0 {
		t.Fatalf("a sweep under another's lock finished %v", got)
	}

	got, err = c.SweepDeadJobs(b.ctx)
	must(t, err)
	want := []int64{ids["2"], ids["old-run"]}
	if !slices.Equal(got, want) {
		t.Fatalf("swept %v, want %v (ids %v)", got, want, ids)
	}
	for key, state := range map[string]string{"2": "cancelled", "3": "running", "4": "running", "5": "available",
		"old-run": "cancelled", "young-run": "running"} {
		var s string
		must(t, b.st.Pool().QueryRow(b.ctx, `SELECT state FROM river_job WHERE id = $1`, ids[key]).Scan(&s))
		if s != state {
			t.Errorf("job of %s: %s, want %s", key, s, state)
		}
	}
	if why := jobErrors(t, b, ids["2"]); len(why) != 1 || !strings.Contains(why[0], "died") {
		t.Errorf("the swept job's errors: %q", why)
	}
	again, err := c.SweepDeadJobs(b.ctx)
	must(t, err)
	if len(again) != 0 {
		t.Fatalf("a second sweep finished %v", again)
	}
}

// jobErrors returns the error texts River keeps of job id.
func jobErrors(t *testing.T, b *testBundle, id int64) []string {
	t.Helper()
	rows, err := b.st.Pool().Query(b.ctx, `SELECT e->>'error' FROM river_job, unnest(errors) e WHERE id = $1`, id)
	must(t, err)
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	must(t, err)
	return out
}
