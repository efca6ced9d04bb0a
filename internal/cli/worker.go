package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/cluster"
	"github.com/arbor-run/arbor/internal/owner"
	"github.com/arbor-run/arbor/internal/permission"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/store/postgres"
	"github.com/arbor-run/arbor/internal/tree"
	"github.com/arbor-run/arbor/internal/tui"
)

func newWorkerCmd(g *globals, s Streams) *cobra.Command {
	var (
		queue       string
		concurrency int
		workspaces  []string
		yes         bool
		stopGrace   time.Duration
		turns       int
		localTurns  bool
		listen      string
		advertise   string
	)
	cmd := &cobra.Command{
		Use:   "worker --store postgres://…",
		Short: "Drive cluster runs handed out through PostgreSQL",
		Long: `Serve a queue of cluster runs (arbor run --cluster) on a PostgreSQL store. Any
number of workers on any machines may serve one store: each run is driven by
one worker at a time, the holder of its run lease, and when a worker dies
another takes its runs over once their leases expire (a few seconds; at once
when the dead worker was on the same machine). A run taken over continues
from its stored transcripts, as arbor resume does.

The worker driving a run hands the turns of its nodes to the workers of the
run's queue (itself included), so one run's nodes spread over every worker:
each turn runs arbor's agent loop on the node's stored session in the worker
that took it, which reaches the driver for the node's tree tools, budgets and
approvals over a TCP endpoint the driver serves for the run (on --listen, an
ephemeral port, told to the others as --advertise, with a random token kept
in the database). --local-turns runs a run's turns in the worker driving it.

A worker drives a run and runs its turns only in the run's own workspace, which must exist on
this machine (the same path on a shared filesystem); --workspace limits it to
the directories named. Questions of ask nodes are answered with arbor answer,
approvals through arbor serve (on this machine), or all at once with --yes.

SIGINT or SIGTERM stops taking runs and turns, lets the runs being driven go
(their agents stop at once; the runs stay running and are offered to the
other workers), stops the turns running here (their drivers hand them out
again) and exits 0.`,
		Example: `  arbor worker --store postgres://arbor@db/arbor --concurrency 8
  arbor worker --store "$DB" --queue gpu --workspace /srv/checkout --yes`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if concurrency < 1 {
				return usageError{fmt.Errorf("--concurrency must be at least 1, not %d", concurrency)}
			}
			a, err := g.open(cmd.Context())
			if err != nil {
				return err
			}
			defer a.Close()
			st, ok := a.Store.(*postgres.Store)
			if !ok {
				return &exitError{code: ExitUsage, err: errors.New("arbor worker needs a PostgreSQL store: --store postgres://… (or ARBOR_STORE)")}
			}
			var dirs []string
			for _, d := range workspaces {
				abs, err := filepath.Abs(d)
				if err != nil {
					return usageError{fmt.Errorf("--workspace %s: %w", d, err)}
				}
				dirs = append(dirs, abs)
			}
			if turns < 0 {
				return usageError{fmt.Errorf("--turns must not be negative, not %d", turns)}
			}
			if ip := net.ParseIP(listen); advertise == "" && listen != "" && (ip == nil || !ip.IsUnspecified()) {
				advertise = listen
			}
			if advertise == "" {
				if advertise, err = os.Hostname(); err != nil {
					return usageError{fmt.Errorf("--advertise: the host name is unknown (%v); name this machine's address", err)}
				}
			}
			w := &worker{a: a, slots: make(chan struct{}, concurrency), workspaces: dirs, yes: yes, diag: s.Err,
				runs: map[string]*held{}, apps: map[string]*runApp{}, listen: net.JoinHostPort(listen, "0"), advertise: advertise,
				remote: !localTurns}
			if localTurns {
				turns = 0
			}
			return w.serve(cmd.Context(), st, queue, concurrency, turns, stopGrace)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&queue, "queue", "default", "the queue of cluster runs to serve (arbor run --cluster --queue)")
	fl.IntVar(&concurrency, "concurrency", 4, "runs this worker drives at once")
	fl.StringSliceVar(&workspaces, "workspace", nil, "serve only runs whose workspace is one of these directories (default: any that exists here)")
	fl.BoolVarP(&yes, "yes", "y", false, "approve every call that would ask, of the runs driven here and the turns run here (deny rules and workspace limits still apply)")
	fl.DurationVar(&stopGrace, "stop-timeout", 10*time.Second, "how long a stopping worker waits for its runs to let go")
	fl.IntVar(&turns, "turns", 16, "node turns (of any run on the queue) this worker runs at once; 0: only drive runs")
	fl.BoolVar(&localTurns, "local-turns", false, "run the turns of the runs this worker drives here, and take no others'")
	fl.StringVar(&listen, "listen", "", "the host the endpoints of the runs this worker drives listen on (default: every interface)")
	fl.StringVar(&advertise, "advertise", "", "this worker's address as the other workers reach it (default: --listen's host, else the host name)")
	return cmd
}

// worker is the cluster.Driver of arbor worker: it drives the runs handed
// to it, each on an engine of its own in the run's workspace, with the
// run's owner socket served while it holds the run.
type worker struct {
	a          *app.App
	slots      chan struct{} // a token per run being driven
	workspaces []string      // served workspaces; none: any that exists here
	yes        bool
	diag       io.Writer
	// listen and advertise are where the endpoints of the runs driven
	// here listen and how other workers reach them (cluster.Remote).
	listen, advertise string
	// c is the cluster, set by serve before it starts; remote says the
	// turns of the runs driven here are handed out (not --local-turns).
	c      *cluster.Cluster
	remote bool

	// ctx is the drives' context, set by serve before the cluster starts;
	// cancelling it lets every run go.
	ctx context.Context
	wg  sync.WaitGroup // the drives

	mu   sync.Mutex         // guards runs and apps
	runs map[string]*held   // the runs driven here, and those let go by a stop
	apps map[string]*runApp // by run, for handed-out turns
}

// held is a run of a worker: its queue, and its engine while the worker
// drives it (nil once a stopping worker let it go: serve offers it again).
type held struct {
	queue  string
	engine *tree.Engine
}

// serve works the queue until ctx ends, then lets the runs go and offers
// them to the other workers.
func (w *worker) serve(ctx context.Context, st *postgres.Store, queue string, concurrency, turns int, grace time.Duration) error {
	dctx, letGo := context.WithCancel(context.WithoutCancel(ctx))
	defer letGo()
	w.ctx = dctx
	logger := slog.New(slog.NewTextHandler(w.diag, &slog.HandlerOptions{Level: slog.LevelWarn}))
	o := cluster.Options{Queue: queue, Concurrency: concurrency, Driver: w, Controller: w, Logger: logger}
	if w.remote {
		// A turn may wait long for a person: River's timeout is only the
		// backstop of a vanished worker, whose turns the driver hands out
		// again long before.
		o.Remote, o.Turns, o.UnitTimeout = true, turns, 24*time.Hour
		if turns > 0 {
			o.Unit = w
		}
	}
	c, err := cluster.Open(ctx, st, o)
	if err != nil {
		return &exitError{code: ExitFailure, err: err}
	}
	w.c = c
	if err := c.Start(ctx); err != nil {
		return &exitError{code: ExitFailure, err: err}
	}
	if w.yes {
		// One approver for the process: the runs driven here (their own
		// agents' calls and those forwarded by the workers running their
		// turns) and the turns run here for other drivers.
		stopYes := (&terminal{yes: true, approvalsOnly: true, out: w.diag}).serve(dctx, w.a.Bus, w.a.Broker)
		defer stopYes()
	}
	fmt.Fprintf(w.diag, "arbor worker: pid %d serving queue %s, %d runs and %d node turns at once\n", os.Getpid(), queue, concurrency, turns)
	<-ctx.Done()

	fmt.Fprintln(w.diag, "arbor worker: stopping; letting the runs go")
	stopCtx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	// No new hand-offs; the ones in flight end. The turns running here
	// stop at once, like the runs' own agents: their drivers hand them
	// out again.
	unitsCtx := stopCtx
	if w.remote {
		var now context.CancelFunc
		unitsCtx, now = context.WithCancel(stopCtx)
		now()
	}
	stopErr := c.Stop(unitsCtx)
	letGo()
	w.wg.Wait()
	// The runs let go stay running: offer them now rather than after the
	// reaper's next pass.
	w.mu.Lock()
	left := maps.Clone(w.runs)
	w.mu.Unlock()
	for _, id := range slices.Sorted(maps.Keys(left)) {
		if err := c.EnqueueDrive(stopCtx, id, left[id].queue); err != nil {
			fmt.Fprintf(w.diag, "arbor worker: run %s: %v (the reaper hands it on)\n", id, err)
		}
	}
	if stopErr != nil {
		return &exitError{code: ExitFailure, err: stopErr}
	}
	return nil
}

// Take implements cluster.Driver.
func (w *worker) Take(ctx context.Context, id string) error {
	select {
	case w.slots <- struct{}{}:
	default:
		return cluster.ErrBusy
	}
	started := false
	defer func() {
		if !started {
			<-w.slots
		}
	}()
	r, ra, err := w.open(ctx, id)
	if err != nil {
		return err
	}
	e, stopEndpoint, err := w.engine(ra, r)
	if err != nil {
		return fmt.Errorf("run %s: %w", id, err)
	}
	opened := make(chan struct{})
	ended := make(chan error, 1)
	started = true
	w.wg.Go(func() {
		defer func() { <-w.slots }()
		defer stopEndpoint()
		fin, err := e.DriveWith(w.ctx, id, tree.DriveOptions{
			Addr:    ra.AnswerSocket(id),
			Handoff: true,
			Serve: func() func() {
				close(opened)
				w.mu.Lock()
				w.runs[id] = &held{queue: r.Queue, engine: e}
				w.mu.Unlock()
				fmt.Fprintf(w.diag, "arbor worker: driving run %s (%s)\n", id, title(r.Goal))
				return w.front(ra, e, id)
			},
		})
		letGo := err == nil && w.ctx.Err() != nil && fin.Status == store.RunRunning
		w.mu.Lock()
		if h := w.runs[id]; h != nil && letGo {
			h.engine = nil // serve offers it again
		} else {
			delete(w.runs, id)
		}
		w.mu.Unlock()
		switch {
		case err != nil:
			fmt.Fprintf(w.diag, "arbor worker: run %s: %v\n", id, err)
		case letGo:
			fmt.Fprintf(w.diag, "arbor worker: let run %s go\n", id)
			return
		default:
			fmt.Fprintf(w.diag, "arbor worker: run %s %s\n", id, fin.Status)
		}
		ended <- err
	})
	select {
	case <-opened:
		return nil
	case err := <-ended:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// engine returns the engine that drives run r: one whose node turns are
// handed out (cluster.Remote), with the run's endpoint served until
// stop, unless the turns are local or the endpoint cannot be served.
func (w *worker) engine(ra *app.App, r store.Run) (e *tree.Engine, stop func(), err error) {
	if !w.remote {
		e, _, err = ra.EngineWith(app.EngineOptions{Model: r.Model})
		return e, func() {}, err
	}
	remote := w.c.NewRemote(r.ID, r.Queue)
	e, _, err = ra.EngineWith(app.EngineOptions{Model: r.Model, Remote: remote})
	if err != nil {
		return nil, nil, err
	}
	// No turn is handed out before the drive holds the run: until then
	// the endpoint has none to serve.
	_, stop, err = remote.Serve(w.ctx, owner.Options{RunID: r.ID, Engine: e, Bus: ra.Bus, Broker: ra.Broker, Diag: w.diag},
		w.listen, w.advertise)
	if err != nil {
		fmt.Fprintf(w.diag, "arbor worker: run %s: its turns run here: %v\n", r.ID, err)
		e, _, err = ra.EngineWith(app.EngineOptions{Model: r.Model})
		return e, func() {}, err
	}
	return e, stop, nil
}

// Control implements cluster.Controller: answers and node control of
// the runs this worker drives, from any machine.
func (w *worker) Control(ctx context.Context, req cluster.ControlRequest) (string, error) {
	w.mu.Lock()
	var e *tree.Engine
	if h := w.runs[req.Run]; h != nil {
		e = h.engine
	}
	w.mu.Unlock()
	if e == nil {
		return "", cluster.ErrNotDriven
	}
	state, err := control(ctx, e, req)
	if errors.Is(err, tree.ErrNotDriven) {
		return "", cluster.ErrNotDriven // let go meanwhile
	}
	return state, err
}

// control carries out req on the engine driving its run.
func control(ctx context.Context, e *tree.Engine, req cluster.ControlRequest) (string, error) {
	switch req.Op {
	case cluster.OpAnswer:
		return string(tree.StateComplete), e.Answer(ctx, req.Run, req.Node, req.Text)
	case cluster.OpResolve:
		iid, resp, err := cluster.ParseResolve(req.Text)
		if err != nil {
			return "", err
		}
		return "resolved", e.Resolve(req.Run, iid, resp)
	case cluster.OpStop, cluster.OpPause, cluster.OpResume:
		st, err := e.Control(req.Run, req.Node, tree.Op(req.Op))
		return string(st), err
	default:
		return "", fmt.Errorf("unknown control request %q", req.Op)
	}
}

// front serves what a person needs of a run this worker holds: its owner
// socket (arbor answer, arbor serve) and plain lines on the worker's log.
func (w *worker) front(ra *app.App, e *tree.Engine, id string) (stop func()) {
	stopAnswers := serveAnswers(w.ctx, ra, e, id, w.diag)
	lines := ra.Bus.Subscribe(tui.NewPlain(w.diag, id).Handle)
	stopPublish := w.publishPending(ra, e, id)
	return func() { stopPublish(); lines.Close(); stopAnswers() }
}

// publishPending keeps run id's published pending interactions (for
// front ends on any machine: cluster.PublishPending) equal to the
// engine's, on a goroutine of its own woken by the bus's interaction
// events (wake-ups coalesce), until stop, which clears them.
func (w *worker) publishPending(ra *app.App, e *tree.Engine, id string) (stop func()) {
	st, ok := ra.Store.(*postgres.Store)
	if !ok {
		return func() {}
	}
	wake := make(chan struct{}, 1)
	wake <- struct{}{} // replace what a dead driver left published
	sub := ra.Bus.Subscribe(func(ev agent.Event) {
		switch ev.(type) {
		case *agent.InteractionRequested, *agent.InteractionResolved:
			select {
			case wake <- struct{}{}:
			default:
			}
		}
	})
	ctx, cancel := context.WithCancel(w.ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		var (
			last      []string // the ids published
			published bool
		)
		for {
			select {
			case <-ctx.Done():
				if published {
					_ = cluster.PublishPending(context.WithoutCancel(ctx), st, id, nil)
				}
				return
			case <-wake:
			}
			ins, err := e.Pending(id)
			if err != nil {
				continue // the drive is ending
			}
			ids := make([]string, len(ins))
			for i, in := range ins {
				ids[i] = in.ID
			}
			if published && slices.Equal(ids, last) {
				continue
			}
			if err := cluster.PublishPending(ctx, st, id, ins); err != nil && ctx.Err() == nil {
				fmt.Fprintf(w.diag, "arbor worker: run %s: %v\n", id, err)
				continue
			}
			last, published = ids, true
		}
	})
	return func() { sub.Close(); cancel(); wg.Wait() }
}

// open reads run id and makes the App its drive or its turns work in: a
// view of its workspace, in its permission mode. It fails with
// cluster.ErrNoWorkspace when this worker does not serve the workspace.
func (w *worker) open(ctx context.Context, id string) (store.Run, *app.App, error) {
	r, err := w.a.Store.GetRun(ctx, id)
	if err != nil {
		return store.Run{}, nil, err
	}
	if !w.serves(r.Workspace) {
		return store.Run{}, nil, fmt.Errorf("run %s: workspace %s: %w", id, r.Workspace, cluster.ErrNoWorkspace)
	}
	ra, err := w.a.In(r.Workspace)
	if err != nil {
		return store.Run{}, nil, fmt.Errorf("run %s: %w", id, err)
	}
	if m, err := permission.ParseMode(r.Mode); err == nil && r.Mode != "" {
		ra.Permissions.SetMode(m)
	}
	return r, ra, nil
}

// serves reports whether this worker has workspace ws.
func (w *worker) serves(ws string) bool {
	if len(w.workspaces) > 0 && !slices.Contains(w.workspaces, filepath.Clean(ws)) {
		return false
	}
	fi, err := os.Stat(ws)
	return err == nil && fi.IsDir()
}
