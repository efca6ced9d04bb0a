package cluster

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/arbor-run/arbor/internal/store"
)

// Dead workers' jobs. River marks a job running when a worker fetches it
// and rescues a job whose worker vanished only after RescueStuckJobsAfter
// (twice the job timeout: 48 h for turns, which may wait a day for a
// person). arbor does not wait for that rescue and does not use it: a
// rescued job would run again (River retries it), and a node's work must
// not be redone behind the lease that decides who does it. arbor knows
// sooner than River that a job's worker is gone — its node lease died
// (expired, or its holder's process is gone on this machine) — and by
// then it has handed the work out again itself: a driver hands a lost
// turn out under a new turn id (Remote.lost), the next driver of a run
// whose driver died hands the node's turn out afresh, and the node
// reaper re-enqueues a dead node's next attempt. The new job resumes from
// the stored transcript. So the dead job is only finished: its state
// becomes cancelled with an error saying why, in the same transaction
// that takes its lease over (claim) or, for one nobody took over, by
// the job sweep (SweepDeadJobs) once its lease expired.

// finishJob finishes a dead worker's running job id as cancelled, with
// the reason among its errors. A job that is not running (it ended, or
// was finished already) is left alone.
const finishJob = `UPDATE river_job SET state = 'cancelled', finalized_at = now(),
	errors = array_append(coalesce(errors, '{}'), jsonb_build_object(
		'at', now(), 'attempt', attempt, 'error', $2::text, 'trace', ''))
	WHERE id = $1 AND state = 'running'`

// finishJobTx finishes job id on tx (finishJob).
func finishJobTx(ctx context.Context, tx pgx.Tx, id int64, why string) error {
	if _, err := tx.Exec(ctx, finishJob, id, why); err != nil {
		return fmt.Errorf("finish the dead job %d: %w", id, err)
	}
	return nil
}

// leaseJob is the job of a node lease's owner id (owner/job, see claim),
// or false when the owner is not a job's (a turn run here: a negative
// number, see RunHere).
func leaseJob(owner string) (int64, bool) {
	i := strings.LastIndexByte(owner, '/')
	if i < 0 {
		return 0, false
	}
	id, err := strconv.ParseInt(owner[i+1:], 10, 64)
	return id, err == nil && id > 0
}

// takeOverTx takes over held, a node lease whose holder is dead
// (store.Lease.Dead), for req on tx, and finishes the dead holder's job.
func (c *Cluster) takeOverTx(ctx context.Context, tx pgx.Tx, req store.LeaseRequest, held store.Lease) (store.Lease, error) {
	req.Replace = held.ID
	l, err := c.st.AcquireLeaseTx(ctx, tx, req)
	if err != nil {
		return store.Lease{}, err
	}
	if job, ok := leaseJob(held.ID); ok {
		next := "a turn run by its run's driver"
		if id, ok := leaseJob(req.ID); ok {
			next = "job " + strconv.FormatInt(id, 10)
		}
		why := fmt.Sprintf("arbor: the worker of this job (pid %d on %s) died; the node's work went on in %s", held.PID, held.Host, next)
		if err := finishJobTx(ctx, tx, job, why); err != nil {
			return store.Lease{}, err
		}
	}
	return l, nil
}

// deadJobs are the running jobs of dead workers that nobody took over,
// oldest first ($1 the lease clock in unix nanoseconds, $2 the lease TTL
// in seconds): a node job that started more than a TTL ago and does not
// hold a live lease of its node (a live job holds one from its claim to
// its end; before the claim it is younger than a TTL), and a drive job
// that started more than twice its own timeout ago (River cancels a live
// one's context at its timeout, and a hand-off then returns at once).
const deadJobs = `SELECT j.id FROM river_job j WHERE j.state = 'running' AND (
	(j.kind = '` + JobKind + `' AND j.attempted_at < now() - make_interval(secs => $2)
		AND NOT EXISTS (SELECT 1 FROM leases l
			WHERE l.key = 'node:' || (j.args->>'run') || '/' || (j.args->>'node')
			AND l.owner LIKE '%/' || j.id::text AND l.expires_at > $1))
	OR (j.kind = '` + DriveKind + `' AND j.attempted_at < now() - make_interval(secs => $3)))
	ORDER BY j.id LIMIT 100`

// lockSweeper makes one job sweep at a time per schema.
const lockSweeper = `SELECT pg_try_advisory_xact_lock(hashtext('arbor.job_sweeper'), hashtext(current_schema()))`

// SweepDeadJobs finishes the running jobs of dead workers that no claim
// took over (deadJobs) and returns their ids; none when another
// process's sweep holds the lock.
func (c *Cluster) SweepDeadJobs(ctx context.Context) ([]int64, error) {
	var out []int64
	err := pgx.BeginFunc(ctx, c.st.Pool(), func(tx pgx.Tx) error {
		out = nil
		var mine bool
		if err := tx.QueryRow(ctx, lockSweeper).Scan(&mine); err != nil {
			return fmt.Errorf("lock: %w", err)
		}
		if !mine {
			return nil
		}
		rows, err := tx.Query(ctx, deadJobs, c.o.Now().UnixNano(), c.o.LeaseTTL.Seconds(), (2 * driveTimeout).Seconds())
		if err != nil {
			return err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return err
		}
		for _, id := range ids {
			if err := finishJobTx(ctx, tx, id, "arbor: the worker of this job died (no live lease); its work was handed out again"); err != nil {
				return err
			}
		}
		out = ids
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sweep dead jobs: %w", err)
	}
	return out, nil
}
