package tool

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/permission"
	"github.com/arbor-run/arbor/internal/tool/sandbox"
)

func TestMain(m *testing.M) {
	sandbox.Main() // the sandbox's helper is this binary, as it is arbor
	os.Exit(m.Run())
}

// newSandbox is a sandbox of ws, closed with t.
func newSandbox(t *testing.T, ws string) *sandbox.Sandbox {
	t.Helper()
	sb, err := sandbox.New(sandbox.Policy{Workspace: ws})
	if err != nil {
		t.Fatalf("%v (bash scripts/test.sh installs bubblewrap)", err)
	}
	t.Cleanup(func() { _ = sb.Close() })
	return sb
}

// TestSandboxedShell: in default mode a sandboxed command runs without
// asking, confined; one that asks to leave the sandbox needs a person.
func TestSandboxedShell(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	ws, outside := filepath.Join(root, "ws"), filepath.Join(root, "outside")
	for _, d := range []string{ws, outside} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	eng, err := permission.New(permission.Options{Mode: permission.ModeDefault, Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	var shell Tool
	for _, tl := range Builtins(BuiltinOptions{Workspace: ws, Sandbox: newSandbox(t, ws)}) {
		if tl.Info().Name == "shell" {
			shell = Guard(tl, eng, nil) // nobody to approve: a call that asks is refused
		}
	}
	if !strings.Contains(string(shell.Info().Schema), `"dangerously_disable_sandbox"`) {
		t.Fatalf("the sandboxed shell's schema has no dangerously_disable_sandbox: %s", shell.Info().Schema)
	}
	call := func(input string) Result {
		return shell.Run(context.Background(), Call{ID: "c", Input: json.RawMessage(input)})
	}

	res := call(`{"command":"echo hi > made.txt && cat made.txt"}`)
	if res.IsError || !strings.Contains(res.Content, "hi") {
		t.Fatalf("a sandboxed write in the workspace, default mode: %+v", res)
	}
	res = call(`{"command":"echo x > ` + outside + `/x"}`)
	if !res.IsError || !strings.Contains(res.Content, "[sandbox: commands may write only in "+ws) {
		t.Fatalf("a write outside: want it refused and explained, got %+v", res)
	}
	if _, err := os.Stat(filepath.Join(outside, "x")); err == nil {
		t.Fatal("the write outside the workspace happened")
	}
	res = call(`{"command":"echo x > ` + outside + `/x","dangerously_disable_sandbox":true}`)
	if !res.IsError || !strings.Contains(res.Content, "approval needed but no one can approve it") {
		t.Fatalf("leaving the sandbox must ask a person: %+v", res)
	}

	// A deny rule still denies a sandboxed command; an ask rule asks.
	if err := eng.AddRule(permission.Rule{Tool: "shell", Pattern: "rm *", Action: permission.Deny, Scope: permission.ScopeSession}); err != nil {
		t.Fatal(err)
	}
	if res := call(`{"command":"rm -f made.txt"}`); !res.IsError || !strings.Contains(res.Content, "permission denied") {
		t.Fatalf("a deny rule: %+v", res)
	}
}

// TestSandboxedCallDiesWithArbor: a process a sandboxed call left running
// in a session of its own dies when arbor is killed with SIGKILL.
func TestSandboxedCallDiesWithArbor(t *testing.T) {
	t.Parallel()
	marker := strconv.Itoa(800000 + os.Getpid()%99999)
	_, kill := startHelper(t, "sandboxed:"+marker)
	waitSleeping(t, marker, true)
	kill()
	waitSleeping(t, marker, false)
}

// waitSleeping waits until a live `sleep marker` process exists (or, with
// want false, none does), failing after hangGuard.
func waitSleeping(t *testing.T, marker string, want bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		if found := sleepingMarker(marker); found == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("sleep %s: want running=%v", marker, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// sleepingMarker reports whether a live `sleep marker` process exists.
func sleepingMarker(marker string) bool {
	ps, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range ps {
		cmd, err := os.ReadFile(filepath.Join(p, "cmdline"))
		if err != nil || !strings.Contains(string(cmd), "sleep\x00"+marker) {
			continue
		}
		if st, err := os.ReadFile(filepath.Join(p, "stat")); err == nil && !strings.Contains(string(st), ") Z ") {
			return true
		}
	}
	return false
}

// TestSandboxedShellOptions: SandboxAsks keeps confined commands asking
// (the schema unchanged), SandboxOnly refuses to leave the sandbox.
func TestSandboxedShellOptions(t *testing.T) {
	t.Parallel()
	ws := t.TempDir()
	eng, err := permission.New(permission.Options{Mode: permission.ModeDefault, Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	sb := newSandbox(t, ws)
	shell := func(o BuiltinOptions) Tool {
		o.Workspace, o.Sandbox = ws, sb
		for _, tl := range Builtins(o) {
			if tl.Info().Name == "shell" {
				return Guard(tl, eng, nil)
			}
		}
		t.Fatal("no shell")
		return nil
	}
	asking := shell(BuiltinOptions{SandboxAsks: true})
	for _, field := range []string{`"command"`, `"dangerously_disable_sandbox"`, `"run_in_background"`} {
		if !strings.Contains(string(asking.Info().Schema), field) {
			t.Fatalf("the asking shell's schema lacks %s: %s", field, asking.Info().Schema)
		}
	}
	res := asking.Run(context.Background(), Call{ID: "c", Input: json.RawMessage(`{"command":"true"}`)})
	if !res.IsError || !strings.Contains(res.Content, "approval needed") {
		t.Fatalf("SandboxAsks: a confined command must ask: %+v", res)
	}
	trusted, err := permission.New(permission.Options{Mode: permission.ModeTrust, Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	var only Tool
	for _, tl := range Builtins(BuiltinOptions{Workspace: ws, Sandbox: sb, SandboxOnly: true}) {
		if tl.Info().Name == "shell" {
			only = Guard(tl, trusted, nil)
		}
	}
	res = only.Run(context.Background(), Call{ID: "c", Input: json.RawMessage(`{"command":"true","dangerously_disable_sandbox":true}`)})
	if !res.IsError || !strings.Contains(res.Content, "only in the sandbox") {
		t.Fatalf("SandboxOnly: leaving the sandbox must be refused even in trust mode: %+v", res)
	}
}
