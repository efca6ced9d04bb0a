package app_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/config"
	"github.com/arbor-run/arbor/internal/permission"
	"github.com/arbor-run/arbor/internal/store"
)

// TestForRun: a stored run works in its own workspace and mode, whatever
// the App it is resumed from; a mode the caller chose is kept; a
// workspace that is gone is a usage error.
func TestForRun(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	here, there := filepath.Join(home, "here"), filepath.Join(home, "there")
	for _, d := range []string{here, there} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	env := map[string]string{"XDG_CONFIG_HOME": filepath.Join(home, "config"), "XDG_STATE_HOME": filepath.Join(home, "state"), "HOME": home}
	a, err := app.Open(context.Background(), app.Options{Workspace: here, Getenv: func(k string) string { return env[k] }, Overrides: config.Overrides{Mode: "default"}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()

	v, release, err := a.ForRun(store.Run{ID: "r1", Workspace: there, Mode: "auto-edit"}, false)
	if err != nil {
		t.Fatal(err)
	}
	if v.Workspace != there || v.Permissions.Mode() != permission.ModeAutoEdit || a.Permissions.Mode() != permission.ModeDefault {
		t.Fatalf("view in %s, mode %s (the caller's %s); want %s in auto-edit, the caller's untouched", v.Workspace, v.Permissions.Mode(), a.Permissions.Mode(), there)
	}
	release()

	v, release, err = a.ForRun(store.Run{ID: "r2", Workspace: here, Mode: "trust"}, true)
	if err != nil {
		t.Fatal(err)
	}
	if v != a || v.Permissions.Mode() != permission.ModeDefault {
		t.Fatalf("same workspace, mode kept: got another App (%v) or mode %s", v != a, v.Permissions.Mode())
	}
	release()

	if _, _, err := a.ForRun(store.Run{ID: "r3", Workspace: filepath.Join(home, "gone")}, false); !errors.Is(err, app.ErrUsage) {
		t.Fatalf("a workspace that is gone: %v; want ErrUsage", err)
	}
}
