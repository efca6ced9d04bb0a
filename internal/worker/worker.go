package worker

import (
	"context"
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

	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/cluster"
	"github.com/arbor-run/arbor/internal/store/postgres"
	"github.com/arbor-run/arbor/internal/tree"
	"github.com/arbor-run/arbor/internal/tui"
)

// Options configure a Worker (the flags of arbor worker).
type Options struct {
	Queue       string        // the queue of cluster runs served ("" is "default")
	Concurrency int           // runs driven at once, at least 1
	Turns       int           // node turns (of any run on the queue) run at once; 0: only drive runs
	LocalTurns  bool          // run the turns of the runs driven here, and take no others'
	Workspaces  []string      // serve only runs in these directories; none: any that exists here
	Yes         bool          // approve every call that would ask
	StopGrace   time.Duration // how long a stopping worker waits for its runs to let go
	// Listen is the host the endpoints of the runs driven here listen on
	// ("" is every interface); Advertise is this worker's address as the
	// other workers reach it (default: Listen's host, else the host name).
	Listen, Advertise string
	Diag              io.Writer // the worker's log
}

// New makes the Worker of a's store, which must be PostgreSQL. Its
// errors wrap app.ErrUsage: they are the caller's options.
func New(a *app.App, o Options) (*Worker, error) {
	st, ok := a.Store.(*postgres.Store)
	if !ok {
		return nil, fmt.Errorf("%w: arbor worker needs a PostgreSQL store: --store postgres://… (or ARBOR_STORE)", app.ErrUsage)
	}
	if o.Concurrency < 1 {
		return nil, fmt.Errorf("%w: --concurrency must be at least 1, not %d", app.ErrUsage, o.Concurrency)
	}
	if o.Turns < 0 {
		return nil, fmt.Errorf("%w: --turns must not be negative, not %d", app.ErrUsage, o.Turns)
	}
	if o.Queue == "" {
		o.Queue = "default"
	}
	if o.Diag == nil {
		o.Diag = io.Discard
	}
	var dirs []string
	for _, d := range o.Workspaces {
		abs, err := filepath.Abs(d)
		if err != nil {
			return nil, fmt.Errorf("%w: --workspace %s: %w", app.ErrUsage, d, err)
		}
		if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
			// A directory that is not here would serve nothing, for good.
			return nil, fmt.Errorf("%w: --workspace %s is no directory on this machine", app.ErrUsage, abs)
		}
		dirs = append(dirs, abs)
	}
	advertise := o.Advertise
	if ip := net.ParseIP(o.Listen); advertise == "" && o.Listen != "" && (ip == nil || !ip.IsUnspecified()) {
		advertise = o.Listen
	}
	if advertise == "" {
		h, err := os.Hostname()
		if err != nil {
			return nil, fmt.Errorf("%w: --advertise: the host name is unknown (%v); name this machine's address", app.ErrUsage, err)
		}
		advertise = h
	}
	if o.LocalTurns {
		o.Turns = 0
	}
	return &Worker{a: a, st: st, o: o, slots: make(chan struct{}, o.Concurrency), here: make(chan struct{}, o.Turns), workspaces: dirs, yes: o.Yes, diag: o.Diag,
		runs: map[string]*held{}, apps: map[string]*runApp{}, listen: net.JoinHostPort(o.Listen, "0"), advertise: advertise,
		remote: !o.LocalTurns}, nil
}

// Worker is the cluster.Driver of arbor worker: it drives the runs handed
// to it, each on an engine of its own in the run's workspace, with the
// run's owner socket served while it holds the run.
type Worker struct {
	a     *app.App
	st    *postgres.Store
	o     Options
	slots chan struct{} // a token per run being driven
	// here holds a token per turn of the runs driven here that runs here
	// (cluster.Remote.RunHere): up to Turns, besides the Turns taken from
	// the queue.
	here       chan struct{}
	workspaces []string // served workspaces; none: any that exists here
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

// Serve works the queue until ctx ends, then lets the runs go and offers
// them to the other workers.
func (w *Worker) Serve(ctx context.Context) error {
	st, queue, concurrency, turns, grace := w.st, w.o.Queue, w.o.Concurrency, w.o.Turns, w.o.StopGrace
	dctx, letGo := context.WithCancel(context.WithoutCancel(ctx))
	defer letGo()
	w.ctx = dctx
	logger := slog.New(slog.NewTextHandler(w.diag, &slog.HandlerOptions{Level: slog.LevelWarn}))
	// The node leases live and beat as the run leases of the engines
	// driving runs here (app.EngineWith): config's cluster section.
	timing := w.a.Config().Cluster
	o := cluster.Options{Queue: queue, Concurrency: concurrency, Driver: w, Controller: w, Logger: logger,
		LeaseTTL: timing.LeaseTTL, Heartbeat: timing.Heartbeat, FetchPoll: timing.Poll}
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
		return err
	}
	w.c = c
	if err := c.Start(ctx); err != nil {
		return err
	}
	if w.yes {
		// One approver for the process: the runs driven here (their own
		// agents' calls and those forwarded by the workers running their
		// turns) and the turns run here for other drivers.
		stopYes := (&tui.Prompter{Yes: true, ApprovalsOnly: true, Out: w.diag}).Serve(dctx, w.a.Bus, w.a.Broker)
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
	return stopErr
}
