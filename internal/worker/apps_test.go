package worker

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/config"
	"github.com/arbor-run/arbor/internal/store"
)

// TestTurnsAppsAreClosedWhenIdle: the App a run's handed-out turns work
// in (a view of the run's workspace) is kept while turns use it and for
// appIdle after, then closed, its sandbox's temporary directory with
// it; an App a turn still uses is kept however old; and two first turns
// of a run at once share one App, the other closed at once. Before, an
// App was dropped from the map but never closed: a worker left a
// directory behind per run whose turns it ran. (Not parallel: it counts
// the directories under its own TMPDIR.)
func TestTurnsAppsAreClosedWhenIdle(t *testing.T) {
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
	ctx := context.Background()
	for _, id := range []string{"r1", "r2", "r3"} {
		ws := filepath.Join(home, id)
		if err := os.MkdirAll(ws, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := a.Store.CreateRun(ctx, store.Run{ID: id, Goal: "g", Status: store.RunRunning, Model: "m", Workspace: ws}); err != nil {
			t.Fatal(err)
		}
	}
	sandboxes := func() int {
		t.Helper()
		m, err := filepath.Glob(filepath.Join(tmp, "arbor-sandbox-*"))
		if err != nil {
			t.Fatal(err)
		}
		return len(m)
	}
	w := &Worker{a: a, apps: map[string]*runApp{}}
	turn := func(id string) (*runApp, func()) {
		t.Helper()
		v, release, err := w.appFor(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if v.app.Sandbox() == nil {
			t.Fatalf("run %s: no sandbox (%s)", id, v.app.SandboxStatus())
		}
		return v, release
	}
	age := func(id string) {
		w.mu.Lock()
		w.apps[id].used = time.Now().Add(-2 * appIdle)
		w.mu.Unlock()
	}
	base := sandboxes() // the root's own

	v1, release1 := turn("r1")
	again, releaseAgain := turn("r1")
	if again != v1 {
		t.Fatal("a second turn of r1 got an App of its own")
	}
	releaseAgain()
	age("r1")
	turn("r2") // r1 is old, but a turn still uses it
	if _, ok := w.apps["r1"]; !ok || sandboxes() != base+2 {
		t.Fatalf("r1 in use: kept %v, %d sandbox directories (want %d)", ok, sandboxes(), base+2)
	}
	release1()
	age("r1")
	turn("r3")
	if _, ok := w.apps["r1"]; ok {
		t.Fatal("r1, idle past appIdle, is still kept")
	}
	if got := sandboxes(); got != base+2 {
		t.Fatalf("r1 closed, r2 and r3 open: %d sandbox directories, want %d", got, base+2)
	}

	// Two first turns of a run at once: one App is kept, the other closed.
	var wg sync.WaitGroup
	apps := make([]*runApp, 8)
	for i := range apps {
		wg.Go(func() {
			v, release, err := w.appFor(ctx, "r1")
			if err != nil {
				t.Error(err)
				return
			}
			v.app.Sandbox()
			apps[i] = v
			release()
		})
	}
	wg.Wait()
	for _, v := range apps {
		if v != apps[0] {
			t.Fatal("first turns at once got different Apps")
		}
	}
	if got := sandboxes(); got != base+3 {
		t.Fatalf("r1, r2 and r3 open: %d sandbox directories, want %d", got, base+3)
	}
}
