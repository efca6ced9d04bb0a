package tool

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/arbor-run/arbor/internal/tool/sandbox"
)

// Background jobs: shell commands that the shell tool starts with
// run_in_background and that outlive the tool call.
//
// Invariants: a job is in the registry from its start until it ends or is
// killed; onDone is called exactly once for every job that ends on its
// own (or by its own timeout) and never for a killed one, outside the
// registry's lock; Close kills every running job and returns only when
// their goroutines are gone, after which no job starts.

// ErrJobNotFound is returned for an id that names no running job.
var ErrJobNotFound = errors.New("no running background job with that id")

// ErrJobsClosed is returned when a job is started after Close.
var ErrJobsClosed = errors.New("background jobs are closed")

// backgroundNoTimeout is the timeout of a background job whose call gives
// none: services and watchers may run for the whole session.
const backgroundNoTimeout = time.Duration(math.MaxInt64)

// Job is a background job that ended on its own.
type Job struct {
	ID, Command string
	// Output is stdout and stderr merged, cut in the middle beyond the
	// shell tool's cap.
	Output   string
	ExitCode int // -1 when killed by a signal or its timeout
	// Killed says the job was killed by its timeout or a signal.
	Killed bool
}

// Jobs is a session's registry of background jobs. It is safe for
// concurrent use.
type Jobs struct {
	onDone func(Job)

	mu      sync.Mutex
	next    int
	running map[string]context.CancelFunc
	closed  bool
	wg      sync.WaitGroup
}

// NewJobs returns an empty registry; onDone (nil = ignore) receives every
// job that ends on its own.
func NewJobs(onDone func(Job)) *Jobs {
	if onDone == nil {
		onDone = func(Job) {}
	}
	return &Jobs{onDone: onDone, running: map[string]context.CancelFunc{}}
}

// Start runs command with bash -c in dir in the background, confined by
// sb when it is not nil, and returns its id ("job_1", "job_2", …). A
// timeout <= 0 means none.
func (j *Jobs) Start(sb *sandbox.Sandbox, dir, command string, timeout, waitDelay time.Duration) (string, error) {
	if timeout <= 0 {
		timeout = backgroundNoTimeout
	}
	ctx, cancel := context.WithCancel(context.Background())
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		cancel()
		return "", ErrJobsClosed
	}
	j.next++
	id := "job_" + strconv.Itoa(j.next)
	j.running[id] = cancel
	j.wg.Go(func() {
		defer cancel()
		r := RunCommand(ctx, sb, dir, command, timeout, shellMaxOutputBytes, waitDelay)
		job := Job{ID: id, Command: command, Output: r.Output, ExitCode: r.ExitCode,
			Killed: r.TimedOut || r.Cancelled || r.ExitCode < 0}
		if r.Err != nil {
			job.Output, job.ExitCode = fmt.Sprintf("cannot run command: %v", r.Err), -1
		}
		j.mu.Lock()
		_, live := j.running[id]
		delete(j.running, id)
		j.mu.Unlock()
		if live {
			j.onDone(job)
		}
	})
	return id, nil
}

// Kill kills a running job and everything it started; onDone is not
// called for it. It stops counting in Running at once.
func (j *Jobs) Kill(id string) error {
	j.mu.Lock()
	cancel, ok := j.running[id]
	delete(j.running, id)
	j.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: %q", ErrJobNotFound, id)
	}
	cancel()
	return nil
}

// Running returns the number of jobs started and neither ended nor killed.
func (j *Jobs) Running() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.running)
}

// Close kills every running job without calling onDone for them, refuses
// new ones and waits until every job's goroutine has returned.
func (j *Jobs) Close() {
	j.mu.Lock()
	j.closed = true
	cancels := j.running
	j.running = map[string]context.CancelFunc{}
	j.mu.Unlock()
	for _, cancel := range cancels {
		cancel()
	}
	j.wg.Wait()
}

// Tools returns a shell tool that can run commands in the background
// through j, and job_kill. They are meant to replace the built-in shell
// (same name) in a session that has background jobs; o gives the
// workspace and timeouts as for Builtins.
func (j *Jobs) Tools(o BuiltinOptions) []Tool {
	ws, err := filepath.Abs(o.Workspace)
	if err != nil {
		ws = filepath.Clean(o.Workspace)
	}
	return []Tool{newBackgroundShell(workRoot(ws), o, j), newJobKill(j)}
}

type jobKillArgs struct {
	ID string `json:"id" jsonschema_description:"The id of the background job, as the shell tool reported it (job_1, …)."`
}

func (a jobKillArgs) Target() Target { return Target{Command: a.ID} }

const jobKillDescription = `Kill a background job started by shell with run_in_background, and every process it started. ` +
	`No result is delivered for a killed job.`

func newJobKill(j *Jobs) Tool {
	return New("job_kill", jobKillDescription, KindExecute, func(_ context.Context, _ Call, a jobKillArgs) Result {
		if err := j.Kill(a.ID); err != nil {
			return Errorf("cannot kill job: %v", err)
		}
		return Result{Content: fmt.Sprintf("killed background job %s", a.ID)}
	})
}
