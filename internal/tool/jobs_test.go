package tool

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/testutil"
)

// jobsFixture is a workspace with a Jobs registry whose ended jobs arrive
// on done, and the background-capable shell and job_kill registered.
type jobsFixture struct {
	t    *testing.T
	root string
	jobs *Jobs
	done chan Job
	reg  *Registry
}

func setupJobs(t *testing.T) *jobsFixture {
	t.Helper()
	f := &jobsFixture{t: t, root: t.TempDir(), done: make(chan Job, 16)}
	f.jobs = NewJobs(func(j Job) { f.done <- j })
	t.Cleanup(f.jobs.Close)
	f.reg = NewRegistry(f.jobs.Tools(BuiltinOptions{Workspace: f.root})...)
	return f
}

// fifo makes a named pipe in the workspace and returns its path.
func (f *jobsFixture) fifo(name string) string {
	f.t.Helper()
	p := filepath.Join(f.root, name)
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		f.t.Fatal(err)
	}
	return p
}

func (f *jobsFixture) call(name string, args any) Result {
	f.t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		f.t.Fatal(err)
	}
	return f.reg.Run(context.Background(), llm.ToolCall{ID: "c", Name: name, Input: raw})
}

func TestJobs(t *testing.T) {
	t.Parallel()

	t.Run("BackgroundReturnsAtOnceAndDeliversOutput", func(t *testing.T) {
		t.Parallel()
		f := setupJobs(t)
		gate := f.fifo("gate")
		// The command blocks on the fifo until the test writes to it, so
		// the call must have returned while the command still runs.
		cmd := "read line < gate; echo got $line; exit 4"
		got := reqOK(t, f.call("shell", shellArgs{Command: cmd, RunInBackground: true}))
		reqEqual(t, got, "started background job job_1; its result will be delivered when it ends")
		reqEqual(t, f.jobs.Running(), 1)
		if err := os.WriteFile(gate, []byte("go\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		j := <-f.done
		reqEqual(t, j, Job{ID: "job_1", Command: cmd, Output: "got go\n", ExitCode: 4})
		f.jobs.Close()
		reqEqual(t, f.jobs.Running(), 0)
	})

	t.Run("KillStopsWithoutOnDone", func(t *testing.T) {
		t.Parallel()
		f := setupJobs(t)
		ready := f.fifo("ready")
		reqOK(t, f.call("shell", shellArgs{Command: `sleep 100 & echo "$$ $!" > ready; wait`, RunInBackground: true}))
		data, err := os.ReadFile(ready) // blocks until the job runs
		if err != nil {
			t.Fatal(err)
		}
		pids := parsePIDs(t, string(data))
		reqEqual(t, reqOK(t, f.call("job_kill", jobKillArgs{ID: "job_1"})), "killed background job job_1")
		reqEqual(t, f.jobs.Running(), 0)
		for _, pid := range pids {
			testutil.RequireExited(t, pid, 10*time.Second)
		}
		reqContains(t, reqErr(t, f.call("job_kill", jobKillArgs{ID: "job_1"})), "no running background job")
		f.jobs.Close() // waits for the job's goroutine: onDone had its chance
		select {
		case j := <-f.done:
			t.Fatalf("onDone called for a killed job: %+v", j)
		default:
		}
	})

	t.Run("CloseKillsAllAndRefusesNew", func(t *testing.T) {
		t.Parallel()
		f := setupJobs(t)
		ready := f.fifo("ready")
		reqOK(t, f.call("shell", shellArgs{Command: `echo $$ > ready; sleep 100`, RunInBackground: true}))
		reqOK(t, f.call("shell", shellArgs{Command: `sleep 100`, RunInBackground: true}))
		data, err := os.ReadFile(ready)
		if err != nil {
			t.Fatal(err)
		}
		reqEqual(t, f.jobs.Running(), 2)
		f.jobs.Close()
		testutil.RequireExited(t, parsePIDs(t, string(data))[0], 10*time.Second)
		reqEqual(t, f.jobs.Running(), 0)
		reqEqual(t, len(f.done), 0)
		reqContains(t, reqErr(t, f.call("shell", shellArgs{Command: "true", RunInBackground: true})), "closed")
	})

	t.Run("TimeoutEndsJobAsKilled", func(t *testing.T) {
		t.Parallel()
		f := setupJobs(t)
		reqOK(t, f.call("shell", shellArgs{Command: "echo up; sleep 100", Timeout: 1, RunInBackground: true}))
		j := <-f.done
		reqEqual(t, j, Job{ID: "job_1", Command: "echo up; sleep 100", Output: "up\n", ExitCode: -1, Killed: true})
	})

	t.Run("RefusedWithoutJobs", func(t *testing.T) {
		t.Parallel()
		f := setupTools(t)
		reqContains(t, reqErr(t, f.call("shell", shellArgs{Command: "true", RunInBackground: true})),
			"run_in_background is not available")
	})
}

// TestJobOutput: without a delivering onDone, the agent reads a job's
// output as it comes with job_output (Claude Code's BashOutput), filtered
// or not, and sees how it ended; KillAll ends every running job and the
// registry takes new ones.
func TestJobOutput(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	jobs := NewJobs(nil)
	t.Cleanup(jobs.Close)
	reg := NewRegistry(jobs.Tools(BuiltinOptions{Workspace: root})...)
	run := func(name, input string) Result {
		return reg.Run(context.Background(), llm.ToolCall{ID: "c", Name: name, Input: json.RawMessage(input)})
	}
	gate := filepath.Join(root, "gate")
	if err := syscall.Mkfifo(gate, 0o600); err != nil {
		t.Fatal(err)
	}
	started := reqOK(t, run("shell", `{"command":"echo first; echo noise; cat `+gate+` >/dev/null; echo second; exit 3","run_in_background":true}`))
	reqContains(t, started, "started background job job_1", "job_output")
	// The first lines arrive while the job waits on the gate.
	var got string
	for !strings.Contains(got, "noise") {
		got += reqOK(t, run("job_output", `{"id":"job_1"}`))
	}
	reqContains(t, got, "job_1 (`echo first;", "is running", "first")
	reqContains(t, reqOK(t, run("job_output", `{"id":"job_1"}`)), "(no new output)")
	if err := os.WriteFile(gate, []byte("go\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var last string
	for !strings.Contains(last, "exited") {
		last = reqOK(t, run("BashOutput", `{"bash_id":"job_1","filter":"^sec"}`))
	}
	reqContains(t, last, "exited with code 3", "second")
	if _, body, _ := strings.Cut(last, "\n"); strings.Contains(body, "first") {
		t.Fatalf("an already read line came again: %q", last)
	}
	reqContains(t, reqErr(t, run("job_output", `{"id":"job_9"}`)), "no running background job")
	reqContains(t, reqErr(t, run("job_output", `{"id":"job_1","filter":"("}`)), "is not a regular expression")

	reqOK(t, run("shell", `{"command":"sleep 300","run_in_background":true}`))
	jobs.KillAll()
	for out := ""; !strings.Contains(out, "was killed"); {
		out = reqOK(t, run("job_output", `{"id":"job_2"}`))
	}
	reqContains(t, reqOK(t, run("shell", `{"command":"echo again","run_in_background":true}`)), "job_3")
	reqContains(t, reqErr(t, run("KillShell", `{"shell_id":"job_2"}`)), "no running background job")
}
