package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"
)

// How a run looks to a reader (arbor runs, arbor tree, the web view):
// the stored row corrected by what its lease says.

// ShownStore is what ShownStatus reads: a run's lease and its root.
type ShownStore interface {
	LeaseStore
	GetNode(ctx context.Context, runID string, id int64) (Node, error)
}

// ShownStatus is the status a reader shows for r: a run stored as running
// whose lease is gone or dead was left by a killed process and is
// interrupted (but for a cluster run, which the workers take on). The row
// itself is corrected by the next owner's drive. A headless session's
// run that no process holds is idle, not interrupted: its conversation
// ended with its process, or waits for the next (Hosted).
func ShownStatus(ctx context.Context, st ShownStore, r Run) RunStatus {
	s := leaseStatus(ctx, st, r)
	if s == RunInterrupted && Hosted(ctx, st, r.ID) {
		return RunIdle
	}
	return s
}

// Hosted reports whether run runID is a headless session's: its root is
// a host node, which a front end drives.
func Hosted(ctx context.Context, st ShownStore, runID string) bool {
	root, err := st.GetNode(ctx, runID, 1)
	return err == nil && root.Kind == KindHost
}

func leaseStatus(ctx context.Context, st LeaseStore, r Run) RunStatus {
	if r.Status != RunRunning || r.Queue != "" {
		// A cluster run with no live driver is waiting for a worker,
		// which the run reaper hands it to: it is running still.
		return r.Status
	}
	l, err := st.GetLease(ctx, RunLeaseKey(r.ID))
	switch {
	case errors.Is(err, ErrNotFound):
		return RunInterrupted
	case err != nil:
		return r.Status
	case l.Dead(time.Now()):
		return RunInterrupted
	}
	return r.Status
}

// WithShownStatus rewrites the status of every run to ShownStatus.
func WithShownStatus(ctx context.Context, st ShownStore, rs []Run) []Run {
	for i := range rs {
		rs[i].Status = ShownStatus(ctx, st, rs[i])
	}
	return rs
}

// DescribeDriver says who drives cluster run r, for a reader (arbor
// tree's first line): its queue, and the worker holding it while one does;
// "" for a run of no queue.
func DescribeDriver(ctx context.Context, st LeaseStore, r Run) string {
	if r.Queue == "" {
		return ""
	}
	out := ", queue " + r.Queue
	if r.Status != RunRunning {
		return out
	}
	l, err := st.GetLease(ctx, RunLeaseKey(r.ID))
	if err != nil || l.Dead(time.Now()) {
		return out + ", waiting for a worker"
	}
	return fmt.Sprintf("%s, driven by pid %d on %s", out, l.PID, l.Host)
}

// LatestConversation is the most recently used session that is a
// conversation (the last one written to, not the last one created; a
// tree node's session is not one) held in workspace, for --continue, which
// like Claude Code's continues the current directory's conversation, not
// another project's; ErrNotFound when there is none. The store finds it
// among all sessions: before, only the newest thousand were looked at,
// and after a run of a thousand nodes their sessions were all of them.
func LatestConversation(ctx context.Context, st Store, workspace string) (Session, error) {
	workspace = filepath.Clean(workspace)
	s, err := st.LatestConversation(ctx, workspace)
	if errors.Is(err, ErrNotFound) {
		return Session{}, fmt.Errorf("no conversation in %s to continue: %w", workspace, ErrNotFound)
	}
	return s, err
}

// RunIDError is LookupSession's error for an id that names a run, not a
// session (arbor sessions show RUNID): it says what the run's sessions
// are. It unwraps to ErrNotFound.
type RunIDError struct {
	Run string
	// Sessions are those of the run's nodes, by node id; empty when no
	// node has started.
	Sessions []string
}

func (e *RunIDError) Error() string {
	msg := fmt.Sprintf("%s is a run, not a session: the sessions of a run's nodes are named %s.N (%s.1 for its root)", e.Run, e.Run, e.Run)
	if len(e.Sessions) > 0 {
		shown := e.Sessions[:min(len(e.Sessions), 5)]
		msg += "; this run's are " + strings.Join(shown, ", ")
		if len(shown) < len(e.Sessions) {
			msg += fmt.Sprintf(" and %d more", len(e.Sessions)-len(shown))
		}
	}
	return msg + " (arbor tree " + e.Run + " shows its nodes)"
}

func (e *RunIDError) Unwrap() error { return ErrNotFound }

// LookupSession is st.GetSession for a reader who typed id: when no
// session has it but a run does, the error is a *RunIDError naming the
// run's sessions.
func LookupSession(ctx context.Context, st Store, id string) (Session, error) {
	s, err := st.GetSession(ctx, id)
	if !errors.Is(err, ErrNotFound) {
		return s, err
	}
	if _, rerr := st.GetRun(ctx, id); rerr != nil {
		return s, err
	}
	nodes, nerr := st.Nodes(ctx, id)
	if nerr != nil {
		return s, err
	}
	re := &RunIDError{Run: id}
	for _, n := range nodes {
		if n.SessionID != "" {
			re.Sessions = append(re.Sessions, n.SessionID)
		}
	}
	return Session{}, re
}

// ErrStoppedWaiting is WaitForLease's end when its context ended.
var ErrStoppedWaiting = errors.New("stopped waiting")

// WaitForLease runs try until it does not fail with a *LeaseHeldError,
// polling with a growing pause (up to the lease's usual expiry), and says
// once on diag whom it waits for. It gives up when ctx ends (Ctrl-C),
// with an error that wraps ErrStoppedWaiting.
func WaitForLease[T any](ctx context.Context, runID string, diag io.Writer, try func() (T, error)) (T, error) {
	pause := 100 * time.Millisecond
	said := ""
	for {
		v, err := try()
		var held *LeaseHeldError
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
			return v, fmt.Errorf("%w for run %s: %w", ErrStoppedWaiting, runID, context.Cause(ctx))
		case <-t.C:
		}
		pause = min(2*pause, 2*time.Second)
	}
}
