//go:build unix

package streamjson_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
)

// TestBinaryEOFWithPendingRequest runs the built binary under Claude
// Code's argv, lets a turn ask can_use_tool, then closes stdin without
// answering: the call is denied (listed in permission_denials), the turn
// ends with its result and the process exits, instead of hanging.
func TestBinaryEOFWithPendingRequest(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "arbor")
	runCmd(t, ".", "go", "build", "-o", bin, "../../../cmd/arbor")
	srv := llmtest.NewServer(
		llmtest.Turn{ToolCalls: []llmtest.ToolCall{{ID: "toolu_e1", Name: "Bash", Input: map[string]any{"command": "echo x > ran.txt"}}}},
		llmtest.Turn{Text: "gave up"},
	)
	home := t.TempDir()
	var result map[string]any
	for _, l := range rawEOF(t, bin, home, srv, nil) {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["type"] == "result" {
			result = m
		}
	}
	if result == nil {
		t.Fatal("no result line")
	}
	denials, _ := result["permission_denials"].([]any)
	if result["result"] != "gave up" || len(denials) != 1 {
		t.Fatalf("result %v; want the turn finished with the unanswered call listed as denied", result)
	}
	if _, err := os.Stat(filepath.Join(home, "workspace", "ran.txt")); !os.IsNotExist(err) {
		t.Fatal("the unanswered call ran")
	}
}

// rawEOF runs bin (arbor or the real Claude Code CLI) in home/workspace
// under the SDK's argv without the SDK: it writes one user message and
// closes stdin when the first can_use_tool request arrives, without
// answering it. It returns the lines bin wrote and fails the test unless
// bin exits 0. env changes the environment ("" removes).
func rawEOF(t *testing.T, bin, home string, srv *llmtest.Server, env map[string]string) []string {
	t.Helper()
	defer srv.Close()
	ws := filepath.Join(home, "workspace")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"PATH": os.Getenv("PATH"), "HOME": home, "XDG_CONFIG_HOME": filepath.Join(home, "config"),
		"XDG_STATE_HOME": filepath.Join(home, "state"), "ANTHROPIC_BASE_URL": srv.URL, "ANTHROPIC_API_KEY": "test-key-123",
		"ARBOR_MODEL": sdkModel}
	for k, v := range env {
		if v == "" {
			delete(vars, k)
		} else {
			vars[k] = v
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // hang guard
	defer cancel()
	c := exec.CommandContext(ctx, bin, "--output-format", "stream-json", "--verbose", "--input-format", "stream-json",
		"--permission-prompt-tool=stdio", "--permission-mode", "default")
	c.Dir = ws
	for k, v := range vars {
		c.Env = append(c.Env, k+"="+v)
	}
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.Cancel = func() error { return syscall.Kill(-c.Process.Pid, syscall.SIGKILL) }
	c.WaitDelay = 10 * time.Second
	stdin, err := c.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	c.Stderr = &stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	_, _ = io.WriteString(stdin, `{"type":"user","message":{"role":"user","content":"run it"},"parent_tool_use_id":null,"session_id":""}`+"\n")
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 0, 64*1024), 16<<20)
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		if req, _ := m["request"].(map[string]any); m["type"] == "control_request" && req["subtype"] == "can_use_tool" {
			stdin.Close() // the client goes away without answering
		}
	}
	stdin.Close()
	if err := c.Wait(); err != nil || ctx.Err() != nil {
		t.Fatalf("%s exited with %v (hang guard: %v); stdout:\n%s\nstderr:\n%s", filepath.Base(bin), err, ctx.Err(), strings.Join(lines, "\n"), stderr.String())
	}
	return lines
}
