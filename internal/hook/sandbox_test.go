//go:build linux

package hook_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/hook"
	"github.com/arbor-run/arbor/internal/tool/sandbox"
)

// TestCommandSandboxed: a hook command given a sandbox runs confined as
// the shell tool's commands are: it writes in the workspace, not beside
// it, and still answers by its exit code and stdin.
func TestCommandSandboxed(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	ws, outside := filepath.Join(root, "ws"), filepath.Join(root, "outside")
	for _, d := range []string{ws, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sb, err := sandbox.New(sandbox.Policy{Workspace: ws})
	if err != nil {
		t.Fatalf("%v (bash scripts/test.sh installs bubblewrap)", err)
	}
	t.Cleanup(func() { _ = sb.Close() })
	c := &hook.Command{Dir: ws, Sandbox: func() *sandbox.Sandbox { return sb }, Command: "cat > in.json; echo escaped > " + filepath.Join(outside, "x") +
		" || { echo 'could not write outside' >&2; exit 2; }"}
	out, err := c.Call(t.Context(), hook.Input{HookEventName: "PreToolUse", ToolName: "shell"})
	if err != nil {
		t.Fatal(err)
	}
	if out.Decision != "block" || !strings.HasSuffix(out.Reason, "could not write outside") {
		t.Fatalf("out %+v; want the hook's own block after the sandbox refused its write", out)
	}
	if _, err := os.Stat(filepath.Join(outside, "x")); err == nil {
		t.Fatal("a sandboxed hook wrote outside the workspace")
	}
	if b, err := os.ReadFile(filepath.Join(ws, "in.json")); err != nil || !strings.Contains(string(b), `"hook_event_name":"PreToolUse"`) {
		t.Fatalf("the hook's stdin in the workspace: %q, %v", b, err)
	}
}
