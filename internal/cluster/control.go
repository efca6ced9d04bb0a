package cluster

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// The control channel. CancelNodeTx cancels a node's jobs and notifies
// controlChannel with "<schema>/<lease key>" on the caller's transaction,
// so the notification is delivered when the cancellation commits. Every
// working Cluster listens on one connection of its own and cancels the
// context of its units of that node with ErrNodeCancelled.

const controlChannel = "arbor_control"

// CancelNodeTx cancels, on tx, every unfinished arbor.node_step job of
// the node (River's JobCancelTx: a waiting job never runs, a running one
// is marked) and notifies the process running it. The caller commits the
// node's new state in the same transaction, so the late end of the
// cancelled unit fails its Transition. It returns how many jobs it
// cancelled.
func (c *Cluster) CancelNodeTx(ctx context.Context, tx pgx.Tx, run string, node int64) (int, error) {
	rows, err := tx.Query(ctx, `SELECT id FROM river_job WHERE kind = $1
		AND args->>'run' = $2 AND (args->>'node')::bigint = $3
		AND state NOT IN ('cancelled', 'completed', 'discarded') ORDER BY id`, JobKind, run, node)
	if err != nil {
		return 0, fmt.Errorf("cancel node %d of run %s: %w", node, run, err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return 0, fmt.Errorf("cancel node %d of run %s: %w", node, run, err)
	}
	for _, id := range ids {
		if _, err := c.client.JobCancelTx(ctx, tx, id); err != nil {
			return 0, fmt.Errorf("cancel node %d of run %s: job %d: %w", node, run, id, err)
		}
	}
	if _, err := tx.Exec(ctx, `SELECT pg_notify($1, current_schema() || '/' || $2::text)`,
		controlChannel, NodeLeaseKey(run, node)); err != nil {
		return 0, fmt.Errorf("cancel node %d of run %s: notify: %w", node, run, err)
	}
	return len(ids), nil
}

// listenControl owns the control listener's connection until ctx ends,
// reconnecting after a loss; ready receives the first LISTEN's outcome.
func (c *Cluster) listenControl(ctx context.Context, ready chan<- error) {
	defer c.reqs.Wait() // the requests it started
	first := true
	for ctx.Err() == nil {
		err := c.listenControlOnce(ctx, func() {
			first = false
			ready <- nil
		})
		if first {
			ready <- err
			return
		}
		if ctx.Err() != nil {
			return
		}
		c.o.Logger.Warn("cluster control listener lost its connection", "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

func (c *Cluster) listenControlOnce(ctx context.Context, listening func()) error {
	conn, err := c.st.Pool().Acquire(ctx)
	if err != nil {
		return err
	}
	// The LISTEN state must not go back to the pool.
	pc := conn.Hijack()
	defer pc.Close(context.Background())
	if _, err := pc.Exec(ctx, "LISTEN "+pgx.Identifier{controlChannel}.Sanitize()); err != nil {
		return err
	}
	listening()
	prefix := c.schema + "/"
	for {
		n, err := pc.WaitForNotification(ctx)
		if err != nil {
			if errors.Is(ctx.Err(), context.Canceled) {
				return nil
			}
			return err
		}
		key, ok := strings.CutPrefix(n.Payload, prefix)
		if !ok {
			continue
		}
		if id, ok := strings.CutPrefix(key, "req:"); ok {
			if n, err := strconv.ParseInt(id, 10, 64); err == nil {
				c.reqs.Go(func() { c.serveRequest(ctx, n) })
			}
			continue
		}
		c.units.cancel(key, ErrNodeCancelled)
	}
}
