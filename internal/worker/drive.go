package worker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

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

// Take implements cluster.Driver.
func (w *Worker) Take(ctx context.Context, id string) error {
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
		ra.Close()
		return fmt.Errorf("run %s: %w", id, err)
	}
	opened := make(chan struct{})
	ended := make(chan error, 1)
	started = true
	w.wg.Go(func() {
		defer func() { <-w.slots }()
		defer ra.Close() // the run's view: its sandbox and that sandbox's temporary directory
		defer stopEndpoint()
		fin, err := e.DriveWith(w.ctx, id, tree.DriveOptions{
			Addr:    ra.AnswerSocket(id),
			Handoff: true,
			Serve: func() func() {
				close(opened)
				w.mu.Lock()
				w.runs[id] = &held{queue: r.Queue, engine: e}
				w.mu.Unlock()
				fmt.Fprintf(w.diag, "arbor worker: driving run %s (%s)\n", id, tui.Title(r.Goal))
				return w.front(ra, e, id)
			},
		})
		letGo := err == nil && w.ctx.Err() != nil && fin.Status == store.RunRunning
		w.forget(id, e, letGo)
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

// forget ends what drive e of run id registered (Serve): the run's entry
// goes, or with letGo stays to be offered again. An entry another drive
// registered is left alone: the same run can reach this worker twice
// (a takeover after a kill did, under load), and the second drive, which
// finds the lease its own process holds and fails, must not take the
// first's entry with it, or answers and stops sent to the run through the
// database would find no worker driving it.
func (w *Worker) forget(id string, e *tree.Engine, letGo bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch h := w.runs[id]; {
	case h == nil || h.engine != e:
	case letGo:
		h.engine = nil // serve offers it again
	default:
		delete(w.runs, id)
	}
}

// engine returns the engine that drives run r: one whose node turns are
// handed out (cluster.Remote), with the run's endpoint served until
// stop, unless the turns are local or the endpoint cannot be served.
func (w *Worker) engine(ra *app.App, r store.Run) (e *tree.Engine, stop func(), err error) {
	if !w.remote {
		e, _, err = ra.EngineWith(app.EngineOptions{Model: r.Model})
		return e, func() {}, err
	}
	remote := w.c.NewRemote(r.ID, r.Queue)
	runHere := func(ctx context.Context, node int64, attempt int) (context.Context, func(), bool) {
		return remote.RunHere(ctx, w.here, node, attempt)
	}
	e, _, err = ra.EngineWith(app.EngineOptions{Model: r.Model, Remote: remote, RunHere: runHere})
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
func (w *Worker) Control(ctx context.Context, req cluster.ControlRequest) (string, error) {
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
func (w *Worker) front(ra *app.App, e *tree.Engine, id string) (stop func()) {
	stopAnswers := owner.Serve(w.ctx, owner.Options{Path: ra.AnswerSocket(id), RunID: id, Engine: e, Bus: ra.Bus, Diag: w.diag})
	lines := ra.Bus.Subscribe(tui.NewPlain(w.diag, id).Handle)
	stopPublish := w.publishPending(ra, e, id)
	return func() { stopPublish(); lines.Close(); stopAnswers() }
}

// publishPending keeps run id's published pending interactions (for
// front ends on any machine: cluster.PublishPending) equal to the
// engine's, on a goroutine of its own woken by the bus's interaction
// events (wake-ups coalesce), until stop, which clears them.
func (w *Worker) publishPending(ra *app.App, e *tree.Engine, id string) (stop func()) {
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
func (w *Worker) open(ctx context.Context, id string) (store.Run, *app.App, error) {
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
	// A view of its own even in the worker's own directory: the worker
	// closes it when the drive ends, and sets the run's mode on it.
	if m, err := permission.ParseMode(r.Mode); err == nil && r.Mode != "" {
		ra.Permissions.SetMode(m)
	}
	return r, ra, nil
}

// serves reports whether this worker has workspace ws.
func (w *Worker) serves(ws string) bool {
	if len(w.workspaces) > 0 && !slices.Contains(w.workspaces, filepath.Clean(ws)) {
		return false
	}
	fi, err := os.Stat(ws)
	return err == nil && fi.IsDir()
}
