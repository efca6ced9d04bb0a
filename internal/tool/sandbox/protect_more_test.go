package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// ran runs script confined in sb's workspace to its end, and returns the
// call not yet Done: as a background job's, it still holds the sandbox.
func ran(t *testing.T, sb *Sandbox, script string) *Call {
	t.Helper()
	c, err := sb.Wrap(sb.policy.Workspace, []string{"bash", "-c", script})
	must(t, err)
	cmd := exec.Command(c.Argv[0], c.Argv[1:]...)
	cmd.Dir = sb.policy.Workspace
	cmd.Env = append(os.Environ(), c.Env...)
	cmd.ExtraFiles = c.ExtraFiles
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	err = cmd.Start()
	c.Started()
	if err == nil {
		_ = cmd.Wait()
	}
	return c
}

// TestProtectedPathsMore: husky's hooks (core.hooksPath), a .vscode made
// from nothing, and a protected symlink whose target's directory the
// command swaps.
func TestProtectedPathsMore(t *testing.T) {
	t.Parallel()
	b := setup(t)
	gitIn(t, b.ws, "init", "-q")
	gitIn(t, b.ws, "config", "core.hooksPath", ".husky/_")
	must(t, os.MkdirAll(filepath.Join(b.ws, ".husky", "_"), 0o755))
	must(t, os.WriteFile(filepath.Join(b.ws, ".husky", "pre-commit"), []byte("npm test\n"), 0o755))
	must(t, os.MkdirAll(filepath.Join(b.ws, "conf"), 0o755))
	must(t, os.WriteFile(filepath.Join(b.ws, "conf", "mcp.json"), []byte("{}"), 0o644))
	must(t, os.Symlink("conf/mcp.json", filepath.Join(b.ws, ".mcp.json")))

	r := b.run(t, "echo evil > .husky/pre-commit; echo evil > .husky/_/h; mkdir .vscode && echo '{}' > .vscode/tasks.json")
	if got, _ := os.ReadFile(filepath.Join(b.ws, ".husky", "pre-commit")); string(got) != "npm test\n" {
		t.Fatalf(".husky/pre-commit is %q:\n%s", got, r.out)
	}
	if _, err := os.Lstat(filepath.Join(b.ws, ".husky", "_", "h")); err == nil {
		t.Fatalf("a hook was planted in core.hooksPath:\n%s", r.out)
	}
	if _, err := os.Lstat(filepath.Join(b.ws, ".vscode")); err == nil || !strings.Contains(strings.Join(r.blocked, "\n"), ".vscode") {
		t.Fatalf(".vscode made by the command: %v, blocked %q", err, r.blocked)
	}

	r = b.run(t, "mv conf conf2 && mkdir conf && echo evil > conf/mcp.json")
	if got, err := os.ReadFile(filepath.Join(b.ws, ".mcp.json")); err == nil && string(got) != "{}" {
		t.Fatalf(".mcp.json reads %q after its target's directory was swapped; blocked %q", got, r.blocked)
	}
}

// TestWatchedWhileAnotherCallRuns: a call that starts while another
// call's job has made .mcp.json keeps the state from before that call,
// so that when it ends it does not put the job's link back.
func TestWatchedWhileAnotherCallRuns(t *testing.T) {
	t.Parallel()
	b := setup(t)
	first := ran(t, b.sb, "echo '{}' > evil.json && ln -s evil.json .mcp.json")
	second := ran(t, b.sb, "true")
	first.Done()
	second.Done()
	if _, err := os.Lstat(filepath.Join(b.ws, ".mcp.json")); err == nil {
		t.Fatal(".mcp.json, made by a call, is there after both calls ended")
	}
}

// TestMountPointsOfTwoSandboxes: a directory one sandbox made as a mount
// point stays while another sandbox's call binds it, and goes when the
// last call ends; one left by a sandbox whose process died mid-call
// (its lock released, as the kernel does) goes at the next call.
func TestMountPointsOfTwoSandboxes(t *testing.T) {
	t.Parallel()
	b := setup(t)
	other, err := New(Policy{Workspace: b.ws})
	must(t, err)
	t.Cleanup(func() { _ = other.Close() })
	other.mounts = b.sb.mounts
	claude := filepath.Join(b.ws, ".claude")

	first := ran(t, b.sb, "true")
	second := ran(t, other, "true")
	defer second.Done() // a second Done does nothing
	first.Done()
	if _, err := os.Lstat(claude); err != nil {
		t.Fatal(".claude was removed while another sandbox's call had it bound")
	}
	second.Done()
	if _, err := os.Lstat(claude); err == nil {
		t.Fatal(".claude is left after the last call")
	}

	killed := ran(t, b.sb, "true")
	b.sb.closeLock() // as the kernel does when the process dies
	b.sb.mu.Lock()
	b.sb.made = nil // and nothing of it removes what it made
	b.sb.mu.Unlock()
	killed.Done()
	if _, err := os.Lstat(claude); err != nil {
		t.Fatal(".claude was not made")
	}
	ran(t, other, "true").Done()
	if _, err := os.Lstat(claude); err == nil {
		t.Fatal(".claude, left by a killed process, is there after the next call")
	}
}
