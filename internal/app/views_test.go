package app_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/config"
)

// TestViewsReleaseWhatTheyAcquire: a view (In) owns its sandbox, whose
// private temporary directory is the confined commands' /tmp: the view's
// Close removes it, and the root's Close closes the views still open. A
// worker makes a view per run and an editor one per session, so before,
// when the root held every view's sandbox until it closed, each left a
// directory behind for the life of the process. (Not parallel: it counts
// the directories under its own TMPDIR.)
func TestViewsReleaseWhatTheyAcquire(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	home := t.TempDir()
	env := map[string]string{"XDG_CONFIG_HOME": filepath.Join(home, "config"), "XDG_STATE_HOME": filepath.Join(home, "state"), "HOME": home}
	a, err := app.Open(context.Background(), app.Options{Workspace: home, Getenv: func(k string) string { return env[k] },
		SandboxDefault: "required", Overrides: config.Overrides{Mode: "trust"}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	sandboxes := func() int {
		t.Helper()
		m, err := filepath.Glob(filepath.Join(tmp, "arbor-sandbox-*"))
		if err != nil {
			t.Fatal(err)
		}
		return len(m)
	}
	view := func(name string) *app.App {
		t.Helper()
		dir := filepath.Join(home, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		v, err := a.In(dir)
		if err != nil {
			t.Fatal(err)
		}
		if v.Sandbox() == nil {
			t.Fatalf("view of %s: no sandbox (%s)", name, v.SandboxStatus())
		}
		return v
	}
	base := sandboxes() // the root's own
	for i := range 5 {
		v := view("run" + string(rune('a'+i)))
		if got := sandboxes(); got != base+1 {
			t.Fatalf("view %d open: %d sandbox directories, want %d", i, got, base+1)
		}
		v.Close()
		if got := sandboxes(); got != base {
			t.Fatalf("view %d closed: %d sandbox directories, want %d", i, got, base)
		}
		v.Close() // twice is safe
	}
	view("left")
	view("open")
	if got := sandboxes(); got != base+2 {
		t.Fatalf("two views open: %d sandbox directories, want %d", got, base+2)
	}
	a.Close()
	if got := sandboxes(); got != 0 {
		t.Fatalf("after the root's Close: %d sandbox directories, want none", got)
	}
}
