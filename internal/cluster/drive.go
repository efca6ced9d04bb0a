package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/arbor-run/arbor/internal/store"
)

// Runs handed to workers. A cluster run (store.Run.Queue set) is driven
// by one worker at a time, the holder of its run lease, exactly as a run
// is driven by one arbor process (docs/tree.md, "One owner per run"). An
// arbor.run_drive job hands the run to a worker: the job ends as soon as
// the worker holds the run (or found it held or ended), and the drive
// goes on in the worker outside River's job accounting, so River's
// timeouts and rescue never cut a long run. The run lease, renewed by
// the driving engine, is the liveness: the run reaper hands a running
// cluster run whose lease died (expired, or its holder's process gone on
// this machine) and which has no live drive job to a new worker.

// DriveKind is the River kind of a run's hand-off to a worker.
const DriveKind = "arbor.run_drive"

// RunDrive is the arguments of an arbor.run_drive job.
type RunDrive struct {
	Run string `json:"run"`
}

// Kind implements river.JobArgs.
func (RunDrive) Kind() string { return DriveKind }

// Driver takes runs on in a worker process.
type Driver interface {
	// Take starts driving run in the background and returns once this
	// process holds it (nil), or with why it does not: ErrBusy (no free
	// slot here), ErrNoWorkspace (the run's workspace is not here), a
	// *store.LeaseHeldError (another live process drives it), or another
	// error. A run that has ended returns nil (the drive finds it ended).
	Take(ctx context.Context, run string) error
}

// Reasons Take gives for not taking a run that another worker may take:
// the job is snoozed, so River offers it again.
var (
	ErrBusy        = errors.New("worker is driving as many runs as it may")
	ErrNoWorkspace = errors.New("the run's workspace is not served by this worker")
)

// Snoozes of a drive job a worker could not take.
const (
	busySnooze      = time.Second
	workspaceSnooze = 5 * time.Second
)

// driveWorker is River's worker of arbor.run_drive.
type driveWorker struct {
	river.WorkerDefaults[RunDrive]
	c *Cluster
}

// Work hands the run to the Driver.
func (w *driveWorker) Work(ctx context.Context, job *river.Job[RunDrive]) error {
	err := w.c.o.Driver.Take(ctx, job.Args.Run)
	switch {
	case err == nil:
		// Requests sent while no process drove the run.
		if err := w.c.ServeOpen(ctx, job.Args.Run); err != nil {
			w.c.o.Logger.Warn("cluster: open control requests", "run", job.Args.Run, "err", err)
		}
		return nil
	case errors.Is(err, store.ErrLeaseHeld), errors.Is(err, store.ErrNotFound):
		// Ours now, driven elsewhere (the reaper hands it on if that
		// process dies), or gone.
		return nil
	case errors.Is(err, ErrBusy):
		return river.JobSnooze(busySnooze)
	case errors.Is(err, ErrNoWorkspace):
		w.c.o.Logger.Warn("cluster: run's workspace not served here", "run", job.Args.Run, "err", err)
		return river.JobSnooze(workspaceSnooze)
	default:
		return fmt.Errorf("take run %s: %w", job.Args.Run, err)
	}
}

// Timeout bounds a hand-off, not the drive (which goes on after Work).
func (w *driveWorker) Timeout(*river.Job[RunDrive]) time.Duration { return driveTimeout }

// driveTimeout bounds a hand-off's job.
const driveTimeout = time.Minute

// Submit stores a new cluster run and its root node and enqueues the
// run's hand-off on the run's queue, in one transaction: the run exists
// with its job or not at all.
func (c *Cluster) Submit(ctx context.Context, r store.Run, root store.Node) error {
	if r.Queue == "" {
		return fmt.Errorf("submit run %s: no queue: %w", r.ID, store.ErrInvalid)
	}
	err := pgx.BeginFunc(ctx, c.st.Pool(), func(tx pgx.Tx) error {
		if err := c.st.CreateRunTx(ctx, tx, r); err != nil {
			return err
		}
		if err := c.st.CommitTx(ctx, tx, nil, root); err != nil {
			return err
		}
		return c.EnqueueDriveTx(ctx, tx, r.ID, r.Queue)
	})
	if err != nil {
		return fmt.Errorf("submit run %s: %w", r.ID, err)
	}
	return nil
}

// Requeue hands a cluster run that stopped (interrupted by a local
// drive, out of budget) back to the workers: r, stored as running, and
// its hand-off in one transaction.
func (c *Cluster) Requeue(ctx context.Context, r store.Run) error {
	if r.Queue == "" {
		return fmt.Errorf("requeue run %s: not a cluster run: %w", r.ID, store.ErrInvalid)
	}
	r.Status, r.Error = store.RunRunning, ""
	err := pgx.BeginFunc(ctx, c.st.Pool(), func(tx pgx.Tx) error {
		if err := c.st.CommitTx(ctx, tx, &r); err != nil {
			return err
		}
		return c.EnqueueDriveTx(ctx, tx, r.ID, r.Queue)
	})
	if err != nil {
		return fmt.Errorf("requeue run %s: %w", r.ID, err)
	}
	return nil
}

// EnqueueDriveTx inserts the hand-off of run on queue on tx.
func (c *Cluster) EnqueueDriveTx(ctx context.Context, tx pgx.Tx, run, queue string) error {
	if _, err := c.client.InsertTx(ctx, tx, RunDrive{Run: run}, &river.InsertOpts{Queue: queue}); err != nil {
		return fmt.Errorf("enqueue run %s on %s: %w", run, queue, err)
	}
	return nil
}

// EnqueueDrive inserts the hand-off of run on queue: a worker that let a
// run go (it is stopping) offers it at once instead of waiting for the
// reaper.
func (c *Cluster) EnqueueDrive(ctx context.Context, run, queue string) error {
	return pgx.BeginFunc(ctx, c.st.Pool(), func(tx pgx.Tx) error { return c.EnqueueDriveTx(ctx, tx, run, queue) })
}

// The run reaper's view of a run r's drive jobs: one waiting to run
// (driveJobWaiting), or one running that started within a TTL
// (driveJobStarting; ttl names the parameter holding the TTL in
// seconds). A running job counts only while the run has no lease: a
// hand-off that got as far as the lease is over (River may not have
// marked it completed yet when its worker died), and one that did not
// is live for a TTL.
const driveJobWaiting = `EXISTS (SELECT 1 FROM river_job j WHERE j.kind = '` + DriveKind + `'
	AND j.args->>'run' = r.id AND j.state IN ('available', 'scheduled', 'retryable', 'pending'))`

func driveJobStarting(ttl string) string {
	return `EXISTS (SELECT 1 FROM river_job j WHERE j.kind = '` + DriveKind + `'
		AND j.args->>'run' = r.id AND j.state = 'running'
		AND j.attempted_at > now() - make_interval(secs => ` + ttl + `))`
}

var (
	// orphanRuns are the running cluster runs with no waiting drive job
	// whose run lease may be dead — none, expired ($2, the lease clock in
	// unix nanoseconds), or held on this machine ($3, the host), where a
	// holder whose process is gone is dead before its lease expires (Go
	// decides: store.Lease.Dead) — with the lease and whether a drive job
	// is starting ($1 the TTL). Runs driven from other machines are not
	// candidates, so however many there are, they never crowd the dead
	// ones out of the limit; those with no lease or an expired one come
	// first.
	orphanRuns = `SELECT r.id, r.queue, l.owner, l.pid, l.host, l.expires_at, ` + driveJobStarting("$1") + `
		FROM runs r LEFT JOIN leases l ON l.key = 'run:' || r.id
		WHERE r.queue <> '' AND r.status = 'running' AND NOT ` + driveJobWaiting + `
		AND (l.owner IS NULL OR l.expires_at <= $2 OR l.host = $3)
		ORDER BY (l.owner IS NOT NULL AND l.expires_at > $2), r.created_at
		LIMIT ` + orphanLimit
	// stillOrphan checks a candidate again under its row lock ($1 the
	// lease clock in unix nanoseconds, $2 the TTL, $3 the run, $4 the
	// dead holder or null): a drive job, or a live lease of another
	// owner, or (with no lease at all) a starting hand-off that appeared
	// since the candidates were read wins.
	stillOrphan = `SELECT NOT ` + driveJobWaiting + `
		AND NOT EXISTS (SELECT 1 FROM leases l WHERE l.key = 'run:' || r.id
			AND l.expires_at > $1 AND l.owner IS DISTINCT FROM $4::text)
		AND (EXISTS (SELECT 1 FROM leases l WHERE l.key = 'run:' || r.id) OR NOT ` + driveJobStarting("$2") + `)
		FROM runs r WHERE r.id = $3 AND r.queue <> '' AND r.status = 'running'
		FOR UPDATE OF r`
)

// ReapRuns runs one pass of the run reaper: every running cluster run
// whose driver died and that has no live drive job gets a new drive job
// on its queue. It returns the runs handed on; none when another
// process's pass holds the reaper lock.
func (c *Cluster) ReapRuns(ctx context.Context) ([]string, error) {
	var out []string
	err := pgx.BeginFunc(ctx, c.st.Pool(), func(tx pgx.Tx) error {
		out = nil
		var mine bool
		if err := tx.QueryRow(ctx, lockRunReaper).Scan(&mine); err != nil {
			return fmt.Errorf("lock: %w", err)
		}
		if !mine {
			return nil
		}
		now := c.o.Now()
		ttl := c.o.LeaseTTL.Seconds()
		// Carried-out control requests are kept a day, for people.
		if _, err := tx.Exec(ctx, `DELETE FROM control_requests WHERE done_at < $1`, now.Add(-requestsKept).UnixNano()); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, orphanRuns, ttl, now.UnixNano(), store.Hostname())
		if err != nil {
			return err
		}
		type cand struct {
			id, queue string
			lease     *store.Lease
			starting  bool // a drive job started within a TTL
		}
		cands, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (cand, error) {
			var (
				c          cand
				owner      *string
				pid        *int64
				host       *string
				expiresAtN *int64
			)
			if err := row.Scan(&c.id, &c.queue, &owner, &pid, &host, &expiresAtN, &c.starting); err != nil {
				return c, err
			}
			if owner != nil {
				c.lease = &store.Lease{Owner: store.Owner{ID: *owner, PID: int(*pid), Host: *host}, Expires: time.Unix(0, *expiresAtN)}
			}
			return c, nil
		})
		if err != nil {
			return err
		}
		for _, cd := range cands {
			switch {
			case cd.lease != nil && !cd.lease.Dead(now):
				continue // driven
			case cd.lease == nil && cd.starting:
				continue // being handed off
			}
			// A dead holder's lease counts as gone: its owner is passed
			// so stillOrphan ignores it.
			var deadOwner *string
			if cd.lease != nil {
				deadOwner = &cd.lease.ID
			}
			var orphan bool
			err := tx.QueryRow(ctx, stillOrphan, now.UnixNano(), ttl, cd.id, deadOwner).Scan(&orphan)
			if errors.Is(err, pgx.ErrNoRows) {
				continue
			}
			if err != nil {
				return err
			}
			if !orphan {
				continue
			}
			if err := c.EnqueueDriveTx(ctx, tx, cd.id, cd.queue); err != nil {
				return err
			}
			out = append(out, cd.id)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reap orphan runs: %w", err)
	}
	return out, nil
}

// orphanLimit bounds the candidates of one run-reaper pass (a string:
// it is spliced into orphanRuns).
const orphanLimit = "100"

// requestsKept is how long the run reaper keeps carried-out control
// requests.
const requestsKept = 24 * time.Hour

// lockRunReaper makes one run-reaper pass at a time per schema.
const lockRunReaper = `SELECT pg_try_advisory_xact_lock(hashtext('arbor.run_reaper'), hashtext(current_schema()))`
