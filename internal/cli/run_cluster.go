package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/cluster"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/store/postgres"
	"github.com/arbor-run/arbor/internal/tree"
	"github.com/arbor-run/arbor/internal/tui"
)

// submitRun creates a cluster run (arbor run --cluster): the run, its
// root and its hand-off to a worker in one transaction. With --detach it
// prints the run id and returns; otherwise it follows the run until it
// ends and reports it like a run driven here.
func submitRun(ctx context.Context, g *globals, f *runFlags, s Streams, goal string) error {
	a, err := g.open(ctx)
	if err != nil {
		return err
	}
	defer a.Close()
	st, ok := a.Store.(*postgres.Store)
	if !ok {
		return &exitError{code: ExitUsage, err: errors.New("--cluster needs a PostgreSQL store: --store postgres://… (or ARBOR_STORE), served by arbor worker")}
	}
	e, m, err := a.EngineWith(app.EngineOptions{Model: "", MaxTurns: f.maxTurns, NodeModels: f.nodeModels})
	if err != nil {
		return classify(err)
	}
	if err := checkPrice(m, f.budget); err != nil {
		return err
	}
	r, root := e.NewRun(tree.RunOptions{
		ID: app.NewID(), Goal: goal, Model: m.Ref.Ref, Workspace: a.Workspace, Mode: string(a.Permissions.Mode()),
		BudgetUSD: f.budget, MaxTokens: f.maxTokens, MaxParallel: f.maxParallel, NodeTimeout: f.nodeTimeout,
		Queue: f.queue,
	})
	c, err := cluster.Open(ctx, st, cluster.Options{Queue: f.queue})
	if err != nil {
		return &exitError{code: ExitFailure, err: err}
	}
	if err := c.Submit(ctx, r, root); err != nil {
		return &exitError{code: ExitFailure, err: err}
	}
	if f.detach {
		fmt.Fprintln(s.Out, r.ID)
		fmt.Fprintf(s.Err, "arbor: run %s queued on %s; follow it with: arbor tree %s\n", r.ID, f.queue, r.ID)
		return nil
	}
	fmt.Fprintf(s.Err, "arbor: run %s, model %s, queued on %s for the workers\n", r.ID, r.Model, f.queue)
	fin, err := followRun(ctx, st, r.ID, s, f, r.Goal)
	if err != nil {
		return err
	}
	return report(ctx, a, fin, s, f.quiet)
}

// resumeCluster continues cluster run r on the workers rather than
// here: a run a worker drives is followed; one that stopped (interrupted
// by a local drive, out of budget) gets its budgets raised, is stored as
// running and handed to the workers in one transaction, then followed.
func resumeCluster(ctx context.Context, a *app.App, st *postgres.Store, f *runFlags, s Streams, r store.Run) error {
	id := r.ID
	if r.Status != store.RunRunning {
		if f.budget > 0 || f.maxTokens > 0 {
			e := tree.New(tree.Options{Store: st, Bus: a.Bus, Broker: a.Broker})
			err := e.Raise(ctx, id, f.budget, f.maxTokens)
			var held *store.LeaseHeldError
			if errors.As(err, &held) {
				return ownedError("run "+id, held, "")
			}
			if err != nil {
				return &exitError{code: ExitFailure, err: err}
			}
			if r, err = st.GetRun(ctx, id); err != nil {
				return &exitError{code: ExitFailure, err: err}
			}
		}
		if r.Status == store.RunInterrupted || r.Status == store.RunBudget {
			c, err := cluster.Open(ctx, st, cluster.Options{})
			if err != nil {
				return &exitError{code: ExitFailure, err: err}
			}
			if err := c.Requeue(ctx, r); err != nil {
				return &exitError{code: ExitFailure, err: err}
			}
			fmt.Fprintf(s.Err, "arbor: run %s handed back to the workers on %s\n", id, r.Queue)
		}
	}
	fmt.Fprintf(s.Err, "arbor: run %s, model %s, on the workers of %s\n", id, r.Model, r.Queue)
	fin, err := followRun(ctx, st, id, s, f, r.Goal)
	if err != nil {
		return err
	}
	return report(ctx, a, fin, s, f.quiet)
}

// followRun shows run id, driven by another process, until it ends: the
// live view on a terminal (the questions and approvals the worker
// publishes answered there, through control requests), else plain
// lines. The rows are read again after each change
// notification (and every few seconds, should one be lost), so
// transitions closer together than a read show as one. Ctrl-C stops
// following, not the run.
func followRun(ctx context.Context, st *postgres.Store, id string, s Streams, f *runFlags, goal string) (store.Run, error) {
	wctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	changes, err := st.RunChanges(wctx, id)
	if err != nil {
		return store.Run{}, &exitError{code: ExitFailure, err: err}
	}
	live := !f.plain && !f.quiet && isTerminal(s.In) && isTerminal(s.Err)
	answers := &resolver{ctx: wctx, st: st, run: id, diag: s.Err}
	if live {
		answers.diag = io.Discard // the view shows what happens
	}
	defer answers.wg.Wait()
	show, stopView := func(agent.Event) {}, func() {}
	interrupted := make(chan struct{})
	var once sync.Once
	switch {
	case live:
		live := tui.NewLive(tui.LiveOptions{RunID: id, In: s.In, Out: s.Err, Resolver: answers, Title: title(goal),
			OnInterrupt: func() { once.Do(func() { close(interrupted) }) }})
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = live.Run(context.WithoutCancel(ctx))
		}()
		show, stopView = live.Handle, func() { live.Quit(); <-done }
	case !f.quiet:
		show = tui.NewPlain(s.Err, id).Handle
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
			return store.Run{}, &exitError{code: ExitFailure, err: err}
		}
		nodes, err := st.Nodes(wctx, id)
		if err != nil {
			return store.Run{}, &exitError{code: ExitFailure, err: err}
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
			return store.Run{}, &exitError{code: ExitFailure, err: err}
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
			fmt.Fprintf(s.Err, "arbor: no worker has taken run %s yet; is one serving queue %s? (arbor worker --queue %s)\n", id, r.Queue, r.Queue)
		}
		t := time.NewTimer(3 * time.Second)
		select {
		case <-changes:
		case <-t.C:
		case <-interrupted:
			t.Stop()
			return store.Run{}, stoppedFollowing(id)
		case <-ctx.Done():
			t.Stop()
			return store.Run{}, stoppedFollowing(id)
		}
		t.Stop()
	}
}

func stoppedFollowing(id string) error {
	return &exitError{code: ExitInterrupted, err: fmt.Errorf(
		"stopped following run %s; it goes on on the workers: arbor tree %s (stop it with: arbor stop %s)", id, id, id)}
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

// clusterRequest sends req to the worker driving req.Run when it is a
// cluster run on PostgreSQL that a live process drives (handled is false
// otherwise: the caller takes its local path). The worker may be on any
// machine. queued reports a request no worker carried out in time: it
// stays open, and the worker that takes the run next carries it out.
func clusterRequest(ctx context.Context, a *app.App, req cluster.ControlRequest) (state string, handled, queued bool, err error) {
	st, ok := a.Store.(*postgres.Store)
	if !ok || !cluster.Driven(ctx, st, req.Run) {
		return "", false, false, nil
	}
	state, queued, err = cluster.Send(ctx, st, req)
	return state, true, queued, err
}
