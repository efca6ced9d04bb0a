package app_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/config"
	"github.com/arbor-run/arbor/internal/permission"
)

type bundle struct {
	app *app.App
	env map[string]string
	ws  string
}

func setup(t *testing.T, env map[string]string) *bundle {
	t.Helper()
	home := t.TempDir()
	if env == nil {
		env = map[string]string{}
	}
	env["XDG_CONFIG_HOME"] = filepath.Join(home, "config")
	env["XDG_STATE_HOME"] = filepath.Join(home, "state")
	env["HOME"] = home
	return setupIn(t, home, env)
}

// setupIn opens an App working in ws with the environment env.
func setupIn(t *testing.T, ws string, env map[string]string) *bundle {
	t.Helper()
	a, err := app.Open(context.Background(), app.Options{Workspace: ws, Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	return &bundle{app: a, env: env, ws: ws}
}

func TestModelIsSharedPerRef(t *testing.T) {
	t.Parallel()
	b := setup(t, map[string]string{"ANTHROPIC_API_KEY": "sk-test-0123456789"})
	m1, err := b.app.Model("anthropic/claude-sonnet-4-5")
	if err != nil {
		t.Fatal(err)
	}
	m2, err := b.app.Model("anthropic/claude-sonnet-4-5")
	if err != nil {
		t.Fatal(err)
	}
	if m1.Provider != m2.Provider || m1.Ref.Price == nil {
		t.Fatalf("one provider per model, with its price: %+v %+v", m1.Ref, m2.Ref)
	}
	if _, err := b.app.Model("nowhere/model"); err == nil {
		t.Fatal("an unknown provider must be refused")
	}
}

func TestNoModelThenSetEnvAndReload(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	if _, err := b.app.Model(""); !errors.Is(err, config.ErrNoModel) {
		t.Fatalf("want ErrNoModel, got %v", err)
	}
	b.app.SetEnv("ANTHROPIC_API_KEY", "sk-from-client-0123")
	if err := b.app.Reload(); err != nil {
		t.Fatal(err)
	}
	m, err := b.app.Model("")
	if err != nil || !strings.HasPrefix(m.Ref.Ref, "anthropic/") {
		t.Fatalf("after SetEnv the key is used: %+v %v", m.Ref, err)
	}
}

func TestSessionsAndSocketPath(t *testing.T) {
	t.Parallel()
	b := setup(t, map[string]string{"OPENAI_API_KEY": "sk-openai-0123456789"})
	s, err := b.app.NewSession(context.Background(), app.SessionOptions{Model: "openai/gpt-5", Title: "t"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(s.Tools.Names()[0], "read_file") {
		t.Fatalf("tools %v", s.Tools.Names())
	}
	again, err := b.app.ResumeSession(context.Background(), s.ID, app.SessionOptions{})
	if err != nil || again.Model.Ref.Ref != "openai/gpt-5" {
		t.Fatalf("resume keeps the session's model: %+v %v", again, err)
	}
	if p := b.app.AnswerSocket(strings.Repeat("x", 200)); len(p) >= 108 {
		t.Fatalf("socket path too long for a unix socket: %d", len(p))
	}
}

// TestReloadWhileReading: protocols read the configuration while a
// reload replaces it (stream-json's auth flow, reload_config). Each reader
// gets a whole snapshot; under -race this once reported App.Config being
// written while read.
func TestReloadWhileReading(t *testing.T) {
	t.Parallel()
	b := setup(t, map[string]string{"ANTHROPIC_API_KEY": "sk-test-0123456789"})
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				cfg := b.app.Config()
				if _, err := cfg.DefaultModelRef(); err != nil {
					t.Error(err)
					return
				}
				_ = len(cfg.Providers)
			}
		})
	}
	for range 50 {
		if err := b.app.Reload(); err != nil {
			t.Fatal(err)
		}
		if _, err := b.app.Model(""); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
}

// TestOpenRefusesAWorkspaceThatIsNoDirectory: a missing workspace or a
// file is ErrUsage, and no store is created for it.
func TestOpenRefusesAWorkspaceThatIsNoDirectory(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	file := filepath.Join(home, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"XDG_CONFIG_HOME": filepath.Join(home, "config"), "XDG_STATE_HOME": filepath.Join(home, "state"), "HOME": home}
	for ws, want := range map[string]string{
		file:                          "workspace " + file + " is not a directory",
		filepath.Join(home, "absent"): "workspace " + filepath.Join(home, "absent") + " does not exist",
	} {
		_, err := app.Open(context.Background(), app.Options{Workspace: ws, Getenv: func(k string) string { return env[k] }})
		if !errors.Is(err, app.ErrUsage) || !strings.Contains(err.Error(), want) {
			t.Errorf("Open(%s) = %v; want ErrUsage saying %q", ws, err, want)
		}
	}
	if _, err := os.Stat(env["XDG_STATE_HOME"]); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the state directory was created (%v)", err)
	}
}

// TestBadModeNamesItsLayer: a permission mode arbor does not know is a
// configuration error naming the layer that set it, as every other field's
// is (the mode's named none).
func TestBadModeNamesItsLayer(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	for source, env := range map[string]map[string]string{
		"environment (ARBOR_MODE)": {"ARBOR_MODE": "sideways"},
		"flag --mode":              {},
	} {
		env["XDG_CONFIG_HOME"], env["XDG_STATE_HOME"], env["HOME"] = filepath.Join(home, "config"), filepath.Join(home, "state"), home
		o := app.Options{Workspace: home, Getenv: func(k string) string { return env[k] }}
		if env["ARBOR_MODE"] == "" {
			o.Overrides.Mode = "sideways"
		}
		_, err := app.Open(context.Background(), o)
		var ve *config.ValidationError
		if !errors.As(err, &ve) || ve.Field != "mode" || ve.Source != source || !errors.Is(err, permission.ErrInvalidMode) {
			t.Errorf("mode from %s: %v; want a ValidationError of mode from it", source, err)
		}
	}
}
