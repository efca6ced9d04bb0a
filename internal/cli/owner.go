package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/arbor-run/arbor/internal/store"
)

// ownedError explains a run that another live process drives: who owns it
// and how to stop it (or, with a non-empty wait, how to wait for it). It
// exits 1.
func ownedError(what string, held *store.LeaseHeldError, wait string) error {
	stop := fmt.Sprintf("stop it with: kill %d", held.PID)
	if held.Host != store.Hostname() {
		stop = fmt.Sprintf("stop it on %s with: kill %d", held.Host, held.PID)
	}
	if wait != "" {
		stop += ", or wait for it: " + wait
	}
	return &exitError{code: ExitFailure, err: fmt.Errorf(
		"%s is being driven by pid %d on %s since %s (last heartbeat %s); %s",
		what, held.PID, held.Host, held.AcquiredAt.Local().Format(time.DateTime),
		held.Heartbeat.Local().Format(time.TimeOnly), stop)}
}

// waitForLease runs try until it does not fail with store.ErrLeaseHeld,
// polling with a growing pause (up to the lease's usual expiry), and says
// once on diag whom it waits for. It gives up when ctx ends (Ctrl-C).
func waitForLease[T any](ctx context.Context, runID string, diag io.Writer, try func() (T, error)) (T, error) {
	pause := 100 * time.Millisecond
	said := ""
	for {
		v, err := try()
		var held *store.LeaseHeldError
		if !errors.As(err, &held) {
			return v, err
		}
		if said != held.ID {
			said = held.ID
			fmt.Fprintf(diag, "arbor: waiting for pid %d on %s to let go of run %s\n", held.PID, held.Host, runID)
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return v, &exitError{code: ExitInterrupted, err: fmt.Errorf("stopped waiting for run %s: %w", runID, context.Cause(ctx))}
		case <-t.C:
		}
		pause = min(2*pause, 2*time.Second)
	}
}

// shownStatus is the status a reader shows for r: a run stored as running
// whose lease is gone or dead was left by a killed process and is
// interrupted (but for a cluster run, which the workers take on). The row itself is corrected by the next owner's drive.
func shownStatus(ctx context.Context, st store.LeaseStore, r store.Run) store.RunStatus {
	if r.Status != store.RunRunning || r.Queue != "" {
		// A cluster run with no live driver is waiting for a worker,
		// which the run reaper hands it to: it is running still.
		return r.Status
	}
	l, err := st.GetLease(ctx, store.RunLeaseKey(r.ID))
	switch {
	case errors.Is(err, store.ErrNotFound):
		return store.RunInterrupted
	case err != nil:
		return r.Status
	case l.Dead(time.Now()):
		return store.RunInterrupted
	}
	return r.Status
}

// withShownStatus rewrites the status of every run to shownStatus.
func withShownStatus(ctx context.Context, st store.LeaseStore, rs []store.Run) []store.Run {
	for i := range rs {
		rs[i].Status = shownStatus(ctx, st, rs[i])
	}
	return rs
}
