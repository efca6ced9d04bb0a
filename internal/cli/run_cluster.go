//go:build !lean

package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/cluster"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/store/postgres"
	"github.com/arbor-run/arbor/internal/tree"
	"github.com/arbor-run/arbor/internal/worker"
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
	e, m, err := a.EngineWith(app.EngineOptions{Model: "", MaxTurns: f.MaxTurns, NodeModels: f.nodeModels})
	if err != nil {
		return classify(err)
	}
	if err := classify(app.CheckPrice(m, f.BudgetUSD)); err != nil {
		return err
	}
	r, root := e.NewRun(tree.RunOptions{
		ID: app.NewID(), Goal: goal, Model: m.Ref.Ref, Workspace: a.Workspace, Mode: string(a.Permissions.Mode()),
		BudgetUSD: f.BudgetUSD, MaxTokens: f.MaxTokens, MaxParallel: f.MaxParallel, NodeTimeout: f.NodeTimeout,
		Queue: f.queue, TraceParent: a.TraceParent(),
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
	fin, err := follow(ctx, st, r.ID, s, f, r.Goal)
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
		if f.BudgetUSD > 0 || f.MaxTokens > 0 {
			e := tree.New(tree.Options{Store: st, Bus: a.Bus, Broker: a.Broker})
			err := e.Raise(ctx, id, f.BudgetUSD, f.MaxTokens)
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
	fin, err := follow(ctx, st, id, s, f, r.Goal)
	if err != nil {
		return err
	}
	return report(ctx, a, fin, s, f.quiet)
}

// follow shows cluster run id until it ends (worker.Follow): the live
// view on a terminal, else plain lines.
func follow(ctx context.Context, st *postgres.Store, id string, s Streams, f *runFlags, goal string) (store.Run, error) {
	fin, err := worker.Follow(ctx, st, id, worker.FollowOptions{Goal: goal, In: s.In, Diag: s.Err,
		Live: !f.plain && isTerminal(s.In) && isTerminal(s.Err), Quiet: f.quiet})
	var stopped *worker.StoppedError
	switch {
	case errors.As(err, &stopped):
		return fin, &exitError{code: ExitInterrupted, err: err}
	case err != nil:
		return fin, &exitError{code: ExitFailure, err: err}
	}
	return fin, nil
}
