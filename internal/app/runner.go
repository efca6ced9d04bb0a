package app

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// ErrQueueFull is returned by Runner.Submit when the queue holds as many
// jobs as its limit allows.
var ErrQueueFull = errors.New("queue full")

// ErrRunnerClosed is returned by Runner.Submit after Close or Stop.
var ErrRunnerClosed = errors.New("session runner closed")

// Job is one piece of work that uses a session's agent.
type Job struct {
	// Kind names the work in status reports: "turn", "model", "compact",
	// "switch", "reload"…
	Kind string
	// Run does the work. ctx is cancelled by Runner.Cancel and when the
	// runner stops; a job that finds it cancelled before it starts still
	// runs, so it can report that it was cancelled.
	Run func(ctx context.Context)
}

// Runner is the one owner of a front end's session: turns, model
// switches, compaction, session switches and config reloads all run on
// its goroutine, one job at a time, in the order submitted, so an agent
// is never driven twice at once and a session is never swapped under a
// turn. Front ends submit jobs and never touch the agent directly.
//
// Submit never blocks: the queue has no bound unless a limit is set, and
// then a job past it is refused with ErrQueueFull. So a stdin reader that
// submits work always goes back to reading, and control lines (cancel,
// status, answers) behind queued work are handled at once.
type Runner struct {
	limit int
	wake  chan struct{} // room for one "the queue or closed changed"
	done  chan struct{} // closed when the goroutine has returned

	mu      sync.Mutex // guards the fields below
	started bool
	queue   []Job
	running string                  // Kind of the running job, "" when none
	cancel  context.CancelCauseFunc // of the running job, nil when none
	stop    context.CancelFunc      // of the runner's context
	closed  bool
}

// NewRunner returns a runner whose queue holds at most limit jobs
// (0 = no limit). Start it before submitting.
func NewRunner(limit int) *Runner {
	return &Runner{limit: limit, wake: make(chan struct{}, 1), done: make(chan struct{})}
}

// Start runs the runner's goroutine until Close or Stop; jobs get
// contexts derived from ctx. Calling it again does nothing.
func (r *Runner) Start(ctx context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started {
		return
	}
	r.started = true
	ctx, r.stop = context.WithCancel(ctx)
	go r.loop(ctx)
}

// Submit queues j. It never blocks; it fails with ErrQueueFull when the
// queue is at its limit and ErrRunnerClosed after Close or Stop.
func (r *Runner) Submit(j Job) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.closed:
		return ErrRunnerClosed
	case r.limit > 0 && len(r.queue) >= r.limit:
		return fmt.Errorf("%w: %d jobs wait (limit %d)", ErrQueueFull, len(r.queue), r.limit)
	}
	r.queue = append(r.queue, j)
	r.signal()
	return nil
}

// SubmitInternal queues j like Submit but past the limit: the limit is
// for clients, and work that arbor itself derives from work already
// accepted (a background job's result, a follow-up turn, a sub-agent's
// report) must not be lost. It never blocks and fails only with
// ErrRunnerClosed.
func (r *Runner) SubmitInternal(j Job) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return ErrRunnerClosed
	}
	r.queue = append(r.queue, j)
	r.signal()
	return nil
}

// Cancel cancels the running job with cause and reports its kind; queued
// jobs are left to run. ok is false when nothing runs.
func (r *Runner) Cancel(cause error) (kind string, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cancel == nil {
		return "", false
	}
	r.cancel(cause)
	return r.running, true
}

// Drop removes the jobs that have not started and returns them, oldest
// first, so the caller can report them as cancelled.
func (r *Runner) Drop() []Job {
	r.mu.Lock()
	defer r.mu.Unlock()
	q := r.queue
	r.queue = nil
	return q
}

// State reports the running job's kind ("" when none) and how many jobs
// wait behind it.
func (r *Runner) State() (running string, queued int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.running, len(r.queue)
}

// Close refuses new jobs, lets the queued ones run, and returns when the
// goroutine has ended. It is safe to call more than once, and before Start.
func (r *Runner) Close() {
	r.mu.Lock()
	r.closed = true
	started := r.started
	r.signal()
	r.mu.Unlock()
	if started {
		<-r.done
	}
}

// Stop is Close with the runner's context cancelled first: the running
// job is cancelled and the queued ones run with a cancelled context.
func (r *Runner) Stop() {
	r.mu.Lock()
	if r.stop != nil {
		r.stop()
	}
	r.mu.Unlock()
	r.Close()
}

func (r *Runner) signal() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

func (r *Runner) loop(ctx context.Context) {
	defer close(r.done)
	for {
		r.mu.Lock()
		if len(r.queue) == 0 {
			closed := r.closed
			r.mu.Unlock()
			if closed {
				return
			}
			<-r.wake
			continue
		}
		j := r.queue[0]
		r.queue[0] = Job{}
		r.queue = r.queue[1:]
		jctx, cancel := context.WithCancelCause(ctx)
		r.running, r.cancel = j.Kind, cancel
		r.mu.Unlock()

		j.Run(jctx)

		r.mu.Lock()
		r.running, r.cancel = "", nil
		r.mu.Unlock()
		cancel(nil)
	}
}
