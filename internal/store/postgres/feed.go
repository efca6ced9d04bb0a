package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// The change feed.
//
// Every Commit notifies channel feedChannel with "<schema>/<run id>" for
// each run it wrote, inside its transaction, so PostgreSQL delivers the
// notification exactly when the commit becomes visible, to every process
// listening on the database. A Store listens on one connection of its own
// (from the first RunChanges on) and wakes the subscribers of that run.
//
// A wake-up says only "read the run again": subscribers re-read the store,
// so wake-ups coalesce (one pending per subscriber) and the listener never
// waits for a subscriber. When the listening connection is lost, every
// subscriber is woken (a notification may have been missed meanwhile) and
// the listener reconnects.

const feedChannel = "arbor_changes"

// notifyRun is queued in a Commit's batch once per run it writes.
const notifyRun = `SELECT pg_notify('` + feedChannel + `', current_schema() || '/' || $1::text)`

// feed is the listener of one Store. mu guards subs and started.
type feed struct {
	mu      sync.Mutex
	subs    map[string]map[chan struct{}]struct{} // by run id
	started bool
	ready   chan error // receives the first LISTEN's outcome
	cancel  context.CancelFunc
	done    chan struct{} // closed when the listener goroutine returned
}

// RunChanges returns a channel that receives a value after each commit
// that wrote run runID, in this process or any other on the database, and
// is closed when ctx ends. Values coalesce: one pending wake-up stands for
// any number of commits, so a receiver re-reads the run. When it returns,
// the listener is listening: no later commit is missed.
func (s *Store) RunChanges(ctx context.Context, runID string) (<-chan struct{}, error) {
	if err := s.startFeed(); err != nil {
		return nil, fmt.Errorf("watch run %s: %w", runID, err)
	}
	f := &s.feed
	ch := make(chan struct{}, 1)
	f.mu.Lock()
	if f.subs[runID] == nil {
		f.subs[runID] = map[chan struct{}]struct{}{}
	}
	f.subs[runID][ch] = struct{}{}
	f.mu.Unlock()
	context.AfterFunc(ctx, func() {
		f.mu.Lock()
		defer f.mu.Unlock()
		delete(f.subs[runID], ch)
		if len(f.subs[runID]) == 0 {
			delete(f.subs, runID)
		}
		close(ch)
	})
	return ch, nil
}

// startFeed starts the listener once and waits for its first LISTEN.
func (s *Store) startFeed() error {
	f := &s.feed
	f.mu.Lock()
	if !f.started {
		f.started = true
		f.subs = map[string]map[chan struct{}]struct{}{}
		f.ready = make(chan error, 1)
		f.done = make(chan struct{})
		ctx, cancel := context.WithCancel(context.Background())
		f.cancel = cancel
		go s.listen(ctx)
	}
	ready := f.ready
	f.mu.Unlock()
	// The first caller takes the outcome and puts it back for the others.
	err := <-ready
	ready <- err
	return err
}

// stopFeed stops the listener, if it runs, and waits for it.
func (s *Store) stopFeed() {
	f := &s.feed
	f.mu.Lock()
	started := f.started
	f.mu.Unlock()
	if started {
		f.cancel()
		<-f.done
	}
}

// listen owns the listening connection until ctx ends, reconnecting after
// a loss. The first connection's outcome goes to f.ready.
func (s *Store) listen(ctx context.Context) {
	f := &s.feed
	defer close(f.done)
	first := true
	for ctx.Err() == nil {
		err := s.listenOnce(ctx, func() {
			if first {
				first = false
				f.ready <- nil
			}
		})
		if first {
			first = false
			f.ready <- err
			return
		}
		if ctx.Err() != nil {
			return
		}
		f.wakeAll() // notifications may have been missed while it was down
		select {
		case <-ctx.Done():
		case <-time.After(time.Second): // then reconnect
		}
	}
}

// listenOnce listens on one pooled connection and dispatches
// notifications until the connection fails or ctx ends; listening is
// called once LISTEN took effect.
func (s *Store) listenOnce(ctx context.Context, listening func()) error {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	// The connection's LISTEN state must not go back to the pool.
	pc := conn.Hijack()
	defer pc.Close(context.Background())
	var schema string
	if err := pc.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		return err
	}
	if _, err := pc.Exec(ctx, "LISTEN "+pgx.Identifier{feedChannel}.Sanitize()); err != nil {
		return err
	}
	listening()
	prefix := schema + "/"
	for {
		n, err := pc.WaitForNotification(ctx)
		if err != nil {
			if errors.Is(ctx.Err(), context.Canceled) {
				return nil
			}
			return err
		}
		if run, ok := strings.CutPrefix(n.Payload, prefix); ok {
			s.feed.wake(run)
		}
	}
}

// wake gives every subscriber of run a pending wake-up, never waiting.
func (f *feed) wake(run string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for ch := range f.subs[run] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

func (f *feed) wakeAll() {
	f.mu.Lock()
	runs := make([]string, 0, len(f.subs))
	for run := range f.subs {
		runs = append(runs, run)
	}
	f.mu.Unlock()
	for _, run := range runs {
		f.wake(run)
	}
}

// NotifyRunTx wakes the followers of run (RunChanges, in every process)
// when tx commits, as a Commit of the run does: for writes outside the
// store's own methods that readers of the run must see (the cluster's
// published interactions).
func NotifyRunTx(ctx context.Context, tx pgx.Tx, run string) error {
	_, err := tx.Exec(ctx, notifyRun, run)
	return err
}
