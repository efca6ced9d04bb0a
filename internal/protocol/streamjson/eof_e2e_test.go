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
	defer srv.Close()
	home := t.TempDir()
	ws := filepath.Join(home, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // hang guard
	defer cancel()
	c := exec.CommandContext(ctx, bin, "--output-format", "stream-json", "--input-format", "stream-json", "--verbose",
		"--permission-prompt-tool", "stdio", "--permission-mode", "default")
	c.Dir = ws
	c.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, "config"),
		"XDG_STATE_HOME=" + filepath.Join(home, "state"), "ANTHROPIC_BASE_URL=" + srv.URL, "ANTHROPIC_API_KEY=test-key-123",
		"ARBOR_MODEL=" + sdkModel}
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
	var result map[string]any
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue
		}
		if req, _ := m["request"].(map[string]any); m["type"] == "control_request" && req["subtype"] == "can_use_tool" {
			stdin.Close() // the client goes away without answering
		}
		if m["type"] == "result" {
			result = m
		}
	}
	if err := c.Wait(); err != nil || ctx.Err() != nil {
		t.Fatalf("arbor exited with %v (hang guard: %v); stderr:\n%s", err, ctx.Err(), stderr.String())
	}
	if result == nil {
		t.Fatalf("no result line; stderr:\n%s", stderr.String())
	}
	denials, _ := result["permission_denials"].([]any)
	if result["result"] != "gave up" || len(denials) != 1 {
		t.Fatalf("result %v; want the turn finished with the unanswered call listed as denied", result)
	}
	if _, err := os.Stat(filepath.Join(ws, "ran.txt")); !os.IsNotExist(err) {
		t.Fatal("the unanswered call ran")
	}
}
