package cli_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/tree/treetest"
)

// proc is an arbor process started in the background.
type proc struct {
	cmd    *exec.Cmd
	stdout strings.Builder
	stderr *syncBuffer
	exited chan struct{}
	code   int
}

// syncBuffer is a strings.Builder that may be read while a process
// writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (e *env) start(args ...string) *proc {
	e.t.Helper()
	p := &proc{cmd: e.cmd(context.Background(), args...), stderr: &syncBuffer{}, exited: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, p.stderr
	if err := p.cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	go func() {
		defer close(p.exited)
		err := p.cmd.Wait()
		if ee, ok := err.(*exec.ExitError); ok {
			p.code = ee.ExitCode()
		}
	}()
	e.t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.exited
	})
	return p
}

// waitFor polls cond until it holds, failing after a generous deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// gated answers from respond, except that once armed the next request
// waits until release is closed.
type gated struct {
	respond func(llmtest.Request) llmtest.Turn
	mu      sync.Mutex
	armed   bool
	release chan struct{}
	opened  sync.Once
}

func (g *gated) arm() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.armed, g.release = true, make(chan struct{})
}

// open lets the held request go; safe to call more than once.
func (g *gated) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.release != nil {
		g.opened.Do(func() { close(g.release) })
	}
}

func (g *gated) serve(req llmtest.Request) llmtest.Turn {
	g.mu.Lock()
	wait := g.armed
	g.armed = false
	release := g.release
	g.mu.Unlock()
	if wait {
		<-release
	}
	return g.respond(req)
}

// requireNoStepTwice fails if two of reqs are the same step of the same
// node: the same goal with the same number of assistant turns.
func requireNoStepTwice(t *testing.T, reqs []llmtest.Request) {
	t.Helper()
	seen := map[string]int{}
	for _, r := range reqs {
		k := fmt.Sprintf("%q after %d turns", treetest.GoalOf(r), treetest.Turns(r))
		if seen[k]++; seen[k] > 1 {
			t.Fatalf("the model was asked for %s twice", k)
		}
	}
}

// killAtRequest is killAt for a run that must reach request n; it
// returns the run's id.
func (e *env) killAtRequest(srv *llmtest.Server, n int, args ...string) string {
	e.t.Helper()
	killed, stderr := e.killAt(srv, n, args...)
	if !killed {
		e.t.Fatalf("arbor %v ended before model request %d:\n%s", args, n, stderr)
	}
	return runID(e.t, stderr)
}

// TestTwoResumesOneOwner resumes a killed run from two processes at once:
// one drives it to the end, the other exits 1 naming the owner, and no
// step of any node is asked of the model twice.
func TestTwoResumesOneOwner(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	log := filepath.Join(e.home, "done.log")
	g := &gated{respond: treetest.GoalResponder(threeLevels(log))}
	srv := llmtest.NewServerFunc(g.serve)
	defer srv.Close()
	defer g.open() // a held request would keep srv.Close waiting
	model := e.useProvider("anthropic", srv.URL)
	run := e.killAtRequest(srv, 1, "run", "--model", model, "--yes", "build the thing")
	before := len(srv.Requests())

	// The owner's first model call waits until the other resume gave up,
	// so the two surely overlap.
	g.arm()
	a, b := e.start("resume", "--yes", run), e.start("resume", "--yes", run)
	var loser, winner *proc
	select {
	case <-a.exited:
		loser, winner = a, b
	case <-b.exited:
		loser, winner = b, a
	case <-time.After(2 * time.Minute):
		t.Fatal("neither resume ended")
	}
	g.open()
	if loser.code != 1 {
		t.Fatalf("the second resume exited %d, want 1:\n%s", loser.code, loser.stderr.String())
	}
	for _, want := range []string{fmt.Sprintf("run %s is being driven by pid %d on ", run, winner.cmd.Process.Pid),
		fmt.Sprintf("kill %d", winner.cmd.Process.Pid), "arbor resume --wait " + run} {
		if !strings.Contains(loser.stderr.String(), want) {
			t.Fatalf("the second resume's stderr lacks %q:\n%s", want, loser.stderr.String())
		}
	}
	<-winner.exited
	if winner.code != 0 || strings.TrimSpace(winner.stdout.String()) != "ROOT: left and right are done" {
		t.Fatalf("the owner exited %d with %q:\n%s", winner.code, winner.stdout.String(), winner.stderr.String())
	}
	requireNoStepTwice(t, srv.Requests()[before:])
	done, _ := os.ReadFile(log)
	for _, leaf := range []string{"left-a", "left-b", "right-a"} {
		if n := strings.Count(string(done), leaf+"\n"); n != 1 {
			t.Fatalf("%s ran %d times:\n%s", leaf, n, done)
		}
	}
}

// TestAnswerWhileTwoProcessesCompete: while a run waits for an answer, a
// second resume exits 1 and leaves the owner's answer socket alone; a
// third waits with --wait; the answer reaches the owner, which completes
// the run, and the waiting resume then finds it complete.
func TestAnswerWhileTwoProcessesCompete(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv := llmtest.NewServerFunc(treetest.Responder(treetest.Script{
		1: {
			treetest.Calls(treetest.Call("ask", map[string]any{"question": "Which colour?", "options": []any{"red", "blue"}})),
			treetest.Complete("draft"),
			treetest.Complete("FINAL: the answer was blue"),
		},
	}))
	defer srv.Close()
	model := e.useProvider("anthropic", srv.URL)

	owner := e.cmd(context.Background(), "run", "--model", model, "pick a colour")
	stderr, err := owner.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	owner.Stdout = &out
	if err := owner.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	var lines []string
	run := ""
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if m := runLine.FindStringSubmatch(sc.Text()); m != nil {
			run = m[1]
		}
		if strings.Contains(sc.Text(), "answer with: arbor answer") {
			break
		}
	}
	if run == "" {
		t.Fatalf("no run id, no question:\n%s", strings.Join(lines, "\n"))
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }()

	second := e.run("resume", run)
	if second.code != 1 || !strings.Contains(second.stderr, fmt.Sprintf("pid %d", owner.Process.Pid)) {
		t.Fatalf("second resume: exit %d\n%s", second.code, second.stderr)
	}
	waiter := e.start("resume", "--wait", run)
	waitFor(t, "the --wait resume to wait", func() bool {
		return strings.Contains(waiter.stderr.String(), fmt.Sprintf("waiting for pid %d", owner.Process.Pid))
	})

	o := e.run("answer", run, "#2", "blue")
	if o.code != 0 || !strings.Contains(o.stdout, "delivered to the running process") {
		t.Fatalf("answer: exit %d %q %q", o.code, o.stdout, o.stderr)
	}
	if err := owner.Wait(); err != nil {
		t.Fatalf("owner: %v", err)
	}
	if strings.TrimSpace(out.String()) != "FINAL: the answer was blue" {
		t.Fatalf("owner stdout %q", out.String())
	}
	<-waiter.exited
	if waiter.code != 0 || strings.TrimSpace(waiter.stdout.String()) != "FINAL: the answer was blue" {
		t.Fatalf("--wait resume: exit %d %q\n%s", waiter.code, waiter.stdout.String(), waiter.stderr.String())
	}
	requireNoStepTwice(t, srv.Requests())
}

// TestKilledOwnerShowsInterruptedAndIsTakenOver: a SIGKILLed owner's run
// is listed as interrupted, and a plain resume (no --wait) takes it over
// at once and completes it.
func TestKilledOwnerShowsInterruptedAndIsTakenOver(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	log := filepath.Join(e.home, "done.log")
	srv := llmtest.NewServerFunc(treetest.GoalResponder(threeLevels(log)))
	defer srv.Close()
	model := e.useProvider("anthropic", srv.URL)
	run := e.killAtRequest(srv, 3, "run", "--model", model, "--yes", "build the thing")

	o := e.run("runs")
	if !strings.Contains(o.stdout, run+"  interrupted") {
		t.Fatalf("runs after the kill:\n%s", o.stdout)
	}
	if o := e.run("tree", run); !strings.Contains(o.stdout, "["+"interrupted]") {
		t.Fatalf("tree after the kill:\n%s", o.stdout)
	}
	o = e.run("resume", "--yes", run)
	if o.code != 0 || strings.TrimSpace(o.stdout) != "ROOT: left and right are done" {
		t.Fatalf("resume: exit %d %q\n%s", o.code, o.stdout, o.stderr)
	}
	if o := e.run("runs"); !strings.Contains(o.stdout, run+"  complete") {
		t.Fatalf("runs after the resume:\n%s", o.stdout)
	}
}

// TestHeadlessResumeOfAHostedSession: a second `arbor headless -r` of a
// session that another process hosts exits 1 naming that process.
func TestHeadlessResumeOfAHostedSession(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv := llmtest.NewServer()
	defer srv.Close()
	model := e.useProvider("anthropic", srv.URL)
	c, stdin, stdout := e.startPiped(t, "headless", "--model", model)
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() {
		t.Fatal("no ready envelope")
	}
	var ready struct {
		Type    string `json:"type"`
		Payload struct {
			SessionID string `json:"session_id"`
		} `json:"payload"`
	}
	if err := json.Unmarshal(sc.Bytes(), &ready); err != nil || ready.Type != "ready" || ready.Payload.SessionID == "" {
		t.Fatalf("first line %q: %v", sc.Text(), err)
	}
	o := e.run("headless", "--model", model, "-r", ready.Payload.SessionID)
	if o.code != 1 || !strings.Contains(o.stderr, fmt.Sprintf("session %s is being driven by pid %d", ready.Payload.SessionID, c.Process.Pid)) {
		t.Fatalf("second headless: exit %d\n%s", o.code, o.stderr)
	}
	if o := e.run("runs"); !strings.Contains(o.stdout, ready.Payload.SessionID+"  running") {
		t.Fatalf("runs while the session is hosted:\n%s", o.stdout)
	}
	stdin.Close()
	_, _ = io.Copy(io.Discard, stdout)
	if err := c.Wait(); err != nil {
		t.Fatalf("first headless: %v", err)
	}
	// A session no process holds is idle, not interrupted: its
	// conversation waits for arbor headless -r, whether its process ended
	// or was killed.
	if o := e.run("runs"); !strings.Contains(o.stdout, ready.Payload.SessionID+"  idle") {
		t.Fatalf("runs after the session ended:\n%s", o.stdout)
	}
	c, _, stdout = e.startPiped(t, "headless", "--model", model, "-r", ready.Payload.SessionID)
	if sc := bufio.NewScanner(stdout); !sc.Scan() {
		t.Fatal("no ready envelope from the resumed session")
	}
	if err := c.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = c.Wait()
	if o := e.run("tree", ready.Payload.SessionID); !strings.Contains(o.stdout, "[idle]") {
		t.Fatalf("tree after the session's process was killed:\n%s", o.stdout)
	}
}
