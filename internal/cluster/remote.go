package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/owner"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/tree"
)

// Node turns on any worker. The worker driving a cluster run keeps the
// run — its scheduling, budgets and tree tools, in memory as every arbor
// engine does — and hands each turn of arbor's own loop to the cluster
// as an arbor.node_step job carrying the turn's id and the driver's owner
// endpoint (Remote, a tree.Remote). The worker that claims the job runs
// the turn with the one agent loop on the node's stored session and
// reaches the driver over that endpoint for everything the run owns
// (owner.TurnClient): the node's tree tools, the budget gate and charge,
// the first prompt, approvals and questions, events, and the turn's end.
//
// A turn's job carries its attempt, so a claim of a node that moved on is
// stale. The driver watches each turn it handed out: a job whose worker
// died (its node lease expired while it ran) or that ended without
// reporting is handed out again under a new turn id, and the driver
// refuses the old id from then on, so a late worker cannot act for it.
// The next worker goes on from the stored transcript (tree.Turn). A dead
// driver is the run reaper's case: the next driver hands the node's turn
// out again under a new id.

// Remote hands the turns of one run's nodes to the cluster (tree.Remote).
// Serve its endpoint before the run's turns start.
type Remote struct {
	c     *Cluster
	run   string
	queue string
	turns owner.Turns
	// endpoint and token are the driver's owner endpoint, set by Serve
	// before any turn is handed out.
	endpoint, token string
}

// NewRemote returns the Remote of run, whose turns go to queue.
func (c *Cluster) NewRemote(run, queue string) *Remote {
	return &Remote{c: c, run: run, queue: queue}
}

// Serve serves the run's owner endpoint for its turns on listen (a TCP
// host:port; port 0 picks one), with a new random token, and returns the
// endpoint the workers are told: advertise's host (listen's when
// advertise is "") with the bound port unless advertise names one.
// o is the run's owner options; its Turns and Token are set here.
func (r *Remote) Serve(ctx context.Context, o owner.Options, listen, advertise string) (endpoint string, stop func(), err error) {
	r.token = randomID()
	o.Turns, o.Token = &r.turns, r.token
	bound, stop, err := owner.ServeTCP(ctx, o, listen)
	if err != nil {
		return "", nil, err
	}
	r.endpoint, err = advertised(bound, advertise)
	if err != nil {
		stop()
		return "", nil, err
	}
	return r.endpoint, stop, nil
}

// advertised is the endpoint of a listener bound to bound, as advertise
// says.
func advertised(bound, advertise string) (string, error) {
	_, port, err := net.SplitHostPort(bound)
	if err != nil {
		return "", err
	}
	if advertise == "" {
		return bound, nil
	}
	if h, p, err := net.SplitHostPort(advertise); err == nil {
		if p == "" || p == "0" {
			p = port
		}
		return net.JoinHostPort(h, p), nil
	}
	return net.JoinHostPort(advertise, port), nil
}

// RunTurn implements tree.Remote: it hands the turn out and waits for its
// end, handing it out again when its worker died.
func (r *Remote) RunTurn(ctx context.Context, t tree.RemoteTurn) agent.Result {
	if r.endpoint == "" {
		return agent.Result{Outcome: agent.OutcomeFailed, Err: errors.New("remote turn: the run's endpoint is not served")}
	}
	poll := time.NewTicker(min(r.c.o.Heartbeat, time.Second))
	defer poll.Stop()
	for handed := 0; ; handed++ {
		id := randomID()
		turn, remove := r.turns.Add(id, t)
		job, err := r.handOut(ctx, t, id)
		if err != nil {
			remove()
			if ctx.Err() != nil {
				return agent.Result{Outcome: agent.OutcomeCancelled, Err: context.Cause(ctx)}
			}
			return agent.Result{Outcome: agent.OutcomeFailed, Err: err}
		}
		res, again := r.await(ctx, t, turn, job, poll.C)
		remove()
		if !again {
			return res
		}
		r.c.o.Logger.Warn("cluster: handing a node turn out again", "run", r.run, "node", t.Spec.NodeID, "job", job)
		// The lost worker may have stored the session's first steps.
		t.Spec.Fresh = false
	}
}

// handOut inserts the job of turn id.
func (r *Remote) handOut(ctx context.Context, t tree.RemoteTurn, id string) (int64, error) {
	args := NodeStep{Run: r.run, Node: t.Spec.NodeID, Attempt: t.Attempt, Turn: id, Endpoint: r.endpoint, Token: r.token}
	res, err := r.c.client.Insert(ctx, args, &river.InsertOpts{Queue: TurnQueue(r.queue)})
	if err != nil {
		return 0, fmt.Errorf("hand out the turn of node %d of run %s: %w", args.Node, args.Run, err)
	}
	return res.Job.ID, nil
}

// await waits for the end of turn, handed out as job. again says the
// job's worker went away without ending it: hand it out again.
func (r *Remote) await(ctx context.Context, t tree.RemoteTurn, turn *owner.Turn, job int64, poll <-chan time.Time) (res agent.Result, again bool) {
	for {
		select {
		case end := <-turn.Ended():
			return end.Result(), false
		case <-ctx.Done():
			return r.cancel(ctx, t, turn, job), false
		case <-poll:
		}
		lost, err := r.lost(ctx, t, job)
		if err != nil {
			if ctx.Err() == nil {
				r.c.o.Logger.Warn("cluster: watch a node turn", "run", r.run, "node", t.Spec.NodeID, "err", err)
			}
			continue
		}
		if lost {
			select {
			case end := <-turn.Ended(): // it ended meanwhile
				return end.Result(), false
			default:
				return agent.Result{}, true
			}
		}
	}
}

// lost reports whether job's worker went away: the job ended without
// the turn's end, or it runs and the node lease its claim took is dead
// (expired, or its holder's process gone on this machine), or it has run
// for a TTL without taking one.
// A dead lease is released, so that the next claim need not wait for it
// to expire, and the job is finished (dead.go).
func (r *Remote) lost(ctx context.Context, t tree.RemoteTurn, job int64) (bool, error) {
	var (
		state     string
		attempted *time.Time
		owner     *string
		pid       *int64
		host      *string
		expires   *int64
	)
	err := r.c.st.Pool().QueryRow(ctx, `SELECT j.state, j.attempted_at, l.owner, l.pid, l.host, l.expires_at
		FROM river_job j LEFT JOIN leases l ON l.key = $2 WHERE j.id = $1`,
		job, NodeLeaseKey(r.run, t.Spec.NodeID)).Scan(&state, &attempted, &owner, &pid, &host, &expires)
	if errors.Is(err, pgx.ErrNoRows) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	now := r.c.o.Now()
	switch {
	case finished(state):
		return true, nil
	case state == "running":
		if owner != nil && strings.HasSuffix(*owner, "/"+strconv.FormatInt(job, 10)) {
			l := store.Lease{Owner: store.Owner{ID: *owner, PID: int(*pid), Host: *host}, Expires: time.Unix(0, *expires)}
			if !l.Dead(now) {
				return false, nil
			}
			if err := r.c.st.ReleaseLease(ctx, NodeLeaseKey(r.run, t.Spec.NodeID), l.ID); err != nil {
				return true, err
			}
			why := fmt.Sprintf("arbor: the worker of this job (pid %d on %s) died; its driver handed the turn out again", l.PID, l.Host)
			return true, pgx.BeginFunc(ctx, r.c.st.Pool(), func(tx pgx.Tx) error { return finishJobTx(ctx, tx, job, why) })
		}
		return attempted != nil && now.Sub(*attempted) > r.c.o.LeaseTTL, nil
	}
	return false, nil
}

// cancel cancels job, the turn's, and returns the turn as cancelled
// once its worker ended it, the job ended without it (its worker was
// stopping), or a lease TTL passed.
func (r *Remote) cancel(ctx context.Context, t tree.RemoteTurn, turn *owner.Turn, job int64) agent.Result {
	cctx, done := context.WithTimeout(context.WithoutCancel(ctx), r.c.o.LeaseTTL)
	defer done()
	err := pgx.BeginFunc(cctx, r.c.st.Pool(), func(tx pgx.Tx) error {
		_, err := r.c.CancelNodeTx(cctx, tx, r.run, t.Spec.NodeID)
		return err
	})
	if err != nil {
		r.c.o.Logger.Warn("cluster: cancel a node turn", "run", r.run, "node", t.Spec.NodeID, "err", err)
	}
	poll := time.NewTicker(cancelPoll)
	defer poll.Stop()
	for err == nil {
		select {
		case <-turn.Ended():
			return agent.Result{Outcome: agent.OutcomeCancelled, Err: context.Cause(ctx)}
		case <-cctx.Done():
			return agent.Result{Outcome: agent.OutcomeCancelled, Err: context.Cause(ctx)}
		case <-poll.C:
		}
		var state string
		if r.c.st.Pool().QueryRow(cctx, `SELECT state FROM river_job WHERE id = $1`, job).Scan(&state) == nil && finished(state) {
			break
		}
	}
	return agent.Result{Outcome: agent.OutcomeCancelled, Err: context.Cause(ctx)}
}

// finished reports whether a River job in state will not run again.
func finished(state string) bool {
	return state == "completed" || state == "cancelled" || state == "discarded"
}

// cancelPoll is how often a cancelled turn's job is looked at while its
// end is awaited.
const cancelPoll = 100 * time.Millisecond

func randomID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

var _ tree.Remote = (*Remote)(nil)
