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

	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/testutil"
)

// The Qwen Code SDK's harness: testdata/qwen-sdk holds the pinned SDK and
// drive.mjs, which runs query() with pathToQwenExecutable set to the arbor
// binary (or, when recording, to the real qwen CLI of testdata/qwen-code),
// on the scripted model server's OpenAI endpoint.

const (
	qwenSDKVersion = "0.1.14"
	// qwenModel is the scripted model's name, as the qwen CLI takes it
	// (OPENAI_MODEL) and reports it.
	qwenModel = "qwen-test"
)

type qwenHarness struct {
	bin       string // the CLI query() runs: arbor's binary or qwen's cli.js
	driverDir string
	real      bool // bin is the real qwen CLI
}

func setupQwen(t *testing.T) *qwenHarness {
	t.Helper()
	dir := testutil.NPMPackage(t, filepath.Join("testdata", "qwen-sdk"))
	b, err := os.ReadFile(filepath.Join(dir, "node_modules", "@qwen-code", "sdk", "package.json"))
	var pkg struct {
		Version string `json:"version"`
	}
	if err != nil || json.Unmarshal(b, &pkg) != nil || pkg.Version != qwenSDKVersion {
		t.Fatalf("npm ci did not install @qwen-code/sdk %s (%v)", qwenSDKVersion, err)
	}
	bin := filepath.Join(t.TempDir(), "arbor")
	runCmd(t, ".", "go", "build", "-o", bin, "../../../cmd/arbor")
	return &qwenHarness{bin: bin, driverDir: dir}
}

// realQwen installs the real qwen CLI (pinned in testdata/qwen-code) and
// returns a harness that runs it; only recording uses it.
func realQwen(t *testing.T, h *qwenHarness) *qwenHarness {
	t.Helper()
	// `npm ci` refuses this lock file: the mirror has no darwin builds of
	// an optional dependency, so the lock cannot list them. npm install
	// keeps to the lock's versions of everything it does list.
	dir := t.TempDir()
	for _, name := range []string{"package.json", "package-lock.json"} {
		b, err := os.ReadFile(filepath.Join("testdata", "qwen-code", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	runCmd(t, dir, "npm", "install", "--no-audit", "--no-fund")
	cli := filepath.Join(dir, "node_modules", "@qwen-code", "qwen-code", "cli.js")
	if _, err := os.Stat(cli); err != nil {
		t.Fatalf("the qwen CLI is not installed: %v", err)
	}
	return &qwenHarness{bin: cli, driverDir: h.driverDir, real: true}
}

// qwenOptions are drive.mjs's settings (see its header).
type qwenOptions struct {
	Prompt     string         `json:"prompt,omitempty"`
	Options    map[string]any `json:"options,omitempty"`
	CanUseTool string         `json:"canUseTool,omitempty"`
	Interrupt  string         `json:"interrupt,omitempty"`
	Controls   []string       `json:"controls,omitempty"`
	Stream     bool           `json:"stream,omitempty"`
	Model      string         `json:"model,omitempty"`
	MCP        bool           `json:"mcp,omitempty"`
}

type qwenConfig struct {
	CLI string            `json:"cli"`
	Cwd string            `json:"cwd"`
	Env map[string]string `json:"env"`
	qwenOptions
}

// qwenRun is what one driver run printed.
type qwenRun struct {
	home, workspace string
	lines           []map[string]any // every line, messages and driver records
	stdout, stderr  string
	waitErr         error
}

// run drives h's CLI in home (whose workspace is home/workspace; runs
// sharing a home share stored sessions) against srv. goAhead, when set,
// is waited for before the driver's interrupt (interrupt "go").
func (h *qwenHarness) run(t *testing.T, home string, srv *llmtest.Server, o qwenOptions, goAhead func()) *qwenRun {
	t.Helper()
	ws := filepath.Join(home, "workspace")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	// The real CLI reads its auth type from settings.json; both read the
	// OpenAI variables, as a qwen user sets them.
	qdir := filepath.Join(home, ".qwen")
	if err := os.MkdirAll(qdir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(qdir, "settings.json"), []byte(`{"security":{"auth":{"selectedType":"openai"}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{
		"HOME":            home,
		"XDG_CONFIG_HOME": filepath.Join(home, "config"),
		"XDG_STATE_HOME":  filepath.Join(home, "state"),
		"OPENAI_API_KEY":  "test-key-123",
		"OPENAI_BASE_URL": srv.URL + "/v1",
		"OPENAI_MODEL":    qwenModel,
	}
	cfg, err := json.Marshal(qwenConfig{CLI: h.bin, Cwd: ws, Env: env, qwenOptions: o})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), sdkDriverTimeout)
	defer cancel()
	c := exec.CommandContext(ctx, "node", "drive.mjs")
	c.Dir = h.driverDir
	// The SDK merges options.env over the driver's own environment: keep
	// that to what node needs, so that nothing of the test's leaks in.
	c.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "ARBOR_QWEN_E2E=" + string(cfg)}
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
	r := &qwenRun{home: home, workspace: ws, stdout: stdout.String(), stderr: stderr.String(), waitErr: waitErr}
	if ctx.Err() != nil {
		r.fatalf(t, "node drive.mjs did not finish within %v", sdkDriverTimeout)
	}
	sc := bufio.NewScanner(strings.NewReader(r.stdout))
	sc.Buffer(make([]byte, 0, 64*1024), 16<<20)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			r.fatalf(t, "the driver printed a line that is not JSON: %s", sc.Bytes())
		}
		r.lines = append(r.lines, m)
	}
	return r
}

func (r *qwenRun) fatalf(t *testing.T, format string, args ...any) {
	t.Helper()
	t.Fatalf("%s\n--- driver exit: %v\n--- stdout:\n%s--- stderr:\n%s", fmt.Sprintf(format, args...), r.waitErr, r.stdout, r.stderr)
}

// messages are the lines query() yielded; driver(kind) the driver's
// records of that kind.
func (r *qwenRun) messages() []map[string]any {
	var out []map[string]any
	for _, m := range r.lines {
		if m["driver"] == nil {
			out = append(out, m)
		}
	}
	return out
}

func (r *qwenRun) driver(kind string) []map[string]any {
	var out []map[string]any
	for _, m := range r.lines {
		if m["driver"] == kind {
			out = append(out, m)
		}
	}
	return out
}

// requireDone requires that the iterator ended without throwing.
func (r *qwenRun) requireDone(t *testing.T) {
	t.Helper()
	if len(r.driver("done")) != 1 || r.waitErr != nil {
		r.fatalf(t, "the driver did not end with done (exit %v)", r.waitErr)
	}
}

// find returns the first message pred accepts.
func (r *qwenRun) find(t *testing.T, what string, pred func(m map[string]any) bool) map[string]any {
	t.Helper()
	for _, m := range r.messages() {
		if pred(m) {
			return m
		}
	}
	r.fatalf(t, "the SDK yielded no %s", what)
	return nil
}

// results are the result messages, in order.
func (r *qwenRun) results() []map[string]any {
	var out []map[string]any
	for _, m := range r.messages() {
		if m["type"] == "result" {
			out = append(out, m)
		}
	}
	return out
}

// str reads a string at a dotted path of m.
func str(m map[string]any, path string) string {
	var v any = m
	for _, k := range strings.Split(path, ".") {
		o, ok := v.(map[string]any)
		if !ok {
			return ""
		}
		v = o[k]
	}
	s, _ := v.(string)
	return s
}

func isType(typ, sub string) func(m map[string]any) bool {
	return func(m map[string]any) bool { return m["type"] == typ && (sub == "" || m["subtype"] == sub) }
}
