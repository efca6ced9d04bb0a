package tool

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// jobLogKeep is how much of a background job's output is kept for
// job_output: the newest bytes; older ones are counted as lost.
const jobLogKeep = 1 << 20

// jobLog is a background job's output as it comes, and its end.
type jobLog struct {
	command string

	mu     sync.Mutex
	buf    []byte // the newest jobLogKeep bytes written
	total  int64  // bytes written
	read   int64  // bytes job_output has handed out (or skipped)
	done   bool
	exit   int
	killed bool
	err    error
}

func (l *jobLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	if over := len(l.buf) - jobLogKeep; over > 0 {
		l.buf = append(l.buf[:0], l.buf[over:]...)
	}
	l.total += int64(len(p))
	return len(p), nil
}

func (l *jobLog) end(exit int, killed bool, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.done, l.exit, l.killed, l.err = true, exit, killed, err
}

// JobOutput is what job_output reports of a job.
type JobOutput struct {
	Command string
	// Output is what the job printed since the last read (filtered).
	Output string
	// Skipped counts bytes printed since the last read that are not in
	// Output: lost past the log's size, or past the read's cap.
	Skipped int64
	Running bool
	// ExitCode and Killed say how it ended, when it has.
	ExitCode int
	Killed   bool
}

// unread hands out what was written since the last call, at most max
// bytes (the newest), keeping the lines re matches when re is not nil.
func (l *jobLog) unread(max int, re *regexp.Regexp) JobOutput {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := JobOutput{Command: l.command, Running: !l.done, ExitCode: l.exit, Killed: l.killed}
	start := l.total - int64(len(l.buf)) // the offset of buf[0]
	from := max64(l.read, start)
	out.Skipped = from - l.read
	text := string(l.buf[from-start:])
	l.read = l.total
	if l.done && l.err != nil {
		text += fmt.Sprintf("cannot run command: %v", l.err)
	}
	if re != nil {
		var kept []string
		for line := range strings.Lines(text) {
			if re.MatchString(strings.TrimSuffix(line, "\n")) {
				kept = append(kept, line)
			}
		}
		text = strings.Join(kept, "")
	}
	if len(text) > max {
		out.Skipped += int64(len(text) - max)
		text = text[len(text)-max:]
	}
	out.Output = text
	return out
}

func max64(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

type jobOutputArgs struct {
	ID     string `json:"id" jsonschema_description:"The id of the background job, as the shell tool reported it (job_1, …)."`
	Filter string `json:"filter,omitempty" jsonschema_description:"A regular expression: only output lines it matches are returned (the others are still marked read)."`
}

func (a jobOutputArgs) Target() Target { return Target{} }

const jobOutputDescription = `Read what a background job (shell with run_in_background) printed since you last read it, ` +
	`and whether it still runs or how it ended. Output beyond 30000 characters per read keeps the newest part.`

func newJobOutput(j *Jobs) Tool {
	return New("job_output", jobOutputDescription, KindInteract, func(_ context.Context, _ Call, a jobOutputArgs) Result {
		var re *regexp.Regexp
		if a.Filter != "" {
			var err error
			if re, err = regexp.Compile(a.Filter); err != nil {
				return Errorf("filter %q is not a regular expression: %v", a.Filter, err)
			}
		}
		o, err := j.Output(a.ID, shellMaxOutputBytes, re)
		if err != nil {
			return Errorf("cannot read job output: %v", err)
		}
		var b strings.Builder
		switch {
		case o.Running:
			fmt.Fprintf(&b, "%s (`%s`) is running", a.ID, o.Command)
		case o.Killed:
			fmt.Fprintf(&b, "%s (`%s`) was killed", a.ID, o.Command)
		default:
			fmt.Fprintf(&b, "%s (`%s`) exited with code %d", a.ID, o.Command, o.ExitCode)
		}
		if o.Skipped > 0 {
			fmt.Fprintf(&b, "; %d earlier bytes of new output are not shown", o.Skipped)
		}
		if o.Output == "" {
			b.WriteString("\n(no new output)")
		} else {
			b.WriteString("\n" + o.Output)
		}
		return Result{Content: b.String()}
	})
}
