package worker

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/cluster"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/store/postgres"
	"github.com/arbor-run/arbor/internal/tree"
	"github.com/arbor-run/arbor/internal/tui"
)

// FollowOptions say how Follow shows a run.
type FollowOptions struct {
	Goal  string    // the run's goal, the live view's title
	In    io.Reader // the person's keys, for the live view
	Diag  io.Writer // where the view or the lines go
	Live  bool      // In and Diag are a terminal: the live view, else plain lines
	Quiet bool      // show nothing but the hints
}

// Follow shows run id, driven by another process, until it ends: the
// live view with o.Live (the questions and approvals the worker
// publishes answered there, through control requests), else plain
// lines. The rows are read again after each change
// notification (and every few seconds, should one be lost), so
// transitions closer together than a read show as one. Ctrl-C stops
// following, not the run.
func Follow(ctx context.Context, st *postgres.Store, id string, o FollowOptions) (store.Run, error) {
	wctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	changes, err := st.RunChanges(wctx, id)
	if err != nil {
		return store.Run{}, err
	}
	live := o.Live && !o.Quiet
	answers := &resolver{ctx: wctx, st: st, run: id, diag: o.Diag}
	if live {
		answers.diag = io.Discard // the view shows what happens
	}
	defer answers.wg.Wait()
	show, stopView := func(agent.Event) {}, func() {}
	interrupted := make(chan struct{})
	var once sync.Once
	switch {
	case live:
		live := tui.NewLive(tui.LiveOptions{RunID: id, In: o.In, Out: o.Diag, Resolver: answers, Title: tui.Title(o.Goal),
			OnInterrupt: func() { once.Do(func() { close(interrupted) }) }})
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = live.Run(context.WithoutCancel(ctx))
		}()
		show, stopView = live.Handle, func() { live.Quit(); <-done }
	case !o.Quiet:
		show = tui.NewPlain(o.Diag, id).Handle
	}
	defer func() { stopView() }()

	seen := map[int64]store.NodeState{}
	// A run no worker has taken after a while is said once: with no
	// worker serving its queue it would wait in silence.
	hintAt, hinted := time.Now().Add(10*time.Second), false
	shown := map[string]agent.Interaction{} // pending interactions shown, by id
	for {
		r, err := st.GetRun(wctx, id)
		if err != nil {
			return store.Run{}, err
		}
		nodes, err := st.Nodes(wctx, id)
		if err != nil {
			return store.Run{}, err
		}
		now := time.Now()
		for _, n := range nodes {
			if from, ok := seen[n.ID]; !ok || from != n.State {
				show(&tree.NodeChanged{Meta: agent.Meta{At: now}, RunID: id, From: seen[n.ID], Node: tree.View(n)})
				seen[n.ID] = n.State
			}
		}
		pending, err := cluster.PendingOf(wctx, st, id)
		if err != nil {
			return store.Run{}, err
		}
		now = time.Now()
		open := map[string]bool{}
		for _, in := range pending {
			open[in.ID] = true
			if _, ok := shown[in.ID]; !ok {
				shown[in.ID] = in
				show(&agent.InteractionRequested{Meta: agent.Meta{At: now}, Interaction: in})
			}
		}
		for iid, in := range shown {
			if !open[iid] {
				delete(shown, iid)
				show(&agent.InteractionResolved{Meta: agent.Meta{At: now}, ID: iid, Kind: in.Kind, Resolution: "answered"})
			}
		}
		if r.Status != store.RunRunning {
			show(&tree.RunFinished{Meta: agent.Meta{At: now}, RunID: id, Outcome: r.Status, Result: r.Result, Error: r.Error})
			return r, nil
		}
		if !hinted && time.Now().After(hintAt) && len(seen) == 1 && seen[1] == tree.StatePending && !live {
			hinted = true
			fmt.Fprintf(o.Diag, "arbor: no worker has taken run %s yet; is one serving queue %s? (arbor worker --queue %s)\n", id, r.Queue, r.Queue)
		}
		t := time.NewTimer(3 * time.Second)
		select {
		case <-changes:
		case <-t.C:
		case <-interrupted:
			t.Stop()
			return store.Run{}, &StoppedError{Run: id}
		case <-ctx.Done():
			t.Stop()
			return store.Run{}, &StoppedError{Run: id}
		}
		t.Stop()
	}
}

// StoppedError is Follow's end when the person stopped following (Ctrl-C):
// the run goes on on the workers.
type StoppedError struct{ Run string }

func (e *StoppedError) Error() string {
	return fmt.Sprintf("stopped following run %s; it goes on on the workers: arbor tree %s (stop it with: arbor stop %s)", e.Run, e.Run, e.Run)
}

// resolver sends what is given in the follower's live view (answers,
// approvals) to the worker driving the run, as control requests, each on
// a goroutine of its own (the view never waits on the database); the
// follower waits for them before it returns.
type resolver struct {
	ctx  context.Context
	st   *postgres.Store
	run  string
	diag io.Writer
	wg   sync.WaitGroup
}

// Resolve implements tui.Resolver.
func (a *resolver) Resolve(id string, r agent.Response) error {
	a.wg.Go(func() {
		_, queued, err := cluster.Send(a.ctx, a.st, cluster.ControlRequest{Run: a.run, Op: cluster.OpResolve, Text: cluster.ResolveText(id, r)})
		switch {
		case queued:
			fmt.Fprintf(a.diag, "arbor: %s: queued for the run's next worker\n", id)
		case err != nil:
			fmt.Fprintf(a.diag, "arbor: %s: %v\n", id, err)
		}
	})
	return nil
}
