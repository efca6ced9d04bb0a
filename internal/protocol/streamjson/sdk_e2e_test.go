//go:build unix

package streamjson_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/testutil"
)

const (
	sdkVersion = "0.3.332"
	// sdkDriverTimeout bounds one driver run so that a hang fails the test
	// instead of stalling it; it is not a timing assertion.
	sdkDriverTimeout = 2 * time.Minute
	sdkModel         = "anthropic/claude-test"
)

// TestSDK drives the built arbor binary through the real Claude Agent SDK
// for TypeScript (pinned in testdata/sdk-e2e/package.json), the way a
// program built on that SDK runs its CLI: query() spawns arbor with the
// SDK's own argv and environment and speaks stream-json to it. The model is
// llmtest over real HTTP. node and npm are required; node_modules is
// installed from the committed lock file into the user cache (testutil.NPMPackage).
func TestSDK(t *testing.T) {
	t.Parallel()
	h := setupSDK(t)

	t.Run("plain", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer(llmtest.Turn{Text: "Hello from arbor"})
		r := h.drive(t, "plain", srv, nil)

		r.requireDone(t)
		init := r.find(t, "a system/init message", func(m sdkMessage) bool { return m.Type == "system" && m.Subtype == "init" })
		if init.SessionID == "" || !strings.Contains(init.Model, "claude-test") {
			r.fatalf(t, "system/init has session_id %q and model %q; want a session id and the model %s", init.SessionID, init.Model, sdkModel)
		}
		r.find(t, `an assistant message with the text "Hello from arbor"`, func(m sdkMessage) bool {
			return m.Type == "assistant" && m.hasBlock(func(b sdkBlock) bool { return b.Type == "text" && b.Text == "Hello from arbor" })
		})
		res := r.result(t)
		if res.Subtype != "success" || res.IsError || res.Result != "Hello from arbor" || res.SessionID != init.SessionID {
			r.fatalf(t, "result = {subtype:%q is_error:%v result:%q session_id:%q}; want success, false, %q, %q",
				res.Subtype, res.IsError, res.Result, res.SessionID, "Hello from arbor", init.SessionID)
		}
		reqs := srv.Requests()
		if len(reqs) != 1 || !strings.Contains(reqs[0].LastUserText(), "Say hello") {
			r.fatalf(t, "model requests = %d, want 1 whose last user text holds the prompt %q", len(reqs), "Say hello")
		}
	})

	t.Run("tool", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer(
			llmtest.Turn{ToolCalls: []llmtest.ToolCall{{ID: "toolu_sdk_1", Name: "Write", Input: map[string]any{"file_path": "made.txt", "content": "x"}}}},
			llmtest.Turn{Text: "Created."},
		)
		r := h.drive(t, "tool", srv, nil)

		r.requireDone(t)
		asked := r.driverEvents("can_use_tool")
		if len(asked) != 1 {
			r.fatalf(t, "canUseTool was called %d times, want once", len(asked))
		}
		var in struct {
			Path    string `json:"file_path"`
			Content string `json:"content"`
		}
		if err := json.Unmarshal(asked[0].Input, &in); err != nil {
			r.fatalf(t, "canUseTool input %s: %v", asked[0].Input, err)
		}
		if asked[0].ToolName != "Write" || in.Path != "made.txt" || asked[0].ToolUseID != "toolu_sdk_1" {
			r.fatalf(t, "canUseTool(%q, file_path %q, toolUseID %q); want Claude Code's Write, made.txt, toolu_sdk_1", asked[0].ToolName, in.Path, asked[0].ToolUseID)
		}
		got, err := os.ReadFile(filepath.Join(r.workspace, "made.txt"))
		if err != nil || string(got) != "x" {
			r.fatalf(t, "made.txt in the workspace = %q, %v; want %q", got, err, "x")
		}
		r.find(t, "an assistant message with the Write tool_use", func(m sdkMessage) bool {
			return m.Type == "assistant" && m.hasBlock(func(b sdkBlock) bool { return b.Type == "tool_use" && b.Name == "Write" && b.ID == "toolu_sdk_1" })
		})
		r.find(t, "a user message with a successful tool_result for toolu_sdk_1", func(m sdkMessage) bool {
			return m.Type == "user" && m.hasBlock(func(b sdkBlock) bool { return b.Type == "tool_result" && b.ToolUseID == "toolu_sdk_1" && !b.IsError })
		})
		res := r.result(t)
		if res.Subtype != "success" || res.IsError || res.Result != "Created." {
			r.fatalf(t, "result = {subtype:%q is_error:%v result:%q}; want success, false, %q", res.Subtype, res.IsError, res.Result, "Created.")
		}
		reqs := srv.Requests()
		if len(reqs) != 2 {
			r.fatalf(t, "model requests = %d, want 2 (the tool call, then its result)", len(reqs))
		}
		if tr := lastToolResult(reqs[1]); tr == nil || tr.CallID != "toolu_sdk_1" || tr.IsError {
			r.fatalf(t, "second model request's last tool result = %+v; want a successful result for toolu_sdk_1", tr)
		}
	})

	t.Run("interrupt", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer(llmtest.Turn{
			Text:  "Once upon a time there was a very long story.",
			Fault: &llmtest.Fault{Kind: llmtest.FaultStall, AfterEvents: 2},
		})
		// The interrupt goes out once the model request is in flight: by
		// then arbor's turn is running, so the interrupt must end it.
		r := h.drive(t, "interrupt", srv, func() { srv.WaitRequests(1) })

		ints := r.driverEvents("interrupted")
		if len(ints) != 1 || ints[0].Reply == nil || ints[0].Reply.StillQueued == nil {
			r.fatalf(t, "q.interrupt() resolved %d times with %+v; want once with {still_queued:[…]}", len(ints), ints)
		}
		res := r.result(t)
		if res.Subtype != "error_during_execution" || !res.IsError || len(res.Errors) == 0 {
			r.fatalf(t, "result = {subtype:%q is_error:%v errors:%q}; want error_during_execution, true, and errors", res.Subtype, res.IsError, res.Errors)
		}
		// The iterator ends once arbor exits after its input closed. Exit
		// status 1 after an error result, as the real CLI does, is reported
		// by the SDK as this error; anything else is a failure.
		if end := r.end(t); end.Driver != "done" && !strings.HasPrefix(end.Message, "Claude Code returned an error result: ") {
			r.fatalf(t, "driver ended with %s %q; want done (arbor exited after the input closed)", end.Driver, end.Message)
		}
		if n := len(srv.Requests()); n != 1 {
			r.fatalf(t, "model requests = %d, want 1 (the interrupted turn is not retried)", n)
		}
	})

	// An interrupt while the client's canUseTool callback still runs: arbor
	// withdraws the request (control_cancel_request), and the SDK aborts
	// the callback's signal, as it does for Claude Code's own.
	t.Run("interrupt-asking", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer(
			llmtest.Turn{ToolCalls: []llmtest.ToolCall{{ID: "toolu_ask_1", Name: "Write", Input: map[string]any{"file_path": "a.txt", "content": "a"}}}},
			llmtest.Turn{Text: "must not be asked"},
		)
		r := h.drive(t, "interrupt-asking", srv, nil)
		if asked := r.driverEvents("can_use_tool"); len(asked) != 1 || asked[0].ToolUseID != "toolu_ask_1" {
			r.fatalf(t, "canUseTool calls = %+v; want one, for toolu_ask_1", asked)
		}
		if aborted := r.driverEvents("aborted"); len(aborted) != 1 || aborted[0].ToolUseID != "toolu_ask_1" || aborted[0].Message != "while open" {
			r.fatalf(t, "aborted callbacks = %+v; want toolu_ask_1's while the session was open (arbor withdrew the request)", aborted)
		}
		res := r.result(t)
		if !res.IsError || !strings.Contains(strings.Join(res.Errors, " "), "interrupted") {
			r.fatalf(t, "result = {subtype:%q is_error:%v errors:%q}; want the turn interrupted", res.Subtype, res.IsError, res.Errors)
		}
		if n := len(srv.Requests()); n != 1 {
			r.fatalf(t, "model requests = %d, want 1 (nothing after the interrupt)", n)
		}
		if _, err := os.Stat(filepath.Join(r.workspace, "a.txt")); err == nil {
			r.fatalf(t, "a.txt was written; the call was never allowed")
		}
	})

	// An interrupt right behind the prompt ends that turn as interrupted
	// (as Claude Code does), whether it came before the turn started (no
	// model call) or just after (the call is cancelled).
	t.Run("interrupt-early", func(t *testing.T) {
		t.Parallel()
		// Slow, so that a turn that did start cannot finish before the
		// interrupt is read (a fast scripted answer raced it in CI).
		srv := llmtest.NewServer(llmtest.Turn{Text: "must not be asked",
			Fault: &llmtest.Fault{Kind: llmtest.FaultSlow, Delay: llmtest.Duration(2 * time.Second)}})
		r := h.drive(t, "interrupt-early", srv, nil)
		if ints := r.driverEvents("interrupted"); len(ints) != 1 {
			r.fatalf(t, "q.interrupt() resolved %d times, want once", len(ints))
		}
		res := r.result(t)
		if res.Subtype != "error_during_execution" || !res.IsError || !strings.Contains(strings.Join(res.Errors, " "), "interrupted") {
			r.fatalf(t, "result = {subtype:%q is_error:%v errors:%q}; want the turn interrupted", res.Subtype, res.IsError, res.Errors)
		}
		if n := len(srv.Requests()); n > 1 {
			r.fatalf(t, "model requests = %d, want at most 1 (the interrupted turn is not retried)", n)
		}
	})

	t.Run("missing-key", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer(llmtest.Turn{Text: "never asked"})
		// The SDK cannot answer auth_required: the turn must fail at once
		// with a result that says what to set, and arbor must exit.
		// Without a base URL, arbor would call the real API, which needs a key.
		r := h.driveEnv(t, "plain", srv, nil, map[string]string{"ANTHROPIC_API_KEY": "", "ANTHROPIC_BASE_URL": ""})

		// As Claude Code's "Not logged in": an error result of subtype
		// success whose text says what to set.
		res := r.result(t)
		if res.Subtype != "success" || !res.IsError || !strings.Contains(res.Result, "ANTHROPIC_API_KEY") {
			r.fatalf(t, "result = {subtype:%q is_error:%v result:%q}; want an error naming ANTHROPIC_API_KEY", res.Subtype, res.IsError, res.Result)
		}
		if end := r.end(t); end.Driver != "done" && !strings.Contains(end.Message, "ANTHROPIC_API_KEY") {
			r.fatalf(t, "driver ended with %s %q; want done or the error result", end.Driver, end.Message)
		}
		for _, m := range r.messages {
			if m.Type == "system" && m.Subtype == "auth_required" {
				r.fatalf(t, "arbor sent auth_required to an SDK client")
			}
		}
		if n := len(srv.Requests()); n != 0 {
			r.fatalf(t, "model requests = %d, want 0", n)
		}
	})
}

// sdkHarness is what every scenario shares: the arbor binary and the
// driver directory with its node_modules.
type sdkHarness struct {
	bin       string
	driverDir string
	// script is the driver run in driverDir; "" = drive.mjs.
	script string
}

func setupSDK(t *testing.T) *sdkHarness {
	t.Helper()
	// The platform packages (optional dependencies) hold the real Claude
	// Code CLI, which this test must never run; leaving them out also saves
	// ~400 MB.
	dir := testutil.NPMPackage(t, filepath.Join("testdata", "sdk-e2e"), "--omit=optional")
	if !sdkInstalled(dir) {
		t.Fatalf("npm ci did not install @anthropic-ai/claude-agent-sdk %s", sdkVersion)
	}
	bin := filepath.Join(t.TempDir(), "arbor") // no .js/.mjs suffix: the SDK executes it directly
	runCmd(t, ".", "go", "build", "-o", bin, "../../../cmd/arbor")
	return &sdkHarness{bin: bin, driverDir: dir}
}

// sdkInstalled reports whether dir's node_modules holds the pinned SDK.
func sdkInstalled(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "node_modules", "@anthropic-ai", "claude-agent-sdk", "package.json"))
	if err != nil {
		return false
	}
	var pkg struct {
		Version string `json:"version"`
	}
	return json.Unmarshal(b, &pkg) == nil && pkg.Version == sdkVersion
}

func runCmd(t *testing.T, dir, name string, args ...string) {
	t.Helper()
	c := exec.Command(name, args...)
	c.Dir = dir
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("%s %s (in %s): %v\n%s", name, strings.Join(args, " "), dir, err, out)
	}
}

// driverConfig is the driver's ARBOR_SDK_E2E.
type driverConfig struct {
	CLI string            `json:"cli"`
	Cwd string            `json:"cwd"`
	Env map[string]string `json:"env"`
	driverOptions
}

// driverOptions configure the "options" scenario (see drive.mjs).
type driverOptions struct {
	Prompt         string         `json:"prompt,omitempty"`
	Options        map[string]any `json:"options,omitempty"`
	CanUseTool     string         `json:"canUseTool,omitempty"`
	PreToolUseDeny string         `json:"preToolUseDeny,omitempty"`
	// RecordHooks adds, for each event named, a hook that records its
	// call and lets everything go on.
	RecordHooks []string `json:"recordHooks,omitempty"`
	// NoManifests makes mcp.mjs's SDK send no manifests of its
	// in-process servers, so they are handshaken over mcp_message.
	NoManifests bool `json:"noManifests,omitempty"`
}

// sdkRun is what one driver run printed.
type sdkRun struct {
	home      string
	workspace string
	messages  []sdkMessage  // what query() yielded, in order
	events    []driverEvent // the driver's own records, in order
	stdout    string
	stderr    string // the driver's and arbor's diagnostics
	waitErr   error
}

// drive runs `node drive.mjs scenario` against srv in a fresh home and
// workspace. With goAhead, a line is written to the driver's stdin once
// goAhead returns (the interrupt scenario waits for it).
func (h *sdkHarness) drive(t *testing.T, scenario string, srv *llmtest.Server, goAhead func()) *sdkRun {
	t.Helper()
	return h.driveEnv(t, scenario, srv, goAhead, nil)
}

// driveOptions runs the "options" scenario with o.
func (h *sdkHarness) driveOptions(t *testing.T, srv *llmtest.Server, o driverOptions) *sdkRun {
	t.Helper()
	return h.run(t, "options", srv, nil, nil, o)
}

// driveEnv is drive with arbor's environment changed: a variable set to
// "" is removed.
func (h *sdkHarness) driveEnv(t *testing.T, scenario string, srv *llmtest.Server, goAhead func(), env map[string]string) *sdkRun {
	t.Helper()
	return h.run(t, scenario, srv, goAhead, env, driverOptions{})
}

func (h *sdkHarness) run(t *testing.T, scenario string, srv *llmtest.Server, goAhead func(), env map[string]string, o driverOptions) *sdkRun {
	t.Helper()
	return h.runIn(t, t.TempDir(), scenario, srv, goAhead, env, o)
}

// runIn is run in the given home, whose workspace is home/workspace:
// runs that share a home share the CLI's stored sessions.
func (h *sdkHarness) runIn(t *testing.T, home, scenario string, srv *llmtest.Server, goAhead func(), env map[string]string, o driverOptions) *sdkRun {
	t.Helper()
	t.Cleanup(srv.Close)
	ws := filepath.Join(home, "workspace")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	arborEnv := map[string]string{
		"PATH":               os.Getenv("PATH"),
		"HOME":               home,
		"XDG_CONFIG_HOME":    filepath.Join(home, "config"),
		"XDG_STATE_HOME":     filepath.Join(home, "state"),
		"ANTHROPIC_BASE_URL": srv.URL,
		"ANTHROPIC_API_KEY":  "test-key-123",
		"ARBOR_MODEL":        sdkModel,
	}
	for k, v := range env {
		if v == "" {
			delete(arborEnv, k)
		} else {
			arborEnv[k] = v
		}
	}
	cfg, err := json.Marshal(driverConfig{CLI: h.bin, Cwd: ws, Env: arborEnv, driverOptions: o})
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), sdkDriverTimeout)
	defer cancel()
	script := h.script
	if script == "" {
		script = "drive.mjs"
	}
	c := exec.CommandContext(ctx, "node", script, scenario)
	c.Dir = h.driverDir
	c.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "ARBOR_SDK_E2E=" + string(cfg)}
	// node and the arbor it spawns share a process group, so a timeout
	// kills both and no arbor outlives the test.
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.Cancel = func() error { return syscall.Kill(-c.Process.Pid, syscall.SIGKILL) }
	c.WaitDelay = 10 * time.Second
	var stdout, stderr bytes.Buffer
	c.Stdout, c.Stderr = &stdout, &stderr
	stdin, err := c.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatalf("start node drive.mjs: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL) })

	signalled := make(chan struct{})
	go func() {
		defer close(signalled)
		defer stdin.Close()
		if goAhead != nil {
			goAhead()
			_, _ = io.WriteString(stdin, "go\n")
		}
	}()
	waitErr := c.Wait()
	srv.Close() // releases goAhead when the driver ended before the model was asked
	<-signalled

	r := &sdkRun{home: home, workspace: ws, stdout: stdout.String(), stderr: stderr.String(), waitErr: waitErr}
	if ctx.Err() != nil {
		r.fatalf(t, "node %s %s did not finish within %v", script, scenario, sdkDriverTimeout)
	}
	r.parse(t)
	return r
}

func (r *sdkRun) parse(t *testing.T) {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(r.stdout))
	sc.Buffer(make([]byte, 0, 64*1024), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var probe struct {
			Driver string `json:"driver"`
		}
		if err := json.Unmarshal(line, &probe); err != nil {
			r.fatalf(t, "driver printed a line that is not JSON: %v: %s", err, line)
		}
		if probe.Driver != "" {
			var e driverEvent
			if err := json.Unmarshal(line, &e); err != nil {
				r.fatalf(t, "driver record %s: %v", line, err)
			}
			r.events = append(r.events, e)
			continue
		}
		var m sdkMessage
		if err := json.Unmarshal(line, &m); err != nil {
			// A message of another shape (the real CLI's
			// system/permission_denied has a string message): its kind.
			m = sdkMessage{}
			if err := json.Unmarshal(line, &probe2{&m.Type, &m.Subtype}); err != nil {
				r.fatalf(t, "SDK message %s: %v", line, err)
			}
		}
		r.messages = append(r.messages, m)
	}
	if err := sc.Err(); err != nil {
		r.fatalf(t, "reading driver output: %v", err)
	}
}

// fatalf stops the test with the run's whole transcript and diagnostics.
func (r *sdkRun) fatalf(t *testing.T, format string, args ...any) {
	t.Helper()
	t.Fatalf("%s\n--- driver exit: %v\n--- stdout:\n%s--- stderr:\n%s", fmt.Sprintf(format, args...), r.waitErr, r.stdout, r.stderr)
}

// end returns the driver's final record (done or error).
func (r *sdkRun) end(t *testing.T) driverEvent {
	t.Helper()
	if len(r.events) == 0 {
		r.fatalf(t, "the driver printed no done/error record")
	}
	e := r.events[len(r.events)-1]
	if e.Driver != "done" && e.Driver != "error" {
		r.fatalf(t, "the driver's last record is %q, want done or error", e.Driver)
	}
	return e
}

// requireDone requires that the SDK's iterator ended without throwing and
// the driver exited 0.
func (r *sdkRun) requireDone(t *testing.T) {
	t.Helper()
	if e := r.end(t); e.Driver != "done" || r.waitErr != nil {
		r.fatalf(t, "driver ended with %s %q (exit %v); want done", e.Driver, e.Message, r.waitErr)
	}
}

func (r *sdkRun) driverEvents(kind string) []driverEvent {
	var out []driverEvent
	for _, e := range r.events {
		if e.Driver == kind {
			out = append(out, e)
		}
	}
	return out
}

func (r *sdkRun) find(t *testing.T, what string, pred func(sdkMessage) bool) sdkMessage {
	t.Helper()
	for _, m := range r.messages {
		if pred(m) {
			return m
		}
	}
	r.fatalf(t, "the SDK yielded no %s", what)
	return sdkMessage{}
}

// result returns the last message, which must be the turn's result.
func (r *sdkRun) result(t *testing.T) sdkMessage {
	t.Helper()
	if len(r.messages) == 0 || r.messages[len(r.messages)-1].Type != "result" {
		r.fatalf(t, "the last SDK message is not a result")
	}
	return r.messages[len(r.messages)-1]
}

// probe2 decodes a message's type and subtype only.
type probe2 struct {
	Type    *string `json:"type"`
	Subtype *string `json:"subtype"`
}

// sdkMessage holds the fields of the SDK messages the test looks at.
type sdkMessage struct {
	Type      string   `json:"type"`
	Tools     []string `json:"tools"`
	Mode      string   `json:"permissionMode"`
	KeySource string   `json:"apiKeySource"`
	Sandbox   bool     `json:"sandbox_enabled"`
	Event     *struct {
		Type  string `json:"type"`
		Delta struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"delta"`
	} `json:"event"`
	ModelUsage map[string]struct {
		InputTokens  int64 `json:"inputTokens"`
		OutputTokens int64 `json:"outputTokens"`
	} `json:"modelUsage"`
	Denials []struct {
		ToolName  string `json:"tool_name"`
		ToolUseID string `json:"tool_use_id"`
	} `json:"permission_denials"`
	Subtype   string      `json:"subtype"`
	SessionID string      `json:"session_id"`
	Model     string      `json:"model"`
	IsError   bool        `json:"is_error"`
	Result    string      `json:"result"`
	Errors    []string    `json:"errors"`
	Message   *sdkAPIBody `json:"message"`
}

type sdkAPIBody struct {
	Role  string          `json:"role"`
	Usage json.RawMessage `json:"usage"`
	// Content is a string or an array of blocks.
	Content json.RawMessage `json:"content"`
}

type sdkBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	IsError   bool            `json:"is_error"`
	Content   json.RawMessage `json:"content"` // a tool_result's
}

func (m sdkMessage) hasBlock(pred func(sdkBlock) bool) bool {
	if m.Message == nil {
		return false
	}
	var blocks []sdkBlock
	var text string
	if json.Unmarshal(m.Message.Content, &text) == nil {
		blocks = []sdkBlock{{Type: "text", Text: text}}
	} else if json.Unmarshal(m.Message.Content, &blocks) != nil {
		return false
	}
	for _, b := range blocks {
		if pred(b) {
			return true
		}
	}
	return false
}

// driverEvent is one of the driver's own records.
type driverEvent struct {
	Driver    string          `json:"driver"` // can_use_tool, aborted, interrupted, done or error
	Message   string          `json:"message"`
	ToolName  string          `json:"tool_name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Reply     *struct {
		StillQueued []string `json:"still_queued"`
	} `json:"reply"`
}

// lastToolResult is the last tool result a model request carried.
func lastToolResult(req llmtest.Request) *llm.ToolResult {
	var out *llm.ToolResult
	for _, m := range req.Messages {
		for _, p := range m.Parts {
			if p.Type == llm.PartToolResult && p.ToolResult != nil {
				out = p.ToolResult
			}
		}
	}
	return out
}
