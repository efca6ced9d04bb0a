package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/store"
)

// takes records the runs a test Driver was offered and answers each
// offer with what its answer function says.
type takes struct {
	mu     sync.Mutex
	got    []string
	answer func(run string, n int) error // n: how many offers of run so far, from 1
	seen   chan string
}

func newTakes(answer func(run string, n int) error) *takes {
	return &takes{answer: answer, seen: make(chan string, 100)}
}

func (d *takes) Take(_ context.Context, run string) error {
	d.mu.Lock()
	d.got = append(d.got, run)
	n := 0
	for _, r := range d.got {
		if r == run {
			n++
		}
	}
	d.mu.Unlock()
	d.seen <- run
	return d.answer(run, n)
}

func (d *takes) offers(run string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, r := range d.got {
		if r == run {
			n++
		}
	}
	return n
}

func clusterRun(id, queue string) (store.Run, store.Node) {
	r := store.Run{ID: id, Goal: "g", Status: store.RunRunning, MaxParallel: 8, Queue: queue}
	return r, store.Node{RunID: id, ID: 1, Kind: store.KindGoal, Goal: "g", State: store.StatePending, Returns: "text"}
}

// TestSubmitHandsTheRunToADriver: Submit stores the run, its root and the
// drive job together; a working cluster on the run's queue offers it to
// its Driver; one answering busy has it offered again (snoozed) until it
// takes it; a cluster on another queue is never offered it.
func TestSubmitHandsTheRunToADriver(t *testing.T) {
	t.Parallel()
	b := setup(t)
	other := newTakes(func(string, int) error { return nil })
	start(t, openCluster(t, b.st, Options{Queue: "gpu", Driver: other, ReapEvery: time.Hour}))
	d := newTakes(func(_ string, n int) error {
		if n == 1 {
			return ErrBusy
		}
		return nil
	})
	c := openCluster(t, b.st, Options{Queue: "cpu", Driver: d, ReapEvery: time.Hour})
	start(t, c)

	r, root := clusterRun("run-submit", "cpu")
	must(t, c.Submit(b.ctx, r, root))
	got, err := b.st.GetRun(b.ctx, r.ID)
	must(t, err)
	if got.Queue != "cpu" || got.Status != store.RunRunning {
		t.Fatalf("stored run: %+v", got)
	}
	if nodes, err := b.st.Nodes(b.ctx, r.ID); err != nil || len(nodes) != 1 || nodes[0].State != store.StatePending {
		t.Fatalf("stored nodes: %v %+v", err, nodes)
	}
	waitFor(t, d.seen, "first offer")
	waitFor(t, d.seen, "offer after the snooze")
	time.Sleep(300 * time.Millisecond) // a third offer would come now
	if n := d.offers(r.ID); n != 2 {
		t.Fatalf("offered %d times, want 2 (busy, then taken)", n)
	}
	if n := other.offers(r.ID); n != 0 {
		t.Fatalf("the other queue's worker was offered the run %d times", n)
	}

	// A run without a queue is not a cluster run; a failing Submit
	// leaves nothing behind.
	plain, proot := clusterRun("run-plain", "")
	if err := c.Submit(b.ctx, plain, proot); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("Submit without a queue: %v, want ErrInvalid", err)
	}
	dup, droot := clusterRun("run-submit", "cpu")
	if err := c.Submit(b.ctx, dup, droot); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("Submit of a taken id: %v, want ErrConflict", err)
	}
	var jobs int
	must(t, b.st.Pool().QueryRow(b.ctx, `SELECT count(*) FROM river_job WHERE kind = $1`, DriveKind).Scan(&jobs))
	if jobs != 1 {
		t.Fatalf("%d drive jobs, want 1 (the failed submits enqueued nothing)", jobs)
	}
}

// TestRunReaperHandsOnADeadDriversRun: a running cluster run whose run
// lease expired (or whose holder's process is gone on this machine) and
// that has no live drive job gets one; a run with a live lease, a
// non-cluster run, an ended run, a run that already has a waiting job
// and one whose hand-off is under way get none.
func TestRunReaperHandsOnADeadDriversRun(t *testing.T) {
	t.Parallel()
	b := setup(t)
	now := time.Now()
	clock := func() time.Time { return now }
	c := openCluster(t, b.st, Options{Now: clock, LeaseTTL: 9 * time.Second})
	lease := func(run string, o store.Owner, ttl time.Duration) {
		t.Helper()
		_, err := b.st.AcquireLease(b.ctx, store.LeaseRequest{Key: store.RunLeaseKey(run), Owner: o, Now: now.Add(-ttl - time.Second), TTL: ttl})
		must(t, err)
	}
	mk := func(id, queue string, status store.RunStatus) {
		t.Helper()
		r, root := clusterRun(id, queue)
		r.Status = status
		must(t, b.st.CreateRun(b.ctx, r))
		must(t, b.st.Commit(b.ctx, nil, root))
	}
	mk("expired", "q", store.RunRunning)
	lease("expired", store.Owner{ID: "w1", PID: 1, Host: "elsewhere"}, time.Second)
	mk("gone", "q", store.RunRunning)
	// A holder on this machine whose process is gone: dead before its
	// lease expires.
	_, err := b.st.AcquireLease(b.ctx, store.LeaseRequest{Key: store.RunLeaseKey("gone"),
		Owner: store.Owner{ID: "w2", PID: deadPID(t), Host: store.Hostname()}, Now: now, TTL: time.Hour})
	must(t, err)
	mk("nolease", "q", store.RunRunning)
	mk("live", "q", store.RunRunning)
	_, err = b.st.AcquireLease(b.ctx, store.LeaseRequest{Key: store.RunLeaseKey("live"),
		Owner: store.Owner{ID: "w3", PID: 1, Host: "elsewhere"}, Now: now, TTL: time.Hour})
	must(t, err)
	mk("local", "", store.RunRunning)
	mk("ended", "q", store.RunComplete)
	mk("queued", "q", store.RunRunning)
	must(t, c.EnqueueDrive(b.ctx, "queued", "q"))
	// A hand-off running for a moment with no lease yet is live; one
	// that took the lease is over even while River still shows it
	// running (its worker died before River marked it completed).
	running := func(run string) {
		t.Helper()
		must(t, c.EnqueueDrive(b.ctx, run, "q"))
		_, err := b.st.Pool().Exec(b.ctx, `UPDATE river_job SET state = 'running', attempt = 1, attempted_at = now()
			WHERE kind = $1 AND args->>'run' = $2`, DriveKind, run)
		must(t, err)
	}
	mk("handing", "q", store.RunRunning)
	running("handing")
	mk("handed", "q", store.RunRunning)
	running("handed")
	lease("handed", store.Owner{ID: "w4", PID: 1, Host: "elsewhere"}, time.Second)

	got, err := c.ReapRuns(b.ctx)
	must(t, err)
	slices.Sort(got)
	if want := []string{"expired", "gone", "handed", "nolease"}; !slices.Equal(got, want) {
		t.Fatalf("handed on %v, want %v", got, want)
	}
	// Their jobs are live now: a second pass hands on nothing.
	if got, err := c.ReapRuns(b.ctx); err != nil || len(got) != 0 {
		t.Fatalf("second pass: %v %v, want nothing", got, err)
	}
}

// deadPID returns the pid of a process that has exited.
func deadPID(t *testing.T) int {
	t.Helper()
	for pid := 4_000_000; pid > 3_000_000; pid -= 7919 {
		if l := (store.Lease{Owner: store.Owner{PID: pid, Host: store.Hostname()}, Expires: time.Now().Add(time.Hour)}); l.Dead(time.Now()) {
			return pid
		}
	}
	t.Fatal("no free pid found")
	return 0
}

// TestRunReaperIsNotCrowdedOut: however many cluster runs other
// machines drive, a dead driver's run is found in the same pass.
func TestRunReaperIsNotCrowdedOut(t *testing.T) {
	t.Parallel()
	b := setup(t)
	now := time.Now()
	c := openCluster(t, b.st, Options{Now: func() time.Time { return now }})
	limit, err := strconv.Atoi(orphanLimit)
	must(t, err)
	for i := range limit + 1 {
		id := fmt.Sprintf("live-%03d", i)
		r, root := clusterRun(id, "q")
		must(t, b.st.CreateRun(b.ctx, r))
		must(t, b.st.Commit(b.ctx, nil, root))
		_, err := b.st.AcquireLease(b.ctx, store.LeaseRequest{Key: store.RunLeaseKey(id),
			Owner: store.Owner{ID: "w-" + id, PID: 1, Host: "elsewhere"}, Now: now, TTL: time.Hour})
		must(t, err)
	}
	r, root := clusterRun("zz-orphan", "q") // created last
	must(t, b.st.CreateRun(b.ctx, r))
	must(t, b.st.Commit(b.ctx, nil, root))
	got, err := c.ReapRuns(b.ctx)
	must(t, err)
	if !slices.Equal(got, []string{"zz-orphan"}) {
		t.Fatalf("handed on %v, want [zz-orphan]", got)
	}
}
