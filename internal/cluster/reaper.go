package cluster

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// The reaper. A node is dead when it is runnable, the cluster dispatches
// it (it has had an arbor.node_step job), its lease is absent or expired,
// and no live job of its current attempt exists: none waiting to run
// (available, scheduled, retryable, pending) and none that started
// within one lease TTL (a job between River's fetch and its claim). A
// job that is "running" longer without a live lease belongs to a dead
// worker: River rescues it only after RescueStuckJobsAfter, and then it
// is stale.

// lockReaper makes one reaper pass at a time per schema, across every
// process; the others skip their pass.
const lockReaper = `SELECT pg_try_advisory_xact_lock(hashtext('arbor.reaper'), hashtext(current_schema()))`

// The conditions on node n ($1 the lease clock in unix nanoseconds, $2
// the lease TTL in seconds).
const (
	dispatched = `EXISTS (SELECT 1 FROM river_job j WHERE j.kind = '` + JobKind + `'
		AND j.args->>'run' = n.run_id AND (j.args->>'node')::bigint = n.id)`
	leaseLive = `EXISTS (SELECT 1 FROM leases l
		WHERE l.key = 'node:' || n.run_id || '/' || n.id::text AND l.expires_at > $1)`
	jobLive = `EXISTS (SELECT 1 FROM river_job j WHERE j.kind = '` + JobKind + `'
		AND j.args->>'run' = n.run_id AND (j.args->>'node')::bigint = n.id
		AND (j.args->>'attempt')::bigint = n.attempts
		AND (j.state IN ('available', 'scheduled', 'retryable', 'pending')
			OR (j.state = 'running' AND j.attempted_at > now() - make_interval(secs => $2))))`
	deadNodes = `SELECT n.run_id, n.id, n.attempts FROM nodes n
		WHERE n.state IN ('active', 'synthesizing') AND ` + dispatched + `
		AND NOT ` + leaseLive + ` AND NOT ` + jobLive + `
		ORDER BY n.run_id, n.id LIMIT 100`
	stillDead = `SELECT NOT ` + leaseLive + ` AND NOT ` + jobLive + `
		FROM nodes n WHERE n.run_id = $3 AND n.id = $4`
)

// Reap runs one reaper pass: every dead node gets attempts+1 and a job
// for that attempt, its expired lease deleted (so a late heartbeat of the
// old holder fails), all in one transaction. It returns the re-enqueued
// jobs; none when another process's pass holds the reaper lock.
func (c *Cluster) Reap(ctx context.Context) ([]NodeStep, error) {
	var out []NodeStep
	err := pgx.BeginFunc(ctx, c.st.Pool(), func(tx pgx.Tx) error {
		out = nil
		var mine bool
		if err := tx.QueryRow(ctx, lockReaper).Scan(&mine); err != nil {
			return fmt.Errorf("lock: %w", err)
		}
		if !mine {
			return nil
		}
		now := c.o.Now()
		ttl := c.o.LeaseTTL.Seconds()
		cands, err := c.deadNodes(ctx, tx, now, ttl)
		if err != nil {
			return err
		}
		for _, cand := range cands {
			args, ok, err := c.reapOne(ctx, tx, cand, now, ttl)
			if err != nil {
				return err
			}
			if ok {
				out = append(out, args)
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reap dead nodes: %w", err)
	}
	return out, nil
}

func (c *Cluster) deadNodes(ctx context.Context, tx pgx.Tx, now time.Time, ttl float64) ([]NodeStep, error) {
	rows, err := tx.Query(ctx, deadNodes, now.UnixNano(), ttl)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (NodeStep, error) {
		var a NodeStep
		err := r.Scan(&a.Run, &a.Node, &a.Attempt)
		return a, err
	})
}

// reapOne re-enqueues one candidate after locking its node and checking
// again with a fresh snapshot: a claim or a transition that committed
// since the candidates were read wins.
func (c *Cluster) reapOne(ctx context.Context, tx pgx.Tx, cand NodeStep, now time.Time, ttl float64) (NodeStep, bool, error) {
	n, err := c.st.LockNodeTx(ctx, tx, cand.Run, cand.Node)
	if err != nil {
		return NodeStep{}, false, err
	}
	if !Runnable(n.State) || n.Attempts != cand.Attempt {
		return NodeStep{}, false, nil
	}
	var dead bool
	if err := tx.QueryRow(ctx, stillDead, now.UnixNano(), ttl, cand.Run, cand.Node).Scan(&dead); err != nil {
		return NodeStep{}, false, err
	}
	if !dead {
		return NodeStep{}, false, nil
	}
	if _, err := c.st.ExpireLeaseTx(ctx, tx, cand.LeaseKey(), now); err != nil {
		return NodeStep{}, false, err
	}
	n.Attempts++
	if err := c.st.CommitTx(ctx, tx, nil, n); err != nil {
		return NodeStep{}, false, err
	}
	args := NodeStep{Run: n.RunID, Node: n.ID, Attempt: n.Attempts}
	if _, err := c.EnqueueTx(ctx, tx, args); err != nil {
		return NodeStep{}, false, err
	}
	return args, true, nil
}

// reapLoop runs a pass of the reapers this process runs and of the job
// sweep every ReapEvery until ctx ends. A failed pass is
// retried on the next tick; it changed nothing.
func (c *Cluster) reapLoop(ctx context.Context) {
	t := time.NewTicker(c.o.ReapEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if c.o.Unit != nil && !c.o.Remote {
			if _, err := c.Reap(ctx); err != nil && ctx.Err() == nil {
				c.o.Logger.Warn("cluster reaper", "err", err)
			}
		}
		if c.o.Driver != nil {
			if _, err := c.ReapRuns(ctx); err != nil && ctx.Err() == nil {
				c.o.Logger.Warn("cluster run reaper", "err", err)
			}
		}
		if _, err := c.SweepDeadJobs(ctx); err != nil && ctx.Err() == nil {
			c.o.Logger.Warn("cluster job sweep", "err", err)
		}
	}
}
