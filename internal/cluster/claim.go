package cluster

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/store/postgres"
)

// ErrStale says a job or a unit's end no longer applies: the node moved
// on (another attempt, another state) since the job was enqueued or the
// unit claimed it. The error is a *StaleError.
var ErrStale = errors.New("stale: the node moved on")

// StaleError is the node as found by a claim or a transition that did
// not apply.
type StaleError struct {
	Args     NodeStep
	State    store.NodeState
	Attempts int
}

func (e *StaleError) Error() string {
	return fmt.Sprintf("node %d of run %s: job for attempt %d, node is %s at attempt %d: %v",
		e.Args.Node, e.Args.Run, e.Args.Attempt, e.State, e.Attempts, ErrStale)
}

// Is makes errors.Is(err, ErrStale) hold.
func (e *StaleError) Is(target error) bool { return target == ErrStale }

// Runnable reports whether a node in state s is one a job works on: its
// agent runs (active) or continues with its children's results
// (synthesizing).
func Runnable(s store.NodeState) bool {
	return s == store.StateActive || s == store.StateSynthesizing
}

// Claim is a job's hold on its node: the node as claimed and the node
// lease, which the holder renews while its unit runs.
type Claim struct {
	Args  NodeStep
	JobID int64
	Node  store.Node
	Lease store.Lease
}

// claim is a job's first act: it locks the node, checks that it is
// runnable at the job's attempt (else *StaleError) and takes the node
// lease for this job (else *store.LeaseHeldError of a live holder; a dead
// holder's lease is taken over), all in one transaction. Both the reaper
// and a transition lock the node row first too, so a claim is ordered
// before or after each of them, never between.
//
// The claim goes first through the store's committer (Store.ClaimNode):
// one round trip whose commit it shares with the writes queued beside
// it. Only a claim that finds a dead holder's lease claims again in a
// transaction of its own (claimTx), which takes the lease over and
// finishes the dead holder's job with it.
func (c *Cluster) claim(ctx context.Context, args NodeStep, jobID int64) (Claim, error) {
	owner := c.o.Owner
	// One owner per job: two jobs of one attempt in one process are two
	// claimants, and only one may hold the lease.
	owner.ID += "/" + strconv.FormatInt(jobID, 10)
	req := store.LeaseRequest{Key: args.LeaseKey(), Owner: owner, Now: c.o.Now(), TTL: c.o.LeaseTTL}
	got, err := c.st.ClaimNode(ctx, postgres.NodeClaim{
		RunID: args.Run, ID: args.Node, Attempt: args.Attempt, States: runnable, Lease: req,
	})
	switch {
	case err != nil:
		return Claim{}, err
	case !Runnable(got.Node.State) || got.Node.Attempts != args.Attempt:
		return Claim{}, fmt.Errorf("claim node %d of run %s: %w", args.Node, args.Run,
			&StaleError{Args: args, State: got.Node.State, Attempts: got.Node.Attempts})
	case got.Taken:
		return Claim{Args: args, JobID: jobID, Node: got.Node, Lease: got.Lease}, nil
	case got.Holder.Key != "" && !got.Holder.Dead(req.Now):
		return Claim{}, fmt.Errorf("claim node %d of run %s: acquire lease %s: %w", args.Node, args.Run, req.Key,
			&store.LeaseHeldError{Lease: got.Holder})
	}
	// The holder is dead, or released the lease since.
	return c.claimTx(ctx, args, jobID, req)
}

// runnable are the states of Runnable, for Store.ClaimNode.
var runnable = []store.NodeState{store.StateActive, store.StateSynthesizing}

// claimTx is claim in a transaction of its own, which can take a dead
// holder's lease over and finish its job.
func (c *Cluster) claimTx(ctx context.Context, args NodeStep, jobID int64, req store.LeaseRequest) (Claim, error) {
	cl := Claim{Args: args, JobID: jobID}
	err := pgx.BeginFunc(ctx, c.st.Pool(), func(tx pgx.Tx) error {
		n, err := c.st.LockNodeTx(ctx, tx, args.Run, args.Node)
		if err != nil {
			return err
		}
		if !Runnable(n.State) || n.Attempts != args.Attempt {
			return &StaleError{Args: args, State: n.State, Attempts: n.Attempts}
		}
		l, err := c.st.AcquireLeaseTx(ctx, tx, req)
		// A holder whose process is gone (on this machine: a killed
		// worker or driver) is dead before its lease expires: its lease
		// is taken over and its job finished here, at once.
		var held *store.LeaseHeldError
		if errors.As(err, &held) && held.Dead(req.Now) {
			l, err = c.takeOverTx(ctx, tx, req, held.Lease)
		}
		if err != nil {
			return err
		}
		cl.Node, cl.Lease = n, l
		return nil
	})
	if err != nil {
		return Claim{}, fmt.Errorf("claim node %d of run %s: %w", args.Node, args.Run, err)
	}
	return cl, nil
}

// Transition is the end of a unit (or any change to a claimed node): in
// one transaction it locks the claim's node, checks that it is still
// runnable at the claim's attempt (else *StaleError, and nothing is
// written), lets update change the node and enqueue what the change
// makes ready (EnqueueTx on tx), and writes the node with CommitTx. An
// error of update rolls everything back.
func (c *Cluster) Transition(ctx context.Context, cl Claim, update func(tx pgx.Tx, n *store.Node) error) error {
	err := pgx.BeginFunc(ctx, c.st.Pool(), func(tx pgx.Tx) error {
		n, err := c.st.LockNodeTx(ctx, tx, cl.Args.Run, cl.Args.Node)
		if err != nil {
			return err
		}
		if !Runnable(n.State) || n.Attempts != cl.Args.Attempt {
			return &StaleError{Args: cl.Args, State: n.State, Attempts: n.Attempts}
		}
		if err := update(tx, &n); err != nil {
			return err
		}
		return c.st.CommitTx(ctx, tx, nil, n)
	})
	if err != nil {
		return fmt.Errorf("transition node %d of run %s: %w", cl.Args.Node, cl.Args.Run, err)
	}
	return nil
}
