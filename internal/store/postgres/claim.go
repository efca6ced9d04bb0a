package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/arbor-run/arbor/internal/store"
)

// NodeClaim asks ClaimNode for node ID of run RunID: its lease (Lease),
// taken only while the node is in one of States at attempt Attempt.
type NodeClaim struct {
	RunID   string
	ID      int64
	Attempt int
	States  []store.NodeState
	Lease   store.LeaseRequest
}

// ClaimedNode is what ClaimNode found: the node as it was locked, and
// either the lease it took (Taken) or the lease as it found it (Holder:
// the holder that kept the claim from it when the node was claimable;
// its Key is empty when there was no lease, or its holder released it
// before it could be read).
type ClaimedNode struct {
	Node   store.Node
	Taken  bool
	Lease  store.Lease
	Holder store.Lease
}

// claimLease is the lease upsert of ClaimNode: acquireLease's compare-and-
// set, made only when the node ($9, $10) is in one of the states $11 at
// attempt $12. The node row is locked by the batch's first statement, so
// the check reads the row as that statement locked it.
const claimLease = `INSERT INTO leases (` + leaseColumns + `)
	SELECT $1::text, $2::text, $3::bigint, $4::text, $5::text, $6::bigint, $6::bigint, $7::bigint FROM nodes
	WHERE run_id = $9 AND id = $10 AND state = ANY($11::text[]) AND attempts = $12
	` + takeLease

// ClaimNode is a node claim in one round trip that goes through the
// committer, so that claims share the commit (and WAL flush) of the
// writes queued beside them. Its batch locks the node row (SELECT … FOR
// UPDATE, as LockNodeTx), takes the lease with acquireLease's
// compare-and-set when the node is in c.States at c.Attempt, and reads
// the lease row back; the three statements are one transaction, so the
// claim is the same compare-and-set as LockNodeTx followed by
// AcquireLeaseTx in a transaction of the caller's. ErrNotFound when there
// is no such node.
//
// It takes no lease over from a dead holder before its expiry (Replace
// is ignored): that also finishes the holder's job, which is the
// caller's transaction (LockNodeTx, AcquireLeaseTx). A caller that finds
// Holder dead claims again that way.
func (s *Store) ClaimNode(ctx context.Context, c NodeClaim) (ClaimedNode, error) {
	req := c.Lease
	if err := req.Validate(); err != nil {
		return ClaimedNode{}, fmt.Errorf("claim node %d of run %s: %w", c.ID, c.RunID, err)
	}
	now, err := nanos(req.Now, req.Now)
	if err != nil {
		return ClaimedNode{}, fmt.Errorf("claim node %d of run %s: %w", c.ID, c.RunID, err)
	}
	states := make([]string, len(c.States))
	for i, st := range c.States {
		states[i] = string(st)
	}
	var out ClaimedNode
	err = s.group.do(ctx, func(b *pgx.Batch) {
		b.Queue(`SELECT `+nodeColumns+` FROM nodes WHERE run_id = $1 AND id = $2 FOR UPDATE`, c.RunID, c.ID)
		b.Queue(claimLease, req.Key, req.ID, req.PID, req.Host, req.Addr, now, now+req.TTL.Nanoseconds(), "",
			c.RunID, c.ID, states, c.Attempt)
		b.Queue(`SELECT `+leaseColumns+` FROM leases WHERE key = $1`, req.Key)
	}, func(br pgx.BatchResults) error {
		out = ClaimedNode{} // a batch sent again reads again
		n, err := scanNode(br.QueryRow())
		if errors.Is(err, pgx.ErrNoRows) {
			return store.ErrNotFound
		}
		if err != nil {
			return err
		}
		out.Node = n
		l, err := scanLease(br.QueryRow())
		switch {
		case err == nil:
			out.Taken, out.Lease = true, l
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		l, err = scanLease(br.QueryRow())
		switch {
		case err == nil && !out.Taken:
			out.Holder = l
		case err != nil && !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		return nil
	})
	if err != nil {
		return ClaimedNode{}, fmt.Errorf("claim node %d of run %s: %w", c.ID, c.RunID, err)
	}
	return out, nil
}
