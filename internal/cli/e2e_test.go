package cli_test

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/store/postgres/pgtest"
)

// These tests build the arbor binary and run it as a user would, against
// the scripted model server over real HTTP.

var arborBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "arbor-e2e")
	if err != nil {
		panic(err)
	}
	arborBin = filepath.Join(dir, "arbor")
	build := exec.Command("go", "build", "-o", arborBin, "../../cmd/arbor")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		panic("build arbor: " + err.Error())
	}
	code := m.Run()
	pgtest.Stop()
	os.RemoveAll(dir)
	os.Exit(code)
}

type env struct {
	t         testing.TB
	workspace string
	home      string
	vars      []string
	bin       string // the arbor binary run; "" is arborBin
}

func newEnv(t testing.TB) *env {
	t.Helper()
	home := t.TempDir()
	ws := filepath.Join(home, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	return &env{t: t, workspace: ws, home: home, vars: []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + home,
		"XDG_CONFIG_HOME=" + filepath.Join(home, "config"),
		"XDG_STATE_HOME=" + filepath.Join(home, "state"),
		// These tests drive what they test through shell commands that
		// reach outside the workspace (fifos, logs in the home, host
		// pids); the sandbox's own end-to-end tests (sandbox_e2e_test.go)
		// drop this and run with the commands' default, auto.
		sandboxOff,
	}}
}

// sandboxOff is the variable newEnv sets to run commands unconfined.
const sandboxOff = "ARBOR_SANDBOX=off"

// sandboxDefault drops sandboxOff: the commands' own default applies.
func (e *env) sandboxDefault() {
	e.vars = slices.DeleteFunc(e.vars, func(v string) bool { return v == sandboxOff })
}

type outcome struct {
	stdout, stderr string
	code           int
}

func (e *env) cmd(ctx context.Context, args ...string) *exec.Cmd {
	c := exec.CommandContext(ctx, cmp.Or(e.bin, arborBin), args...)
	c.Dir = e.workspace
	c.Env = e.vars
	c.Stdin = strings.NewReader("")
	return c
}

func (e *env) run(args ...string) outcome {
	e.t.Helper()
	c := e.cmd(context.Background(), args...)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	err := c.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatal(err)
	}
	return outcome{out.String(), errb.String(), code}
}

// useProvider points arbor at srv with the given provider and returns the
// --model value.
func (e *env) useProvider(provider, url string) string {
	switch provider {
	case "anthropic":
		e.vars = append(e.vars, "ANTHROPIC_BASE_URL="+url, "ANTHROPIC_API_KEY=test-key")
		return "anthropic/claude-test"
	default:
		e.vars = append(e.vars, "OPENAI_BASE_URL="+url+"/v1", "OPENAI_API_KEY=test-key")
		return "openai/gpt-test"
	}
}

var runLine = regexp.MustCompile(`run (\S+), model`)

// runID returns the run id arbor announced on stderr.
func runID(t testing.TB, stderr string) string {
	t.Helper()
	m := runLine.FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no run id in stderr:\n%s", stderr)
	}
	return m[1]
}

// interruptRun runs arbor with args (a run), calls stalled to wait until
// the model is stalled, interrupts arbor as Ctrl-C does, and returns the
// run's id and arbor's stderr, once arbor has exited 130.
func (e *env) interruptRun(t testing.TB, stalled func(), args ...string) (id, stderr string) {
	t.Helper()
	c := e.cmd(context.Background(), args...)
	var errb bytes.Buffer
	c.Stderr = &errb
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	stalled()
	if err := c.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := c.Wait()
	if c.ProcessState.ExitCode() != 130 {
		t.Fatalf("exit %v, want 130\n%s", err, errb.String())
	}
	return runID(t, errb.String()), errb.String()
}

// rootSession is the session of a run's root node.
func rootSession(run string) string { return run + ".1" }

type shown struct {
	Session  store.Session         `json:"session"`
	Messages []store.MessageRecord `json:"messages"`
	Intents  []store.Intent        `json:"intents"`
}

func (e *env) show(id string) shown {
	e.t.Helper()
	o := e.run("sessions", "show", "--json", id)
	if o.code != 0 {
		e.t.Fatalf("sessions show: %d %s", o.code, o.stderr)
	}
	var s shown
	if err := json.Unmarshal([]byte(o.stdout), &s); err != nil {
		e.t.Fatalf("sessions show output: %v\n%s", err, o.stdout)
	}
	return s
}

func TestRunEditsFilesWithApproval(t *testing.T) {
	t.Parallel()
	for _, provider := range []string{"anthropic", "openai"} {
		t.Run(provider, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			if err := os.WriteFile(filepath.Join(e.workspace, "notes.txt"), []byte("color: red\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			srv := llmtest.NewServer(
				llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "write_file", Input: map[string]any{"path": "out/poem.txt", "content": "roots hold the hill\n"}}}},
				llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "edit", Input: map[string]any{"path": "notes.txt", "old_string": "red", "new_string": "green"}}}},
				llmtest.Turn{Text: "Wrote the poem and changed the color."},
			)
			defer srv.Close()
			model := e.useProvider(provider, srv.URL)

			o := e.run("run", "--model", model, "--yes", "write a poem and fix the color")
			if o.code != 0 {
				t.Fatalf("exit %d\nstderr:\n%s", o.code, o.stderr)
			}
			if strings.TrimSpace(o.stdout) != "Wrote the poem and changed the color." {
				t.Fatalf("stdout %q", o.stdout)
			}
			if b, _ := os.ReadFile(filepath.Join(e.workspace, "out/poem.txt")); string(b) != "roots hold the hill\n" {
				t.Fatalf("poem.txt = %q", b)
			}
			if b, _ := os.ReadFile(filepath.Join(e.workspace, "notes.txt")); string(b) != "color: green\n" {
				t.Fatalf("notes.txt = %q", b)
			}
			if !strings.Contains(o.stderr, "→ write_file out/poem.txt") {
				t.Fatalf("progress missing from stderr:\n%s", o.stderr)
			}
			reqs := srv.Requests()
			if len(reqs) != 3 || reqs[0].Model != strings.SplitN(model, "/", 2)[1] || !strings.Contains(reqs[0].System, "arbor") {
				t.Fatalf("requests: %d, first model %q", len(reqs), reqs[0].Model)
			}
			s := e.show(rootSession(runID(t, o.stderr)))
			if s.Session.Status != store.SessionIdle || len(s.Messages) != 6 || len(s.Intents) != 2 || s.Session.Usage.OutputTokens == 0 {
				t.Fatalf("session %+v, %d messages, %d intents", s.Session, len(s.Messages), len(s.Intents))
			}
		})
	}
}

func TestRunDeniesWithoutTerminal(t *testing.T) {
	t.Parallel()
	for _, provider := range []string{"anthropic", "openai"} {
		t.Run(provider, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			srv := llmtest.NewServer(
				llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "shell", Input: map[string]any{"command": "touch pwned"}}}},
				llmtest.Turn{Text: "I could not run the command.", Expect: "not a terminal"},
			)
			defer srv.Close()
			model := e.useProvider(provider, srv.URL)
			o := e.run("run", "--model", model, "touch a file")
			if o.code != 0 {
				t.Fatalf("exit %d\nstderr:\n%s", o.code, o.stderr)
			}
			if _, err := os.Stat(filepath.Join(e.workspace, "pwned")); !os.IsNotExist(err) {
				t.Fatal("a denied shell command ran")
			}
			if strings.TrimSpace(o.stdout) != "I could not run the command." {
				t.Fatalf("stdout %q stderr %s", o.stdout, o.stderr)
			}
			last := srv.Requests()[1].LastUserText()
			if !strings.Contains(last, "denied") || !strings.Contains(last, "--yes") {
				t.Fatalf("the model should learn why: %q", last)
			}
		})
	}
}

func TestRunWithoutModelExplains(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	o := e.run("run", "hello")
	if o.code != 2 {
		t.Fatalf("exit %d, want 2; stderr %s", o.code, o.stderr)
	}
	for _, want := range []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL", "--model"} {
		if !strings.Contains(o.stderr, want) {
			t.Fatalf("stderr should name %s:\n%s", want, o.stderr)
		}
	}
}

func TestRunScriptedDemo(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	script, err := filepath.Abs("../../examples/hello.yaml")
	if err != nil {
		t.Fatal(err)
	}
	o := e.run("run", "--model", "script:"+script, "--yes", "Write a haiku about trees into haiku.txt")
	if o.code != 0 {
		t.Fatalf("exit %d\n%s", o.code, o.stderr)
	}
	b, err := os.ReadFile(filepath.Join(e.workspace, "haiku.txt"))
	if err != nil || len(b) == 0 || strings.TrimSpace(o.stdout) == "" {
		t.Fatalf("haiku %q %v; stdout %q", b, err, o.stdout)
	}
	if o := e.run("sessions", "list"); o.code != 0 || !strings.Contains(o.stdout, "haiku") {
		t.Fatalf("sessions list: %d %q", o.code, o.stdout)
	}
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if o := e.run("run"); o.code != 2 {
		t.Fatalf("run without a goal: exit %d", o.code)
	}
	// The error names the value and the valid modes (it once said
	// "invalid config: mode: " and nothing more).
	if o := e.run("run", "--mode", "sideways", "--model", "anthropic/x", "hi"); o.code != 2 || !strings.Contains(o.stderr, `"sideways"`) || !strings.Contains(o.stderr, "auto-edit") {
		t.Fatalf("bad mode: exit %d %s", o.code, o.stderr)
	}
	// Nothing listens on port 1: the store cannot be opened, and the error
	// names the database without its password.
	for _, store := range []string{"postgres://arbor:hunter2@127.0.0.1:1/arbor", "postgresql://arbor@127.0.0.1:1/y"} {
		o := e.run("runs", "--store", store)
		if o.code != 1 || !strings.Contains(o.stderr, "open postgres store") || strings.Contains(o.stderr, "hunter2") {
			t.Fatalf("runs --store %s: exit %d, stderr %q; want 1 and the connection refused", store, o.code, o.stderr)
		}
	}
	if o := e.run("runs", "--store", "mysql://db/arbor"); o.code != 2 || !strings.Contains(o.stderr, "unsupported database") {
		t.Fatalf("runs --store mysql://…: exit %d, stderr %q; want 2", o.code, o.stderr)
	}
	if o := e.run("--bogus"); o.code != 2 {
		t.Fatalf("unknown flag: exit %d", o.code)
	}
	if o := e.run("bogus"); o.code != 2 || !strings.Contains(o.stderr, `unknown command "bogus"`) {
		t.Fatalf("unknown command: exit %d %q; want 2", o.code, o.stderr)
	}
	// A broken permission rule file is a configuration error, as a broken
	// config.yaml is.
	rules := filepath.Join(e.workspace, ".arbor", "permissions.yaml")
	if err := os.MkdirAll(filepath.Dir(rules), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rules, []byte("rules:\n  - rule: shell(git *\n    action: allow\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if o := e.run("run", "--model", "anthropic/x", "hi"); o.code != 2 || !strings.Contains(o.stderr, "permission rule file") {
		t.Fatalf("broken permissions.yaml: exit %d %q; want 2", o.code, o.stderr)
	}
	if err := os.Remove(rules); err != nil {
		t.Fatal(err)
	}
	if o := e.run("version"); o.code != 0 || !strings.HasPrefix(o.stdout, "arbor ") || !strings.Contains(o.stdout, "\nSQLite 3.") {
		t.Fatalf("version: %d %q", o.code, o.stdout)
	}
	if o := e.run("completion", "bash"); o.code != 0 || !strings.Contains(o.stdout, "arbor") {
		t.Fatalf("completion: %d", o.code)
	}
}

// TestKillDuringToolThenResume kills arbor with SIGKILL while a shell tool
// runs, then resumes the session: the transcript is consistent and the
// model is told the tool was interrupted.
func TestKillDuringToolThenResume(t *testing.T) {
	t.Parallel()
	killDuringToolThenResume(t, newEnv(t))
}

// TestKillDuringToolThenResumeOnPostgres is the same crash and resume
// with the run, its lease and the intents in PostgreSQL.
func TestKillDuringToolThenResumeOnPostgres(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.vars = append(e.vars, "ARBOR_STORE="+pgtest.DSN(t))
	killDuringToolThenResume(t, e)
}

func killDuringToolThenResume(t *testing.T, e *env) {
	t.Helper()
	fifo := filepath.Join(e.home, "started")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	srv := llmtest.NewServer(
		llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "shell", Input: map[string]any{"command": "echo $$ > " + fifo + "; exec sleep 60"}}}},
		llmtest.Turn{Text: "The command was interrupted; not repeating it.", Expect: "interrupted"},
	)
	defer srv.Close()
	model := e.useProvider("anthropic", srv.URL)

	c := e.cmd(context.Background(), "run", "--model", model, "--yes", "sleep a while")
	var errb bytes.Buffer
	c.Stderr = &errb
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(fifo) // blocks until the tool is running
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 32)
	n, _ := f.Read(buf)
	f.Close()
	if err := c.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = c.Wait()
	var sleepPid int
	if _, err := fmt.Sscan(strings.TrimSpace(string(buf[:n])), &sleepPid); err == nil && sleepPid > 0 {
		_ = syscall.Kill(sleepPid, syscall.SIGKILL)
	}

	id := runID(t, errb.String())
	s := e.show(rootSession(id))
	if len(s.Messages) != 2 || len(s.Intents) != 1 || s.Intents[0].Status != store.IntentStarted {
		t.Fatalf("after kill: %d messages, intents %+v", len(s.Messages), s.Intents)
	}

	o := e.run("resume", id)
	if o.code != 0 {
		t.Fatalf("resume: exit %d\n%s", o.code, o.stderr)
	}
	if !strings.Contains(o.stdout, "not repeating") {
		t.Fatalf("stdout %q", o.stdout)
	}
	s = e.show(rootSession(id))
	if len(s.Messages) != 4 || s.Intents[0].Status != store.IntentFinished || !s.Intents[0].IsError {
		t.Fatalf("after resume: %d messages, intents %+v", len(s.Messages), s.Intents)
	}
	res := s.Messages[2].Message.Parts[0].ToolResult
	if res == nil || !strings.HasPrefix(res.Content, "interrupted") {
		t.Fatalf("tool result after resume: %+v", s.Messages[2].Message)
	}
	if len(srv.Requests()) != 2 {
		t.Fatalf("the shell tool must not run again; requests %d", len(srv.Requests()))
	}
}

// TestInterruptExits130 sends SIGINT while the model stream is stalled:
// arbor cancels the call, stores the session as interrupted and exits 130;
// resuming it asks the model again.
func TestInterruptExits130(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv := llmtest.NewServer(
		llmtest.Turn{Text: "never finished", Fault: &llmtest.Fault{Kind: llmtest.FaultStall, AfterEvents: 2}},
		llmtest.Turn{Text: "finished on resume"},
	)
	defer srv.Close()
	model := e.useProvider("anthropic", srv.URL)
	// The stream is open and stalled once the server has the request.
	id, stderr := e.interruptRun(t, func() { srv.WaitRequests(1) }, "run", "--model", model, "hello")
	if !strings.Contains(stderr, "arbor resume "+id) {
		t.Fatalf("stderr should say how to resume:\n%s", stderr)
	}
	s := e.show(rootSession(id))
	if s.Session.Status != store.SessionInterrupted || len(s.Messages) != 1 {
		t.Fatalf("after interrupt: %+v, %d messages", s.Session, len(s.Messages))
	}
	o := e.run("resume", id)
	if o.code != 0 || strings.TrimSpace(o.stdout) != "finished on resume" {
		t.Fatalf("resume: %d %q\n%s", o.code, o.stdout, o.stderr)
	}
}

// TestTreeDemoScript keeps examples/tree.yaml, the README's offline tree
// demo, working.
func TestTreeDemoScript(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	script, err := filepath.Abs("../../examples/tree.yaml")
	if err != nil {
		t.Fatal(err)
	}
	o := e.run("run", "--model", "script:"+script, "--max-parallel", "1", "Which tree should we plant in the courtyard?")
	if o.code != 0 || !strings.HasPrefix(o.stdout, "Plant a pine.") {
		t.Fatalf("exit %d stdout %q\n%s", o.code, o.stdout, o.stderr)
	}
	if !strings.Contains(o.stderr, "#4 pending → active  task(fork) Compare oak and pine") {
		t.Fatalf("transitions:\n%s", o.stderr)
	}
}

// TestHeadlessEnvelope drives `arbor headless` (the envelope protocol, the
// default) as a gateway would: ready first, then send, events, idle.
func TestHeadlessEnvelope(t *testing.T) {
	t.Parallel()
	headlessEnvelope(t, newEnv(t))
}

// TestHeadlessEnvelopeOnPostgres is the same session stored in
// PostgreSQL; sessions show reads it back from another process.
func TestHeadlessEnvelopeOnPostgres(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.vars = append(e.vars, "ARBOR_STORE="+pgtest.DSN(t))
	headlessEnvelope(t, e)
	o := e.run("sessions", "list")
	if o.code != 0 || !strings.Contains(o.stdout, "anthropic/claude-test") {
		t.Fatalf("sessions list on PostgreSQL: %d\n%s%s", o.code, o.stdout, o.stderr)
	}
}

func headlessEnvelope(t *testing.T, e *env) {
	t.Helper()
	srv := llmtest.NewServer(llmtest.Turn{Text: "The project is small."})
	defer srv.Close()
	model := e.useProvider("anthropic", srv.URL)
	c, stdin, stdout := e.startPiped(t, "headless", "--model", model)
	sc := bufio.NewScanner(stdout)
	var types []string
	for sc.Scan() {
		var env struct {
			Type string `json:"type"`
			Seq  uint64 `json:"seq"`
		}
		if err := json.Unmarshal(sc.Bytes(), &env); err != nil {
			t.Fatalf("stdout line is not JSON: %q", sc.Text())
		}
		types = append(types, env.Type)
		switch env.Type {
		case "ready":
			fmt.Fprintln(stdin, `{"type":"send","content":"Explain this project without changing files."}`)
		case "idle":
			stdin.Close()
		}
	}
	if err := c.Wait(); err != nil {
		t.Fatalf("exit: %v", err)
	}
	if types[0] != "ready" || !slices.Contains(types, "assistant_message") || types[len(types)-1] != "idle" {
		t.Fatalf("envelopes %v", types)
	}
}

// startPiped starts arbor with args, as a gateway does: pipes to its stdin
// and from its stdout.
func (e *env) startPiped(t *testing.T, args ...string) (*exec.Cmd, io.WriteCloser, io.Reader) {
	t.Helper()
	c := e.cmd(context.Background(), args...)
	c.Stdin = nil
	stdin, err := c.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	return c, stdin, stdout
}

// TestHeadlessWorktree starts `arbor headless -w NAME` in a git repository:
// arbor creates the worktree, works in it, and says so in ready.
func TestHeadlessWorktree(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "init"}} {
		g := exec.Command("git", args...)
		g.Dir = e.workspace
		if out, err := g.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	srv := llmtest.NewServer()
	defer srv.Close()
	model := e.useProvider("anthropic", srv.URL)
	c := e.cmd(context.Background(), "headless", "-w", "feat", "--model", model)
	c.Stdin = strings.NewReader(`{"type":"status"}` + "\n")
	out, err := c.Output()
	if err != nil {
		t.Fatalf("headless -w: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var ready struct {
		Payload struct{ Name, Branch, Path string } `json:"payload"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &ready); err != nil || ready.Payload.Name != "feat" || ready.Payload.Branch != "arbor/feat" {
		t.Fatalf("ready %s %v", lines[0], err)
	}
	if fi, err := os.Stat(filepath.Join(ready.Payload.Path, ".git")); err != nil || fi.IsDir() {
		t.Fatalf("the worktree checkout %s: %v", ready.Payload.Path, err)
	}
	if !strings.Contains(string(out), `"worktree_id":"feat"`) {
		t.Fatalf("status should report the worktree:\n%s", out)
	}
}

// TestHeadlessNoLocalShell: --no-local-shell refuses the command and
// keeps serving.
func TestHeadlessNoLocalShell(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	srv := llmtest.NewServer()
	defer srv.Close()
	model := e.useProvider("anthropic", srv.URL)
	c := e.cmd(context.Background(), "headless", "--no-local-shell", "--model", model)
	c.Stdin = strings.NewReader(`{"type":"local_shell","command":"touch ran"}` + "\n" + `{"type":"status"}` + "\n")
	out, err := c.Output()
	if err != nil {
		t.Fatalf("headless: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 3 || !strings.Contains(lines[1], `"code":"unavailable"`) || !strings.Contains(lines[1], "--no-local-shell") ||
		!strings.Contains(lines[2], `"status_response"`) {
		t.Fatalf("output:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(e.workspace, "ran")); err == nil {
		t.Fatal("the command ran")
	}
}

// TestHeadlessSigtermWhileClientStopsReading: a gateway that stopped
// reading stdout (the pipe is full) and then sends SIGTERM still sees the
// process exit, in both protocols: the output waits for the client only a
// grace period once the process is signalled.
func TestHeadlessSigtermWhileClientStopsReading(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("a tree grows slowly. ", 8_000) // ~160 KiB: more than a pipe holds
	for _, protocol := range []string{"envelope", "stream-json"} {
		t.Run(protocol, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			srv := llmtest.NewServer(llmtest.Turn{Text: long})
			defer srv.Close()
			model := e.useProvider("anthropic", srv.URL)
			c, stdin, stdout := e.startPiped(t, "headless", "--protocol", protocol, "--model", model)
			line, marker := `{"type":"send","content":"say a lot"}`, `"type":"assistant_message"`
			if protocol == "stream-json" {
				line, marker = `{"type":"user","message":{"role":"user","content":"say a lot"}}`, `"type":"assistant"`
			}
			fmt.Fprintln(stdin, line)
			// Read until the long reply has begun, then stop reading: the
			// rest of its line cannot fit in the pipe.
			var seen []byte
			chunk := make([]byte, 4096)
			for !bytes.Contains(seen, []byte(marker)) {
				n, err := stdout.Read(chunk)
				if err != nil {
					t.Fatalf("output ended before the reply: %v\n%s", err, seen)
				}
				seen = append(seen, chunk[:n]...)
			}
			if err := c.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- c.Wait() }()
			select {
			case <-exited:
			case <-time.After(60 * time.Second):
				_ = c.Process.Kill()
				t.Fatal("arbor did not exit after SIGTERM while its client had stopped reading")
			}
			stdin.Close()
		})
	}
}
