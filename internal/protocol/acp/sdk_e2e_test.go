//go:build unix

package acp_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
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
	sdkVersion = "2.4.0"
	// driverTimeout bounds one driver run so that a hang fails the test
	// instead of stalling it; it is not a timing assertion.
	driverTimeout = 2 * time.Minute
)

// harness is what every scenario shares: the arbor binary and the driver
// directory with its node_modules.
type harness struct {
	bin, dir string
}

func setupSDK(t *testing.T) *harness {
	t.Helper()
	dir := testutil.NPMPackage(t, filepath.Join("testdata", "sdk-e2e"))
	b, err := os.ReadFile(filepath.Join(dir, "node_modules", "@agentclientprotocol", "sdk", "package.json"))
	var pkg struct {
		Version string `json:"version"`
	}
	if err != nil || json.Unmarshal(b, &pkg) != nil || pkg.Version != sdkVersion {
		t.Fatalf("npm ci did not install @agentclientprotocol/sdk %s (%v)", sdkVersion, err)
	}
	bin := filepath.Join(t.TempDir(), "arbor")
	c := exec.Command("go", "build", "-o", bin, "../../../cmd/arbor")
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return &harness{bin: bin, dir: dir}
}

// driveConfig is the driver's ARBOR_ACP_E2E (see drive.mjs).
type driveConfig struct {
	CLI          string            `json:"cli"`
	Args         []string          `json:"args,omitempty"`
	Cwd          string            `json:"cwd"`
	Env          []string          `json:"env"`
	Prompts      []string          `json:"prompts,omitempty"`
	FS           bool              `json:"fs,omitempty"`
	Buffers      map[string]string `json:"buffers,omitempty"`
	SessionID    string            `json:"sessionId,omitempty"`
	WaitPlanDone bool              `json:"waitPlanDone,omitempty"`
	MCPServers   []mcpServer       `json:"mcpServers,omitempty"`
	Terminal     bool              `json:"terminal,omitempty"`
	// Close ends the cancel scenario's prompt with session/close instead
	// of session/cancel.
	Close bool `json:"close,omitempty"`
}

// mcpServer is a stdio server of session/new's mcpServers.
type mcpServer struct {
	Name    string      `json:"name"`
	Command string      `json:"command"`
	Args    []string    `json:"args"`
	Env     []nameValue `json:"env"`
}

type nameValue struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// record is one line the driver printed.
type record struct {
	Driver     string          `json:"driver"`
	SessionID  string          `json:"sessionId"`
	Update     update          `json:"update"`
	Params     json.RawMessage `json:"params"`
	Path       string          `json:"path"`
	Content    string          `json:"content"`
	Buffered   bool            `json:"buffered"`
	StopReason string          `json:"stopReason"`
	What       string          `json:"what"`
	Code       *int            `json:"code"`
	Message    string          `json:"message"`
	Pid        int             `json:"pid"`
	TerminalID string          `json:"terminalId"`
	Args       []string        `json:"args"`
	Alive      bool            `json:"alive"`
	Result     json.RawMessage `json:"result"`
}

// update is a session/update's update, in the fields the tests read.
type update struct {
	SessionUpdate string          `json:"sessionUpdate"`
	Content       json.RawMessage `json:"content"` // a block (chunks) or a list (tool calls)
	ToolCallID    string          `json:"toolCallId"`
	Title         string          `json:"title"`
	Kind          string          `json:"kind"`
	Status        string          `json:"status"`
	Entries       []struct {
		Content string `json:"content"`
		Status  string `json:"status"`
	} `json:"entries"`
	AvailableCommands []struct {
		Name        string `json:"name"`
		Description string `json:"description"`
		Input       *struct {
			Hint string `json:"hint"`
		} `json:"input"`
	} `json:"availableCommands"`
}

// text is a chunk's text.
func (u update) text() string {
	var b struct {
		Text string `json:"text"`
	}
	_ = json.Unmarshal(u.Content, &b)
	return b.Text
}

// diffs are a tool call's diff contents.
func (u update) diffs() []toolDiff {
	var cs []toolDiff
	_ = json.Unmarshal(u.Content, &cs)
	out := cs[:0]
	for _, c := range cs {
		if c.Type == "diff" {
			out = append(out, c)
		}
	}
	return out
}

type toolDiff struct {
	Type    string  `json:"type"`
	Path    string  `json:"path"`
	OldText *string `json:"oldText"`
	NewText string  `json:"newText"`
}

// sdkRun is one driver run.
type sdkRun struct {
	records        []record
	stdout, stderr string
	waitErr        error
}

func (r *sdkRun) fatalf(t *testing.T, format string, args ...any) {
	t.Helper()
	t.Fatalf("%s\n--- driver exit: %v\n--- stdout:\n%s--- stderr:\n%s", fmt.Sprintf(format, args...), r.waitErr, r.stdout, r.stderr)
}

func (r *sdkRun) all(kind string) []record {
	var out []record
	for _, rec := range r.records {
		if rec.Driver == kind {
			out = append(out, rec)
		}
	}
	return out
}

func (r *sdkRun) updates(kind string) []update {
	var out []update
	for _, rec := range r.all("update") {
		if rec.Update.SessionUpdate == kind {
			out = append(out, rec.Update)
		}
	}
	return out
}

// requireDone requires the driver to have ended cleanly, arbor exiting 0
// once its input closed.
func (r *sdkRun) requireDone(t *testing.T) {
	t.Helper()
	if len(r.records) == 0 || r.records[len(r.records)-1].Driver != "done" || r.waitErr != nil {
		r.fatalf(t, "the driver did not end with done")
	}
	exits := r.all("exit")
	if len(exits) != 1 || exits[0].Code == nil || *exits[0].Code != 0 {
		r.fatalf(t, "arbor's exit records = %+v; want one, status 0", exits)
	}
}

func (r *sdkRun) stops() []string {
	var out []string
	for _, rec := range r.all("stop") {
		out = append(out, rec.StopReason)
	}
	return out
}

// env is the arbor process's environment: a home of its own and the
// scripted model server.
func env(home string, srv *llmtest.Server, extra ...string) []string {
	return append([]string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + home,
		"XDG_CONFIG_HOME=" + filepath.Join(home, "config"), "XDG_STATE_HOME=" + filepath.Join(home, "state"),
		"ANTHROPIC_BASE_URL=" + srv.URL, "ANTHROPIC_API_KEY=test-key-123", "ARBOR_MODEL=anthropic/claude-test",
	}, extra...)
}

// workspace makes home/ws.
func workspace(t *testing.T, home string) string {
	t.Helper()
	ws := filepath.Join(home, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	return ws
}

// drive runs `node drive.mjs scenario` with c.
func (h *harness) drive(t *testing.T, scenario string, c driveConfig) *sdkRun {
	t.Helper()
	c.CLI = h.bin
	cfg, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), driverTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "drive.mjs", scenario)
	cmd.Dir = h.dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "ARBOR_ACP_E2E=" + string(cfg)}
	// node and the arbor it spawns share a process group, so a timeout
	// kills both and no arbor outlives the test.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	r := &sdkRun{stdout: stdout.String(), stderr: stderr.String(), waitErr: err}
	if ctx.Err() != nil {
		r.fatalf(t, "node drive.mjs %s did not finish within %v", scenario, driverTimeout)
	}
	sc := bufio.NewScanner(strings.NewReader(r.stdout))
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		var rec record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			r.fatalf(t, "driver line %q: %v", sc.Text(), err)
		}
		r.records = append(r.records, rec)
	}
	return r
}

// firstUserText is the text of a request's first user message.
func firstUserText(req llmtest.Request) string {
	for _, m := range req.Messages {
		if m.Role == llm.RoleUser {
			return m.Text()
		}
	}
	return ""
}

// toolResults are the tool results a request carries.
func toolResults(req llmtest.Request) []llm.ToolResult {
	var out []llm.ToolResult
	for _, m := range req.Messages {
		for _, p := range m.Parts {
			if p.Type == llm.PartToolResult && p.ToolResult != nil {
				out = append(out, *p.ToolResult)
			}
		}
	}
	return out
}
