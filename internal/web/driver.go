package web

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
	"github.com/arbor-run/arbor/internal/owner"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/store/postgres"
	"github.com/arbor-run/arbor/internal/tree"
)

// DriverOptions configure a Driver.
type DriverOptions struct {
	App *app.App
	// MaxParallel is the agents a started run runs at once (default 8).
	MaxParallel int
	// Serve serves the owner socket of each run this process drives (see
	// package owner), so `arbor answer` and other servers reach it; Diag
	// gets a line when a socket cannot be served.
	Serve bool
	Diag  io.Writer
}

// Driver is the Steerer of `arbor serve`: it drives the runs it starts or
// resumes in this process, under their leases, like `arbor run` and
// `arbor resume`, and answers asks like `arbor answer`. A run that another
// process drives is steered through that owner's socket (package owner),
// whose engine makes every check an in-process caller's would.
type Driver struct {
	o DriverOptions

	ctx    context.Context // drives end when it is cancelled
	cancel context.CancelFunc
	wg     sync.WaitGroup // one per drive

	mu      sync.Mutex // guards engines, stopped and adding to wg
	engines map[string]*tree.Engine
	stopped bool
}

// NewDriver returns a driver whose drives last until Stop.
func NewDriver(o DriverOptions) *Driver {
	if o.MaxParallel <= 0 {
		o.MaxParallel = 8
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Driver{o: o, ctx: ctx, cancel: cancel, engines: map[string]*tree.Engine{}}
}

// Stop interrupts every run this driver drives (they are left
// interrupted, ready for arbor resume) and waits for them. Safe to call
// twice.
func (d *Driver) Stop() {
	d.mu.Lock()
	d.stopped = true
	d.mu.Unlock()
	d.cancel()
	d.wg.Wait()
}

// ErrStopping refuses to drive a run once the server is stopping.
var ErrStopping = errors.New("server is stopping")

func (d *Driver) engine(runID string) *tree.Engine {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.engines[runID]
}

// Drives reports whether this driver drives run runID now.
func (d *Driver) Drives(runID string) bool { return d.engine(runID) != nil }

// Start creates a run on the configured model and drives it.
func (d *Driver) Start(ctx context.Context, nr NewRun) (string, error) {
	a := d.o.App
	e, m, err := a.EngineWith(app.EngineOptions{})
	if err != nil {
		return "", err
	}
	if nr.BudgetUSD > 0 && m.Ref.Price == nil {
		return "", fmt.Errorf("%w: the price of model %s is unknown, so a budget in dollars cannot be enforced; set max_tokens instead", errBadRequest, m.Ref.Ref)
	}
	r, err := e.Create(ctx, tree.RunOptions{ID: app.NewID(), Goal: nr.Goal, Model: m.Ref.Ref, Workspace: a.Workspace,
		Mode: string(a.Permissions.Mode()), BudgetUSD: nr.BudgetUSD, MaxTokens: nr.MaxTokens, MaxParallel: d.o.MaxParallel})
	if err != nil {
		return "", err
	}
	if err := d.drive(ctx, e, r.ID, func() {}); err != nil {
		return "", err
	}
	return r.ID, nil
}

// Resume drives an interrupted run here. It fails with a
// *store.LeaseHeldError while another live process drives it.
func (d *Driver) Resume(ctx context.Context, runID string) error {
	r, err := d.o.App.Store.GetRun(ctx, runID)
	if err != nil {
		return err
	}
	if r.Status.Terminal() {
		return fmt.Errorf("run %s is %s: %w", runID, r.Status, tree.ErrBadState)
	}
	if d.engine(runID) != nil {
		return fmt.Errorf("resume %s: %w", runID, tree.ErrRunActive)
	}
	ra, release, err := d.o.App.ForRun(r, false) // its workspace and mode, not the server's
	if err != nil {
		return err
	}
	e, _, err := ra.EngineWith(app.EngineOptions{Model: r.Model})
	if err != nil {
		release()
		return err
	}
	return d.drive(ctx, e, runID, release)
}

// drive drives run id on a goroutine of its own and returns once the run
// is live (its lease held) or failed to start; release is called when the
// drive ends (or does not start).
func (d *Driver) drive(ctx context.Context, e *tree.Engine, id string, release func()) error {
	started := make(chan error, 1)
	err := d.launch(id, e, func() {
		defer release()
		defer func() {
			d.mu.Lock()
			if d.engines[id] == e {
				delete(d.engines, id)
			}
			d.mu.Unlock()
		}()
		addr := ""
		if d.o.Serve {
			addr = d.o.App.AnswerSocket(id)
		}
		_, err := e.DriveWith(d.ctx, id, tree.DriveOptions{Addr: addr, Steered: true, Serve: func() func() {
			started <- nil
			if !d.o.Serve {
				return func() {}
			}
			return owner.Serve(d.ctx, owner.Options{Path: addr, RunID: id, Engine: e, Bus: d.o.App.Bus, Diag: d.o.Diag})
		}})
		if err != nil {
			select {
			case started <- err:
			default:
			}
		}
	})
	if err != nil {
		release()
		return err
	}
	select {
	case err := <-started:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// launch registers e as the engine of run id and runs drive on a
// goroutine the driver waits for, unless the driver is stopping.
func (d *Driver) launch(id string, e *tree.Engine, drive func()) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.stopped {
		return fmt.Errorf("drive %s: %w", id, ErrStopping)
	}
	d.engines[id] = e
	d.wg.Go(drive)
	return nil
}

// Answer answers ask node id: through this process's engine when it
// drives the run, else through the socket of the process that does, else
// in the store under the run's lease, as `arbor answer` does.
func (d *Driver) Answer(ctx context.Context, runID string, id int64, text string) error {
	if e := d.engine(runID); e != nil {
		return e.Answer(ctx, runID, id, text)
	}
	if st, ok := d.clusterRun(ctx, runID); ok {
		_, err := d.request(ctx, st, cluster.ControlRequest{Run: runID, Node: id, Op: cluster.OpAnswer, Text: text})
		return err
	}
	if c, _, ok := d.owner(ctx, runID); ok {
		if err := c.Answer(ctx, id, text); !errors.Is(err, owner.ErrUnreachable) {
			return err
		}
	}
	return d.o.App.StoreEngine().Answer(ctx, runID, id, text)
}

// Control stops, pauses or resumes a node: through this process's engine
// when it drives the run, else through the socket of the process that
// does. A run nobody drives, or whose owner cannot be reached from here,
// is refused naming its owner: only the owner of a run's lease changes
// it.
func (d *Driver) Control(ctx context.Context, runID string, id int64, op tree.Op) (tree.NodeState, error) {
	if e := d.engine(runID); e != nil {
		return e.Control(runID, id, op)
	}
	if st, ok := d.clusterRun(ctx, runID); ok {
		state, err := d.request(ctx, st, cluster.ControlRequest{Run: runID, Node: id, Op: string(op)})
		return tree.NodeState(state), err
	}
	c, l, ok := d.owner(ctx, runID)
	if !ok {
		if _, err := d.o.App.Store.GetRun(ctx, runID); errors.Is(err, store.ErrNotFound) {
			return "", fmt.Errorf("run %s: %w", runID, err) // 404, not "resume it"
		}
		if op == tree.OpStop {
			// A stop of a run nobody drives is written to the store, as
			// arbor stop writes it (the root's cancels the run).
			if _, err := d.o.App.StoreEngine().Stop(ctx, runID, id); err != nil {
				return "", err
			}
			return tree.StateCancelled, nil
		}
		return "", fmt.Errorf("%w: resume run %s here first", tree.ErrNotDriven, runID)
	}
	st, err := c.Control(ctx, id, op)
	if errors.Is(err, owner.ErrUnreachable) {
		return "", fmt.Errorf("%w: run %s is driven by pid %d on %s, whose socket cannot be reached from here; %s it there", tree.ErrNotDriven, runID, l.PID, l.Host, op)
	}
	return st, err
}

// Pending lists the run's pending approvals and questions, from this
// process's engine or from the run's owner; none when nobody drives it
// or its owner cannot be reached.
func (d *Driver) Pending(ctx context.Context, runID string) ([]agent.Interaction, error) {
	if e := d.engine(runID); e != nil {
		p, err := e.Pending(runID)
		// ErrNotDriven: the drive has just ended (the engine let the run
		// go before Start's goroutine forgets it): ask as for any run.
		if !errors.Is(err, tree.ErrNotDriven) {
			return p, err
		}
	}
	if st, ok := d.clusterRun(ctx, runID); ok {
		return cluster.PendingOf(ctx, st, runID)
	}
	if c, _, ok := d.owner(ctx, runID); ok {
		p, err := c.Pending(ctx)
		if errors.Is(err, owner.ErrUnreachable) || errors.Is(err, tree.ErrNotDriven) {
			return nil, nil
		}
		return p, err
	}
	return nil, nil
}

// Resolve resolves pending interaction iid of the run, where the run is
// driven.
func (d *Driver) Resolve(ctx context.Context, runID, iid string, r agent.Response) error {
	if e := d.engine(runID); e != nil {
		return e.Resolve(runID, iid, r)
	}
	if st, ok := d.clusterRun(ctx, runID); ok {
		_, err := d.request(ctx, st, cluster.ControlRequest{Run: runID, Op: cluster.OpResolve, Text: cluster.ResolveText(iid, r)})
		return err
	}
	c, l, ok := d.owner(ctx, runID)
	if !ok {
		return fmt.Errorf("resolve %q: run %s is not being driven: %w", iid, runID, agent.ErrUnknownInteraction)
	}
	err := c.Resolve(ctx, iid, r)
	if errors.Is(err, owner.ErrUnreachable) {
		return fmt.Errorf("%w: run %s is driven by pid %d on %s, whose socket cannot be reached from here", tree.ErrNotDriven, runID, l.PID, l.Host)
	}
	return err
}

// clusterRun returns the PostgreSQL store when run runID is a cluster run
// that a worker drives, on any machine: it is reached through the
// database (control requests, published interactions), not a socket.
func (d *Driver) clusterRun(ctx context.Context, runID string) (*postgres.Store, bool) {
	st, ok := d.o.App.Store.(*postgres.Store)
	return st, ok && cluster.Driven(ctx, st, runID)
}

// request sends a control request to the worker driving a cluster run;
// one no worker carried out in time stays open for the run's next worker
// and counts as done here.
func (d *Driver) request(ctx context.Context, st *postgres.Store, req cluster.ControlRequest) (string, error) {
	state, _, err := cluster.Send(ctx, st, req)
	if re := (*cluster.RequestError)(nil); errors.As(err, &re) {
		// The worker refused it (a node not in that state, an
		// interaction already resolved): a conflict with the run's state.
		return "", fmt.Errorf("%w: the worker driving the run refused: %s", tree.ErrBadState, re.Message)
	}
	return state, err
}

// owner is a client of the live process driving run runID (per its
// lease), false when none does.
func (d *Driver) owner(ctx context.Context, runID string) (owner.Client, store.Lease, bool) {
	a := d.o.App
	l, err := a.Store.GetLease(ctx, store.RunLeaseKey(runID))
	if err != nil || l.Dead(time.Now()) {
		return owner.Client{}, store.Lease{}, false
	}
	socket := l.Addr
	if socket == "" {
		socket = a.AnswerSocket(runID)
	}
	return owner.Client{Socket: socket}, l, true
}
