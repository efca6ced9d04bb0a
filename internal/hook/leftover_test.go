package hook_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/hook"
)

// TestHookLeavingAChildHoldingStdout: a hook that answers and exits but
// leaves a background child holding its stdout open (a daemon it
// started, "cmd &") does not hold the agent past the grace period for
// the pipes (two seconds): its answer counts, and nothing is reported.
func TestHookLeavingAChildHoldingStdout(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	h := &hook.Command{Dir: dir, Command: `echo '{"decision":"block","reason":"no rm here"}'; sleep 300 & echo $! > ` + pidFile + `; exit 0`}
	start := time.Now()
	out, err := h.Call(t.Context(), hook.Input{HookEventName: "PreToolUse", ToolName: "shell", ToolInput: json.RawMessage(`{"command":"rm -rf x"}`)})
	if err != nil || out.Decision != "block" || out.Reason != "no rm here" || len(out.Notes) != 0 {
		t.Fatalf("out %+v, err %v; want the hook's block, and no report", out, err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("the hook's leftover child held the agent %s", d)
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	_ = syscall.Kill(pid, syscall.SIGKILL) // a daemon the hook meant to leave running; not the test's to keep
}
