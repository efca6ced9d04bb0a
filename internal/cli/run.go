//go:build !lean

package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/store/postgres"
	"github.com/arbor-run/arbor/internal/tree"
	"github.com/arbor-run/arbor/internal/tui"
)

type runFlags struct {
	app.Limits
	yes        bool
	quiet      bool
	plain      bool
	wait       bool
	nodeModels []string
	cluster    bool
	queue      string
	detach     bool
}

func (f *runFlags) bind(cmd *cobra.Command, create bool) {
	fl := cmd.Flags()
	fl.BoolVarP(&f.yes, "yes", "y", false, "approve every call that would ask (deny rules and workspace limits still apply)")
	fl.IntVar(&f.MaxTurns, "max-turns", 0, "maximum model calls per node turn (default from config, 50)")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "print only the final result")
	fl.BoolVar(&f.plain, "plain", false, "print one line per transition even on a terminal")
	fl.StringSliceVar(&f.nodeModels, "node-models", nil, "the config's node_models children may choose (names, comma-separated; default all; \"\" = none)")
	if create {
		fl.Float64Var(&f.BudgetUSD, "budget", 0, "stop the run when it has cost this many US dollars (0 = no limit)")
		fl.Int64Var(&f.MaxTokens, "max-tokens", 0, "stop the run when it has used this many tokens (0 = no limit)")
		fl.IntVar(&f.MaxParallel, "max-parallel", 8, "agents running at once")
		fl.DurationVar(&f.NodeTimeout, "node-timeout", 0, "fail a node whose agent runs longer than this (0 = no limit)")
		fl.BoolVar(&f.cluster, "cluster", false, "hand the run to arbor worker processes on the PostgreSQL store instead of driving it here")
		fl.StringVar(&f.queue, "queue", "default", "with --cluster: the worker queue the run goes to")
		fl.BoolVar(&f.detach, "detach", false, "with --cluster: print the run id and return at once")
	}
}

func newRunCmd(g *globals, s Streams) *cobra.Command {
	f := &runFlags{}
	cmd := &cobra.Command{
		Use:   `run [flags] "goal" | FILE`,
		Short: "Run a goal as a coordination tree of agents",
		Long: `Run a goal. The root agent decides whether to work alone or to split the goal
into child tasks (spawn, fork, ask) with dependencies; children run in
parallel and hand their results up for synthesis. If the only argument ends
in .md or names an existing path, it is a plan file whose text is the goal: it
must be a readable UTF-8 text file of at most 1 MiB (a missing, binary or
larger file, or a directory, is an error, exit 2).
--budget is in dollars and needs the model's price; --max-tokens works on
any model.

On a terminal a live tree view shows the run; otherwise one line per
transition goes to stderr. The root's final result goes to stdout. Writes and
shell commands ask for approval unless --yes, --mode or a rule allows them.
Questions of ask nodes are answered in the view, or from another shell with
'arbor answer RUN #N "text"'. Ctrl-C stops cleanly; 'arbor resume RUN'
continues.

With --cluster (a PostgreSQL store) the run is handed to the arbor worker
processes serving --queue: this process prints its transitions and result as
they happen, and Ctrl-C stops following, not the run. --detach prints the run
id and returns at once.`,
		Example: `  arbor run --model script:examples/hello.yaml --yes "Write a haiku about trees into haiku.txt"
  arbor run --budget 2 "Should we migrate our API from REST to GraphQL? Evaluate and recommend."
  arbor run plan.md --budget 5`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageError{errors.New(`run needs a goal: arbor run "goal" (or a plan file)`)}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			g.runsAgents()
			if err := f.validate(true); err != nil {
				return err
			}
			goal, err := app.GoalText(args)
			if err != nil {
				return &exitError{code: ExitUsage, err: err}
			}
			if strings.TrimSpace(goal) == "" {
				return usageError{errors.New("the goal is empty")}
			}
			if f.cluster {
				return submitRun(cmd.Context(), g, f, s, goal)
			}
			return driveRun(cmd.Context(), g, f, s, goal, "")
		},
	}
	f.bind(cmd, true)
	return cmd
}

func newResumeCmd(g *globals, s Streams) *cobra.Command {
	f := &runFlags{}
	cmd := &cobra.Command{
		Use:   "resume RUN",
		Short: "Continue an interrupted run",
		Long: `Continue a run after Ctrl-C, a crash or a spent budget. Completed results are
kept; nodes that were running continue from their stored transcripts at the
last step boundary; a tool that was running when the process died is
reported to its agent as interrupted, never run twice. The run goes on in its
own workspace and permission mode, from whatever directory it is resumed
(--mode chooses another mode).

One process drives a run at a time. While another live process drives it,
resume exits 1 naming the owner (pid, host, since when); --wait waits until
the owner ends or dies instead. A killed owner's run is taken over at once on
the same machine, or once its lease expires (a few seconds) elsewhere.

A cluster run (arbor run --cluster) is continued by the workers, not here:
resume raises its budgets if asked, hands it back to them when it stopped,
and follows it.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			g.runsAgents()
			if err := f.validate(false); err != nil {
				return err
			}
			return driveRun(cmd.Context(), g, f, s, "", args[0])
		},
	}
	f.bind(cmd, false)
	cmd.Flags().Float64Var(&f.BudgetUSD, "budget", 0, "raise the run's budget to this many US dollars")
	cmd.Flags().Int64Var(&f.MaxTokens, "max-tokens", 0, "raise the run's token limit")
	cmd.Flags().BoolVar(&f.wait, "wait", false, "wait for the process driving the run to end instead of exiting 1")
	return cmd
}

// validate refuses flag values that make no sense, before anything runs
// (exit 2).
func (f *runFlags) validate(create bool) error {
	if err := f.Check(create); err != nil {
		return classify(err)
	}
	switch {
	case f.detach && !f.cluster:
		return usageError{errors.New("--detach needs --cluster: a run driven here ends with this process")}
	case f.cluster && f.queue == "":
		return usageError{errors.New("--queue must not be empty")}
	case f.cluster && f.yes:
		return usageError{errors.New("--yes does not reach the workers of a --cluster run: give it to arbor worker, or choose --mode")}
	}
	return nil
}

// driveRun creates (goal != "") or resumes (runID != "") a run and drives it
// to its end with a live view or plain lines.
func driveRun(ctx context.Context, g *globals, f *runFlags, s Streams, goal, runID string) error {
	a, err := g.openApp(ctx, runID != "") // resume needs the store the run is in
	if err != nil {
		return err
	}
	defer a.Close()

	var r store.Run
	ref := ""
	if runID != "" {
		if r, err = a.Store.GetRun(ctx, runID); err != nil {
			return &exitError{code: ExitFailure, err: fmt.Errorf("run %s: %w", runID, err)}
		}
		if r.Status == store.RunFailed || r.Status == store.RunCancelled {
			// Its error is the old one: say so, rather than print it as news.
			return &exitError{code: ExitFailure, err: fmt.Errorf("run %s %s earlier (%s) and is over: nothing was run again; start a new one with arbor run", r.ID, r.Status, cmp.Or(r.Error, "no error recorded"))}
		}
		if st, ok := a.Store.(*postgres.Store); ok && r.Queue != "" {
			return resumeCluster(ctx, a, st, f, s, r)
		}
		ra, release, err := a.ForRun(r, g.mode != "") // its workspace and mode, from wherever it is resumed
		if err != nil {
			return classify(err)
		}
		defer release()
		if ra.Workspace != a.Workspace {
			fmt.Fprintf(s.Err, "arbor: run %s works in %s\n", r.ID, ra.Workspace)
		}
		a = ra
		ref = r.Model
		if g.model != "" {
			ref = g.model
		}
	}
	e, m, err := a.EngineWith(app.EngineOptions{Model: ref, MaxTurns: f.MaxTurns, NodeModels: f.nodeModels})
	if err != nil {
		return classify(err)
	}
	r.Model = m.Ref.Ref // shown: the model this process runs, --model's on a resume
	budget := f.BudgetUSD
	if budget == 0 {
		budget = r.BudgetUSD // a resumed run keeps its budget
	}
	if err := classify(app.CheckPrice(m, budget)); err != nil {
		return err
	}
	if runID == "" {
		goal = a.ExpandGoal(goal) // "/review main.go"
		hooked, err := a.PromptContext(ctx, "", "startup", goal)
		if err != nil {
			return err
		}
		r, err = e.Create(ctx, tree.RunOptions{
			ID: app.NewID(), Goal: goal, Context: hooked, Model: m.Ref.Ref, Workspace: a.Workspace, Mode: string(a.Permissions.Mode()),
			BudgetUSD: f.BudgetUSD, MaxTokens: f.MaxTokens, MaxParallel: f.MaxParallel, NodeTimeout: f.NodeTimeout,
			TraceParent: a.TraceParent(),
		})
		if err != nil {
			return err
		}
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	drive := func() (store.Run, error) {
		if runID != "" && (f.BudgetUSD > 0 || f.MaxTokens > 0) {
			if err := e.Raise(ctx, r.ID, f.BudgetUSD, f.MaxTokens); err != nil {
				return store.Run{}, err
			}
		}
		// The view and the answer socket are served only while this
		// process owns the run.
		return e.DriveWith(ctx, r.ID, tree.DriveOptions{
			Addr: a.AnswerSocket(r.ID),
			Serve: func() func() {
				stopFront := startFrontEnd(ctx, a, f, s, r, cancel)
				stopAnswers := serveAnswers(ctx, a, e, r.ID, s.Err)
				return func() { stopAnswers(); stopFront() }
			},
		})
	}
	var fin store.Run
	if f.wait {
		fin, err = store.WaitForLease(ctx, r.ID, s.Err, drive)
		if errors.Is(err, store.ErrStoppedWaiting) {
			return &exitError{code: ExitInterrupted, err: err}
		}
	} else {
		fin, err = drive()
	}
	if err == nil {
		a.EndSession(ctx, "", "other") // as the SessionStart hooks, the run's
	}
	var held *store.LeaseHeldError
	if errors.As(err, &held) {
		return ownedError("run "+r.ID, held, "arbor resume --wait "+r.ID)
	}
	if errors.Is(err, tree.ErrLeaseLost) {
		return &exitError{code: ExitFailure, err: fmt.Errorf("%w; another process took run %s over", err, r.ID)}
	}
	if err != nil {
		return classify(err)
	}
	return report(ctx, a, fin, s, f.quiet)
}

// startFrontEnd shows the run: the live view when stdin and stderr are
// terminals, else plain lines on stderr with approvals answered by the
// terminal rules.
func startFrontEnd(ctx context.Context, a *app.App, f *runFlags, s Streams, r store.Run, cancel func()) (stop func()) {
	nodes, _ := a.Store.Nodes(ctx, r.ID) // as they stand when a resumed run is shown
	if !f.plain && !f.quiet && isTerminal(s.In) && isTerminal(s.Err) {
		live := tui.NewLive(tui.LiveOptions{RunID: r.ID, In: s.In, Out: s.Err, Resolver: a.Broker, Title: tui.Title(r.Goal), OnInterrupt: cancel})
		tui.Resumed(r.ID, nodes, live.Handle)
		sub := a.Bus.Subscribe(live.Handle)
		stopMCP := showMCPFailures(a, live)
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = live.Run(context.WithoutCancel(ctx))
		}()
		if f.yes {
			stopYes := (&tui.Prompter{Yes: true, ApprovalsOnly: true, RunID: r.ID, Out: s.Err}).Serve(ctx, a.Bus, a.Broker)
			return func() { stopYes(); stopMCP(); sub.Close(); live.Quit(); <-done }
		}
		return func() { stopMCP(); sub.Close(); live.Quit(); <-done }
	}
	fmt.Fprintf(s.Err, "arbor: run %s, model %s\n", r.ID, r.Model)
	var plain *agent.Subscription
	if !f.quiet {
		p := tui.NewPlain(s.Err, r.ID)
		tui.Resumed(r.ID, nodes, p.Handle)
		plain = a.Bus.Subscribe(p.Handle)
	}
	term := &tui.Prompter{In: s.In, Out: s.Err, Yes: f.yes, Interactive: isTerminal(s.In), RunID: r.ID}
	stopTerm := term.Serve(ctx, a.Bus, a.Broker)
	stopMCP := watchMCPFailures(a, s.Err)
	return func() {
		stopMCP()
		stopTerm()
		if plain != nil {
			plain.Close()
		}
	}
}

// report prints the outcome and maps it to the exit code.
func report(ctx context.Context, a *app.App, r store.Run, s Streams, quiet bool) error {
	if !quiet {
		printTotals(ctx, a, r, s)
	}
	switch r.Status {
	case store.RunComplete:
		if r.Result != "" {
			fmt.Fprintln(s.Out, strings.TrimRight(r.Result, "\n"))
		}
		return nil
	case store.RunInterrupted:
		return &exitError{code: ExitInterrupted, err: fmt.Errorf("interrupted; continue with: arbor resume %s", r.ID)}
	case store.RunBudget:
		return &exitError{code: ExitFailure, err: fmt.Errorf("%s; continue with a larger limit: arbor resume %s %s N", r.Error, r.ID, tree.RaiseFlag(r.Error))}
	default:
		return &exitError{code: ExitFailure, err: fmt.Errorf("run %s %s: %s", r.ID, r.Status, r.Error)}
	}
}

func printTotals(ctx context.Context, a *app.App, r store.Run, s Streams) {
	nodes, err := a.Store.Nodes(ctx, r.ID)
	if err != nil {
		return
	}
	in, out, cost := app.Totals(app.WithSpend(ctx, a.Store, nodes))
	if cost == "" {
		cost = "unknown"
	}
	fmt.Fprintf(s.Err, "arbor: run %s %s: %d nodes, %d input + %d output tokens, cost %s\n", r.ID, r.Status, len(nodes), in, out, cost)
}
