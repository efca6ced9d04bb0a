package tree_test

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/tree"
)

// holdLease makes owner (on another machine unless host is set) hold the
// lease of run id, as another arbor process would.
func (b *bundle) holdLease(t *testing.T, id string, owner store.Owner) store.Lease {
	t.Helper()
	l, err := b.app.Store.AcquireLease(b.ctx, store.LeaseRequest{Key: store.RunLeaseKey(id), Owner: owner, Now: time.Now(), TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestDriveRefusesALiveOwner(t *testing.T) {
	t.Parallel()
	b := setup(t, script{1: {complete("done")}})
	other := store.Owner{ID: "other", PID: 4242, Host: "elsewhere"}
	b.holdLease(t, b.run.ID, other)
	_, err := b.engine.Drive(b.ctx, b.run.ID)
	var held *store.LeaseHeldError
	if !errors.Is(err, store.ErrLeaseHeld) || !errors.As(err, &held) {
		t.Fatalf("Drive = %v, want a LeaseHeldError", err)
	}
	if held.Owner != other {
		t.Fatalf("holder = %+v, want %+v", held.Owner, other)
	}
	if n := len(b.srv.Requests()); n != 0 {
		t.Fatalf("%d model requests while another process owns the run", n)
	}
	if err := b.engine.Answer(b.ctx, b.run.ID, 1, "x"); !errors.Is(err, store.ErrLeaseHeld) {
		t.Fatalf("Answer of an owned run = %v, want ErrLeaseHeld", err)
	}
	if err := b.engine.Raise(b.ctx, b.run.ID, 5, 0); !errors.Is(err, store.ErrLeaseHeld) {
		t.Fatalf("Raise of an owned run = %v, want ErrLeaseHeld", err)
	}
}

func TestDriveTakesOverAGoneProcess(t *testing.T) {
	t.Parallel()
	b := setup(t, script{1: {complete("done")}})
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	b.holdLease(t, b.run.ID, store.Owner{ID: "killed", PID: gone.Process.Pid, Host: store.Hostname()})
	if r := b.drive(t); r.Status != store.RunComplete {
		t.Fatalf("run %s (%s)", r.Status, r.Error)
	}
	if _, err := b.app.Store.GetLease(b.ctx, store.RunLeaseKey(b.run.ID)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("lease after the drive: %v, want released", err)
	}
}

// TestDriveStopsWhenItsLeaseIsLost takes the lease of a driving engine
// over, as a process would that found its heartbeats stopped: the engine
// stops its agents and writes nothing more.
func TestDriveStopsWhenItsLeaseIsLost(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, setupOpts{respond: func(llmtest.Request) llmtest.Turn {
		return llmtest.Turn{Text: "never seen", Fault: &llmtest.Fault{Kind: llmtest.FaultStall}}
	}})
	tree.SetHeartbeat(b.engine, 5*time.Millisecond)
	done := make(chan error, 1)
	go func() {
		_, err := b.engine.Drive(b.ctx, b.run.ID)
		done <- err
	}()
	b.srv.WaitRequests(1) // the root's agent is waiting for the model
	mine, err := b.app.Store.GetLease(b.ctx, store.RunLeaseKey(b.run.ID))
	if err != nil {
		t.Fatal(err)
	}
	thief, err := b.app.Store.AcquireLease(b.ctx, store.LeaseRequest{Key: store.RunLeaseKey(b.run.ID),
		Owner: store.Owner{ID: "thief", PID: 4242, Host: "elsewhere"}, Now: time.Now(), TTL: time.Hour, Replace: mine.ID})
	if err != nil {
		t.Fatal(err)
	}
	before := b.node(t, 1)
	if err := <-done; !errors.Is(err, tree.ErrLeaseLost) {
		t.Fatalf("Drive = %v, want ErrLeaseLost", err)
	}
	run, err := b.app.Store.GetRun(b.ctx, b.run.ID)
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != store.RunRunning {
		t.Fatalf("the run is %s after its lease was lost; the new owner's row must be left alone", run.Status)
	}
	if after := b.node(t, 1); after.UpdatedAt != before.UpdatedAt {
		t.Fatalf("root written after the lease was lost: %+v", after)
	}
	if l, err := b.app.Store.GetLease(b.ctx, store.RunLeaseKey(b.run.ID)); err != nil || l.ID != thief.ID {
		t.Fatalf("lease = %+v, %v; want the thief's", l, err)
	}
}

// TestResumeRepairsACompleteRunMarkedInterrupted: a run whose root is
// complete reports complete, whatever a killed process left in its row.
func TestResumeRepairsACompleteRunMarkedInterrupted(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	root := b.node(t, 1)
	now := time.Now()
	root.State, root.Result, root.EndedAt = tree.StateComplete, "the answer", &now
	run := b.run
	run.Status, run.Error = store.RunInterrupted, "interrupted"
	if err := b.app.Store.Commit(b.ctx, &run, root); err != nil {
		t.Fatal(err)
	}
	if r := b.drive(t); r.Status != store.RunComplete || r.Result != "the answer" {
		t.Fatalf("run %s %q", r.Status, r.Result)
	}
	stored, err := b.app.Store.GetRun(b.ctx, b.run.ID)
	if err != nil || stored.Status != store.RunComplete {
		t.Fatalf("stored run %s, %v", stored.Status, err)
	}
	if n := len(b.srv.Requests()); n != 0 {
		t.Fatalf("%d model requests for a complete run", n)
	}
}

// TestAnswerWhileDriveStarts answers an ask node the moment the run is
// published as live: Answer must find the run fully set up (its context
// included), which -race checks.
func TestAnswerWhileDriveStarts(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, setupOpts{respond: func(llmtest.Request) llmtest.Turn {
		return llmtest.Turn{Text: "never seen", Fault: &llmtest.Fault{Kind: llmtest.FaultStall}}
	}})
	for i := range 5 {
		id := fmt.Sprintf("race-%d", i)
		if _, err := b.engine.Create(b.ctx, tree.RunOptions{ID: id, Goal: "g"}); err != nil {
			t.Fatal(err)
		}
		addAsk(t, b, id)
		ctx, cancel := context.WithCancel(b.ctx)
		var wg sync.WaitGroup
		answered := make(chan error, 1)
		wg.Go(func() {
			for !tree.IsLive(b.engine, id) {
			}
			answered <- b.engine.Answer(b.ctx, id, 2, "yes")
		})
		driven := make(chan error, 1)
		wg.Go(func() {
			_, err := b.engine.Drive(ctx, id)
			driven <- err
		})
		if err := <-answered; err != nil {
			t.Fatalf("run %s: Answer = %v", id, err)
		}
		cancel()
		wg.Wait()
		if err := <-driven; err != nil {
			t.Fatalf("run %s: Drive = %v", id, err)
		}
		if n, err := b.app.Store.GetNode(b.ctx, id, 2); err != nil || n.State != tree.StateComplete || n.Result != "yes" {
			t.Fatalf("run %s: ask %s %q, %v", id, n.State, n.Result, err)
		}
	}
}

// TestAnswerRacesDriveOpening answers an ask node while the same engine
// opens the run (a resume from the web view, then an answer): whichever
// comes first, the drive must not fail on the answer's lease and the
// answer must not be lost to a node the opening already read.
func TestAnswerRacesDriveOpening(t *testing.T) {
	t.Parallel()
	b := setup(t, nil, setupOpts{respond: func(llmtest.Request) llmtest.Turn {
		return llmtest.Turn{Text: "never seen", Fault: &llmtest.Fault{Kind: llmtest.FaultStall}}
	}})
	for i := range 40 {
		id := fmt.Sprintf("open-race-%d", i)
		if _, err := b.engine.Create(b.ctx, tree.RunOptions{ID: id, Goal: "g"}); err != nil {
			t.Fatal(err)
		}
		addAsk(t, b, id)
		ctx, cancel := context.WithCancel(b.ctx)
		var wg sync.WaitGroup
		start := make(chan struct{})
		answered := make(chan error, 1)
		wg.Go(func() {
			<-start
			answered <- b.engine.Answer(b.ctx, id, 2, "yes")
		})
		driven := make(chan error, 1)
		wg.Go(func() {
			<-start
			_, err := b.engine.Drive(ctx, id)
			driven <- err
		})
		close(start)
		if err := <-answered; err != nil {
			t.Fatalf("run %s: Answer = %v", id, err)
		}
		// The answer is in: the run (driven, or about to be) has the ask
		// complete; wait until the live run shows it, then stop driving.
		for {
			n, err := b.app.Store.GetNode(b.ctx, id, 2)
			if err != nil {
				t.Fatal(err)
			}
			if n.State == tree.StateComplete && tree.IsLive(b.engine, id) {
				break
			}
			select {
			case err := <-driven:
				t.Fatalf("run %s: Drive ended early: %v", id, err)
			case <-time.After(time.Millisecond):
			}
		}
		cancel()
		wg.Wait()
		if err := <-driven; err != nil {
			t.Fatalf("run %s: Drive = %v", id, err)
		}
		if n, err := b.app.Store.GetNode(b.ctx, id, 2); err != nil || n.State != tree.StateComplete || n.Result != "yes" {
			t.Fatalf("run %s: ask %s %q, %v", id, n.State, n.Result, err)
		}
	}
}

// TestAnswerWhileHostOpens answers an ask node of a hosted run the moment
// Host publishes it, before Start: nothing else orders the two goroutines,
// so -race reports any field of the run Host sets after publishing it.
func TestAnswerWhileHostOpens(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	for i := range 3 {
		id := fmt.Sprintf("host-race-%d", i)
		h, err := b.engine.Host(b.ctx, tree.HostOptions{ID: id, SessionID: id})
		if err != nil {
			t.Fatal(err)
		}
		h.Close()
		addAsk(t, b, id)
		answered := make(chan error, 1)
		go func() {
			for !tree.IsLive(b.engine, id) {
			}
			answered <- b.engine.Answer(b.ctx, id, 2, "yes")
		}()
		h, err = b.engine.Host(b.ctx, tree.HostOptions{ID: id, SessionID: id})
		if err != nil {
			t.Fatal(err)
		}
		if err := <-answered; err != nil {
			t.Fatalf("run %s: Answer = %v", id, err)
		}
		h.Close()
		if n, err := b.app.Store.GetNode(b.ctx, id, 2); err != nil || n.State != tree.StateComplete || n.Result != "yes" {
			t.Fatalf("run %s: ask %s %q, %v", id, n.State, n.Result, err)
		}
	}
}

// addAsk stores a pending ask node #2 under run id's root.
func addAsk(t *testing.T, b *bundle, id string) {
	t.Helper()
	ask := store.Node{RunID: id, ID: 2, ParentID: 1, Kind: tree.KindAsk, Goal: "q", Question: "q?", State: tree.StatePending}
	if err := b.app.Store.Commit(b.ctx, nil, ask); err != nil {
		t.Fatal(err)
	}
}
