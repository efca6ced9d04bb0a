package tool

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
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
	// delivers says onDone hands ended jobs to the agent (the envelope
	// protocol's background_result); otherwise the agent reads them with
	// job_output.
	delivers bool

	mu      sync.Mutex
	next    int
	running map[string]context.CancelFunc
	logs    map[string]*jobLog // every job's output and state, by id
	ended   []string           // ids of ended jobs, oldest first (keptEndedJobs)
	closed  bool
	wg      sync.WaitGroup
}

// keptEndedJobs is how many ended jobs job_output can still read.
const keptEndedJobs = 64

// NewJobs returns an empty registry; onDone (nil = ignore) receives every
// job that ends on its own, and is how its result reaches the agent.
// Without onDone the agent reads output and exit codes with job_output.
func NewJobs(onDone func(Job)) *Jobs {
	j := &Jobs{onDone: onDone, delivers: onDone != nil, running: map[string]context.CancelFunc{}, logs: map[string]*jobLog{}}
	if j.onDone == nil {
		j.onDone = func(Job) {}
	}
	return j
}

// Start runs command with bash -c in dir in the background, confined by
// sb when it is not nil, and returns its id ("job_1", "job_2", …). A
// timeout <= 0 means none.
func (j *Jobs) Start(sb *sandbox.Sandbox, dir, command string, env []string, timeout, waitDelay time.Duration) (string, error) {
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
	log := &jobLog{command: command}
	j.logs[id] = log
	j.wg.Go(func() {
		defer cancel()
		r := runCommand(ctx, sb, dir, command, env, timeout, shellMaxOutputBytes, waitDelay, log)
		job := Job{ID: id, Command: command, Output: r.Output, ExitCode: r.ExitCode,
			Killed: r.TimedOut || r.Cancelled || r.ExitCode < 0}
		if r.Err != nil {
			job.Output, job.ExitCode = fmt.Sprintf("cannot run command: %v", r.Err), -1
		}
		log.end(job.ExitCode, job.Killed, r.Err)
		j.mu.Lock()
		_, live := j.running[id]
		delete(j.running, id)
		j.endedLocked(id)
		j.mu.Unlock()
		if live {
			j.onDone(job)
		}
	})
	return id, nil
}

// endedLocked remembers that job id ended, forgetting the oldest ended
// job past keptEndedJobs. j.mu must be held.
func (j *Jobs) endedLocked(id string) {
	j.ended = append(j.ended, id)
	if len(j.ended) > keptEndedJobs {
		delete(j.logs, j.ended[0])
		j.ended = j.ended[1:]
	}
}

// Output returns what job id printed since the last call (at most max
// bytes, the newest kept), keeping only lines re matches when re is not
// nil, and whether the job still runs, how it ended otherwise.
func (j *Jobs) Output(id string, max int, re *regexp.Regexp) (JobOutput, error) {
	j.mu.Lock()
	log, ok := j.logs[id]
	j.mu.Unlock()
	if !ok {
		return JobOutput{}, fmt.Errorf("%w: %q", ErrJobNotFound, id)
	}
	return log.unread(max, re), nil
}

// KillAll kills every running job, as Kill does each; the registry stays
// open (a tree node's jobs end with its turn, and its next turn may start
// more).
func (j *Jobs) KillAll() {
	j.mu.Lock()
	cancels := j.running
	j.running = map[string]context.CancelFunc{}
	j.mu.Unlock()
	for _, cancel := range cancels {
		cancel()
	}
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
// through j, job_output and job_kill. They are meant to replace the
// built-in shell (same name) in a session that has background jobs; o
// gives the workspace and timeouts as for Builtins.
func (j *Jobs) Tools(o BuiltinOptions) []Tool {
	ws, err := filepath.Abs(o.Workspace)
	if err != nil {
		ws = filepath.Clean(o.Workspace)
	}
	return []Tool{newBackgroundShell(newWorkRoot(ws, nil), o, j), newJobOutput(j), newJobKill(j)}
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
