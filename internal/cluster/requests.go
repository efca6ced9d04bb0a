package cluster

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/store/postgres"
)

// Control requests reach the process driving a cluster run from any
// machine: Request stores the request (table control_requests) and
// notifies arbor_control with "<schema>/req:<id>" in one transaction;
// every working Cluster hears it and asks its Controller, and the one
// driving the run carries it out and records the outcome, which Request
// waits for. A request no driver took (the run between two workers) stays
// open and is carried out by the worker that takes the run next, right
// after it took it.

// Control request operations.
const (
	OpAnswer = "answer" // Text answers ask node Node
	OpStop   = "stop"
	OpPause  = "pause"
	OpResume = "resume"
)

// ControlRequest asks the driver of Run to act on node Node.
type ControlRequest struct {
	ID   int64
	Run  string
	Node int64
	Op   string
	Text string
}

// Controller carries out control requests in a worker process.
type Controller interface {
	// Control carries out req if this process drives req.Run and returns
	// the node's state after it; ErrNotDriven when it does not drive it.
	Control(ctx context.Context, req ControlRequest) (state string, err error)
}

var (
	// ErrNotDriven: this process does not drive the request's run.
	ErrNotDriven = errors.New("run not driven by this process")
	// ErrNotDelivered: no driver carried the request out before the
	// caller stopped waiting; it stays open for the run's next driver.
	ErrNotDelivered = errors.New("no worker carried the request out yet")
)

// Driven reports whether run is a cluster run that a live process drives
// now: the runs that front ends steer with control requests.
func Driven(ctx context.Context, st *postgres.Store, run string) bool {
	r, err := st.GetRun(ctx, run)
	if err != nil || r.Queue == "" {
		return false
	}
	l, err := st.GetLease(ctx, store.RunLeaseKey(run))
	return err == nil && !l.Dead(time.Now())
}

// SendIfDriven sends req to the worker driving req.Run when s is a
// PostgreSQL store and a live process drives the run (handled is false
// otherwise: the caller takes its local path). The worker may be on any
// machine. queued reports a request no worker carried out in time: it
// stays open, and the worker that takes the run next carries it out.
func SendIfDriven(ctx context.Context, s store.Store, req ControlRequest) (state string, handled, queued bool, err error) {
	st, ok := s.(*postgres.Store)
	if !ok || !Driven(ctx, st, req.Run) {
		return "", false, false, nil
	}
	state, queued, err = Send(ctx, st, req)
	return state, true, queued, err
}

// Send is Request waiting at most RequestWait for the outcome; queued
// reports a request no driver carried out by then (it stays open for the
// run's next worker), which is no error.
func Send(ctx context.Context, st *postgres.Store, req ControlRequest) (state string, queued bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, RequestWait)
	defer cancel()
	state, err = Request(ctx, st, req)
	if errors.Is(err, ErrNotDelivered) {
		return "", true, nil
	}
	return state, false, err
}

// RequestWait is how long Send waits for a driver to carry a request out.
const RequestWait = 10 * time.Second

// RequestError is a request's failure as its driver recorded it.
type RequestError struct{ Message string }

func (e *RequestError) Error() string { return e.Message }

// Request stores req on st, notifies the workers and waits until the
// run's driver carried it out (its state), failed it (*RequestError), the
// run ended before any driver carried it out (*RequestError: it is closed,
// since no worker takes an ended run), or ctx ended (ErrNotDelivered: the
// request stays open). It needs no
// Cluster: any process with the store sends requests.
func Request(ctx context.Context, st *postgres.Store, req ControlRequest) (string, error) {
	var id int64
	err := pgx.BeginFunc(ctx, st.Pool(), func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `INSERT INTO control_requests (run_id, node_id, op, text, created_at)
			VALUES ($1, $2, $3, $4, $5) RETURNING id`, req.Run, req.Node, req.Op, req.Text, time.Now().UnixNano()).Scan(&id); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `SELECT pg_notify($1, current_schema() || '/req:' || $2::text)`, controlChannel, strconv.FormatInt(id, 10))
		return err
	})
	if err != nil {
		return "", fmt.Errorf("%s #%d of %s: %w", req.Op, req.Node, req.Run, err)
	}
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		var (
			done            bool
			state, msg, run string
			runStatus       *string
		)
		err := st.Pool().QueryRow(ctx, `SELECT r.done_at IS NOT NULL, r.state, r.error, r.run_id, runs.status
			FROM control_requests r LEFT JOIN runs ON runs.id = r.run_id WHERE r.id = $1`, id).Scan(&done, &state, &msg, &run, &runStatus)
		switch {
		case err != nil && ctx.Err() != nil:
			return "", fmt.Errorf("%s #%d of %s: %w", req.Op, req.Node, req.Run, ErrNotDelivered)
		case err != nil:
			return "", fmt.Errorf("%s #%d of %s: %w", req.Op, req.Node, req.Run, err)
		case done && msg != "":
			return "", &RequestError{Message: msg}
		case done:
			return state, nil
		case runStatus != nil && store.RunStatus(*runStatus).Terminal():
			// The run ended before its driver carried the request out: no
			// worker will take it any more. The request is closed as
			// refused, unless its driver recorded an outcome meanwhile.
			why := fmt.Sprintf("run %s has ended (%s): nothing drives it", run, *runStatus)
			if _, err := st.Pool().Exec(ctx, `UPDATE control_requests SET done_at = $2, error = $3 WHERE id = $1 AND done_at IS NULL`,
				id, time.Now().UnixNano(), why); err != nil {
				return "", fmt.Errorf("%s #%d of %s: %w", req.Op, req.Node, req.Run, err)
			}
			continue // its outcome, ours or the driver's
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("%s #%d of %s: %w", req.Op, req.Node, req.Run, ErrNotDelivered)
		case <-t.C:
		}
	}
}

// serveRequest carries out request id if this process drives its run.
func (c *Cluster) serveRequest(ctx context.Context, id int64) {
	var req ControlRequest
	err := c.st.Pool().QueryRow(ctx, `SELECT id, run_id, node_id, op, text FROM control_requests
		WHERE id = $1 AND done_at IS NULL`, id).Scan(&req.ID, &req.Run, &req.Node, &req.Op, &req.Text)
	if err != nil {
		return // done already, or gone
	}
	c.carryOut(ctx, req)
}

// ServeOpen carries out the open requests of run, oldest first: the
// worker that just took the run calls it (the drive worker does, after
// Take).
func (c *Cluster) ServeOpen(ctx context.Context, run string) error {
	rows, err := c.st.Pool().Query(ctx, `SELECT id, run_id, node_id, op, text FROM control_requests
		WHERE run_id = $1 AND done_at IS NULL ORDER BY id`, run)
	if err != nil {
		return fmt.Errorf("open requests of run %s: %w", run, err)
	}
	reqs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ControlRequest, error) {
		var q ControlRequest
		err := r.Scan(&q.ID, &q.Run, &q.Node, &q.Op, &q.Text)
		return q, err
	})
	if err != nil {
		return fmt.Errorf("open requests of run %s: %w", run, err)
	}
	for _, q := range reqs {
		c.carryOut(ctx, q)
	}
	return nil
}

// carryOut asks the Controller and records the outcome, unless this
// process does not drive the run (the request stays open for the one
// that does). A request is recorded once: the first outcome wins.
func (c *Cluster) carryOut(ctx context.Context, req ControlRequest) {
	if c.o.Controller == nil {
		return
	}
	state, err := c.o.Controller.Control(ctx, req)
	if errors.Is(err, ErrNotDriven) {
		return
	}
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	if _, uerr := c.st.Pool().Exec(context.WithoutCancel(ctx), `UPDATE control_requests SET done_at = $2, state = $3, error = $4
		WHERE id = $1 AND done_at IS NULL`, req.ID, time.Now().UnixNano(), state, msg); uerr != nil {
		c.o.Logger.Warn("cluster: record a control request's outcome", "id", req.ID, "err", uerr)
	}
}
