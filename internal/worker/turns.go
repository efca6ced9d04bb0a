package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/cluster"
	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/owner"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/tool"
	"github.com/arbor-run/arbor/internal/tree"
)

// Node turns on this worker. A run's driver (any worker) hands the turns
// of its nodes to the cluster (cluster.Remote); RunUnit runs one here with
// arbor's agent loop on the node's stored session, in the run's
// workspace and permission mode, and reaches the driver for the rest.

// RunUnit implements cluster.Unit: one node turn handed out by a run's
// driver. It returns nil once the turn is over, reported or not: a turn
// the driver cannot be told of is the driver's to hand out again.
func (w *Worker) RunUnit(ctx context.Context, cl cluster.Claim) error {
	a := cl.Args
	if a.Turn == "" || a.Endpoint == "" {
		return nil // not a handed-out turn: nothing here drives it
	}
	rv, release, err := w.appFor(ctx, a.Run)
	if err != nil {
		return err
	}
	defer release()
	r, ra := rv.run, rv.app
	pool := &owner.Pool{}
	defer pool.Close()
	tc := owner.TurnClient{Client: owner.Client{Socket: a.Endpoint, Network: "tcp", Token: a.Token, Pool: pool}, Turn: a.Turn}
	// A driver that is gone or that handed the turn out again ends the
	// turn here at once.
	ctx, abort := context.WithCancelCause(ctx)
	defer abort(nil)
	check := func(err error) error {
		if errors.Is(err, owner.ErrUnreachable) || errors.Is(err, owner.ErrStaleTurn) {
			abort(err)
		}
		return err
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer abort(nil) // ends the pings (deferred calls run last first)
	wg.Go(func() { pingDriver(ctx, tc, check) })
	spec, err := tc.Spec(ctx)
	if err != nil {
		if check(err) != nil && errors.Is(err, owner.ErrUnreachable) {
			fmt.Fprintf(w.diag, "arbor worker: run %s: cannot reach its driver at %s (is its --advertise address reachable from here?): %v\n", a.Run, a.Endpoint, err)
		}
		return nil
	}
	tools := make([]tool.Tool, len(spec.Tools))
	for i, info := range spec.Tools {
		tools[i] = &treeTool{info: info, tc: tc, check: check}
	}
	ag, err := ra.NodeAgent(ctx, tree.AgentSpec{
		RunID: a.Run, NodeID: a.Node, SessionID: spec.Session, Model: spec.Model,
		Title: spec.Title, System: spec.System, Tools: tools, Fresh: spec.Fresh,
		Gate: func(ctx context.Context, est llm.Usage, cost float64) error {
			return check(tc.Gate(ctx, est, cost))
		},
		Charge: func(u llm.Usage, cost float64) {
			if err := check(tc.Charge(context.WithoutCancel(ctx), u, cost)); err != nil {
				fmt.Fprintf(w.diag, "arbor worker: run %s #%d: charge: %v\n", a.Run, a.Node, err)
			}
		},
		Flush: func(ctx context.Context) error { return check(tc.Flush(ctx)) },
	}, r.Model)
	if err != nil {
		return check(tc.End(ctx, agent.Result{Outcome: agent.OutcomeFailed, Err: err}))
	}
	// The driver's process shares this bus and broker when it is this
	// one: its front ends see the turn already.
	var stopBridge func()
	if !w.drives(a.Run) {
		stopBridge = bridge(ctx, ra, spec.Session, tc)
	}
	res := tree.Turn(ctx, ag, tree.TurnInput{
		Notice: spec.Notice, HasDraft: spec.HasDraft, ContextQuery: spec.ContextQuery,
		Prompt: func(ctx context.Context) (string, error) {
			if spec.Prompt != "" {
				return spec.Prompt, nil
			}
			p, err := tc.Prompt(ctx)
			return p, check(err)
		},
		RecoverDraft: func(d string) {
			if err := check(tc.Draft(ctx, d)); err != nil {
				fmt.Fprintf(w.diag, "arbor worker: run %s #%d: draft: %v\n", a.Run, a.Node, err)
			}
		},
	})
	if stopBridge != nil {
		stopBridge()
	}
	if ctx.Err() != nil && !errors.Is(context.Cause(ctx), cluster.ErrNodeCancelled) {
		// Not the driver's cancel: the driver is gone or has the turn
		// handed out again (no one to tell), or this worker is stopping
		// or lost the node lease (the driver hands the turn out again
		// when it sees the job end without it).
		return nil
	}
	if err := tc.End(context.WithoutCancel(ctx), res); err != nil && !errors.Is(err, owner.ErrStaleTurn) {
		fmt.Fprintf(w.diag, "arbor worker: run %s #%d: report the turn's end: %v\n", a.Run, a.Node, err)
	}
	return nil
}

// drives reports whether this worker drives run id.
func (w *Worker) drives(id string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	h := w.runs[id]
	return h != nil && h.engine != nil
}

// appFor is the run and the App of run id's turns (open), made on the
// run's first turn here and kept while its turns come: an App no turn
// has used for appIdle is closed (its sandbox and that sandbox's
// temporary directory go with it). The caller calls release when its
// turn is done with the App.
func (w *Worker) appFor(ctx context.Context, id string) (v *runApp, release func(), err error) {
	now := time.Now()
	var idle []*app.App
	w.mu.Lock()
	for k, v := range w.apps {
		if v.turns == 0 && now.Sub(v.used) > appIdle {
			delete(w.apps, k)
			idle = append(idle, v.app)
		}
	}
	v = w.apps[id]
	if v != nil {
		v.used = now
		v.turns++
	}
	w.mu.Unlock()
	for _, a := range idle {
		a.Close()
	}
	if v != nil {
		return v, w.releaser(v), nil
	}
	r, ra, err := w.open(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	w.mu.Lock()
	if prev := w.apps[id]; prev != nil { // another turn of the run made one meanwhile
		prev.turns++
		w.mu.Unlock()
		ra.Close()
		return prev, w.releaser(prev), nil
	}
	v = &runApp{run: r, app: ra, used: now, turns: 1}
	w.apps[id] = v
	w.mu.Unlock()
	return v, w.releaser(v), nil
}

// appIdle is how long appFor keeps a run's App that no turn uses.
const appIdle = time.Hour

// releaser returns the release of one turn's use of v.
func (w *Worker) releaser(v *runApp) func() {
	return func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		v.turns--
		v.used = time.Now()
	}
}

// runApp is a run as its turns need it (its workspace, mode and model
// do not change), the App of its turns, when it was last used and how
// many turns use it now (guarded by Worker.mu).
type runApp struct {
	run   store.Run
	app   *app.App
	used  time.Time
	turns int
}

// pingDriver pings the turn's driver every pingEvery until ctx ends; a
// driver that is gone or that refuses the turn ends it (check).
func pingDriver(ctx context.Context, tc owner.TurnClient, check func(error) error) {
	t := time.NewTicker(pingEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		pctx, cancel := context.WithTimeout(ctx, pingEvery)
		_ = check(tc.Ping(pctx))
		cancel()
	}
}

// pingEvery is how often a turn's worker makes sure its driver still has
// the turn: a driver's death ends its turns here within about this long.
const pingEvery = 2 * time.Second

// treeTool is a tree tool of a handed-out turn, run by the driver.
type treeTool struct {
	info  tool.Info
	tc    owner.TurnClient
	check func(error) error
}

func (t *treeTool) Info() tool.Info { return t.info }

func (t *treeTool) Target(json.RawMessage) (tool.Target, error) { return tool.Target{}, nil }

func (t *treeTool) Run(ctx context.Context, c tool.Call) tool.Result {
	res, err := t.tc.TreeTool(ctx, t.info.Name, c)
	if err := t.check(err); err != nil {
		return tool.Errorf("%s: the run's driver did not answer: %v", t.info.Name, err)
	}
	return res
}

// bridge forwards what the turn's agent raises on this process's bus to
// the run's driver until stop: its approvals and questions (each resolved
// here with the driver's resolution; a forward ends when the interaction
// is resolved here first) and its streamed events, in order, batched.
func bridge(ctx context.Context, ra *app.App, session string, tc owner.TurnClient) (stop func()) {
	var (
		mu     sync.Mutex
		queue  []agent.Event
		asks   = map[string]context.CancelFunc{}
		closed bool
	)
	wake := make(chan struct{}, 1)
	var wg sync.WaitGroup
	fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	sub := ra.Bus.Subscribe(func(ev agent.Event) {
		if agent.MetaOf(ev).SessionID != session {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		switch v := ev.(type) {
		case *agent.InteractionRequested:
			if closed {
				return
			}
			actx, done := context.WithCancel(fctx)
			asks[v.Interaction.ID] = done
			in := v.Interaction
			wg.Go(func() {
				defer done()
				resp, err := tc.Interact(actx, in)
				if err == nil {
					_ = ra.Broker.Resolve(in.ID, resp) // resolved here meanwhile: stale
				}
			})
			return
		case *agent.InteractionResolved:
			if done := asks[v.ID]; done != nil {
				delete(asks, v.ID)
				done()
			}
			return
		}
		queue = append(queue, ev)
		select {
		case wake <- struct{}{}:
		default:
		}
	})
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		for {
			_, open := <-wake
			mu.Lock()
			batch := queue
			queue = nil
			mu.Unlock()
			if len(batch) > 0 {
				_ = tc.Publish(fctx, batch) // events are a view: a lost batch loses no state
			}
			if !open {
				return
			}
		}
	}()
	return func() {
		sub.Flush()
		sub.Close()
		mu.Lock()
		closed = true
		for _, done := range asks {
			done()
		}
		mu.Unlock()
		close(wake)
		<-sent
		cancel()
		wg.Wait()
	}
}
