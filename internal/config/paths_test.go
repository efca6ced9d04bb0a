package config

import (
	"os"
	"path/filepath"
	"testing"
)

func TestXDGHomes(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name          string
		env           map[string]string
		config, state string
	}{
		{"FromHome", map[string]string{"HOME": "/home/u"}, "/home/u/.config", "/home/u/.local/state"},
		{"FromXDG", map[string]string{"HOME": "/home/u", "XDG_CONFIG_HOME": "/cfg", "XDG_STATE_HOME": "/st/"}, "/cfg", "/st"},
		{"RelativeXDGIgnored", map[string]string{"HOME": "/home/u", "XDG_CONFIG_HOME": "cfg", "XDG_STATE_HOME": "st"}, "/home/u/.config", "/home/u/.local/state"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			getenv := func(k string) string { return tt.env[k] }
			equal(t, "ConfigHome", ConfigHome(getenv), tt.config)
			equal(t, "StateHome", StateHome(getenv), tt.state)
		})
	}
}

func TestPaths(t *testing.T) {
	t.Parallel()

	t.Run("Defaults", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		c := b.mustLoad(t, Overrides{})
		equal(t, "DBPath", c.DBPath(), filepath.Join(b.home, ".local", "state", "arbor", "arbor.db"))
		equal(t, "UserConfigFile", c.UserConfigFile(), b.userFile())
		equal(t, "ProjectConfigFile", c.ProjectConfigFile(), b.projectFile())
		equal(t, "UserPermissionsFile", c.UserPermissionsFile(), filepath.Join(b.home, ".config", "arbor", "permissions.yaml"))
		equal(t, "ProjectPermissionsFile", c.ProjectPermissionsFile(), filepath.Join(b.workspace, ".arbor", "permissions.yaml"))
	})

	t.Run("XDGDirectories", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		cfg := filepath.Join(b.home, "xdg-config")
		state := filepath.Join(b.home, "xdg-state")
		b.env["XDG_CONFIG_HOME"] = cfg
		b.env["XDG_STATE_HOME"] = state
		writeFile(t, filepath.Join(cfg, "arbor", "config.yaml"), "max_turns: 9\n")
		writeFile(t, b.userFile(), "max_turns: 99\n") // ~/.config is not read when XDG_CONFIG_HOME is set
		c := b.mustLoad(t, Overrides{})
		equal(t, "MaxTurns", c.MaxTurns, 9)
		equal(t, "DBPath", c.DBPath(), filepath.Join(state, "arbor", "arbor.db"))
		equal(t, "UserPermissionsFile", c.UserPermissionsFile(), filepath.Join(cfg, "arbor", "permissions.yaml"))
	})

	t.Run("ExplicitHomes", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		cfg, state := t.TempDir(), t.TempDir()
		writeFile(t, filepath.Join(cfg, "arbor", "config.yaml"), "max_turns: 3\n")
		c, err := Load(LoadOptions{Workspace: b.workspace, Getenv: b.getenv, ConfigHome: cfg, StateHome: state})
		if err != nil {
			t.Fatal(err)
		}
		equal(t, "MaxTurns", c.MaxTurns, 3)
		equal(t, "DBPath", c.DBPath(), filepath.Join(state, "arbor", "arbor.db"))
	})

	t.Run("StoreForms", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		for store, want := range map[string]string{
			"/var/lib/arbor.db":            "/var/lib/arbor.db",
			"data/arbor.db":                filepath.Join(b.workspace, "data", "arbor.db"),
			"~/dbs/arbor.db":               filepath.Join(b.home, "dbs", "arbor.db"),
			"postgres://u@db:5432/arbor":   filepath.Join(b.home, ".local", "state", "arbor", "arbor.db"),
			"postgresql://u@db:5432/arbor": filepath.Join(b.home, ".local", "state", "arbor", "arbor.db"),
		} {
			c := b.mustLoad(t, Overrides{Store: store})
			equal(t, "DBPath("+store+")", c.DBPath(), want)
		}
	})

	t.Run("NoWorkspace", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		c, err := Load(LoadOptions{Getenv: b.getenv, Overrides: Overrides{Store: "rel.db"}})
		if err != nil {
			t.Fatal(err)
		}
		cwd, err := os.Getwd()
		if err != nil {
			t.Fatal(err)
		}
		equal(t, "ProjectConfigFile", c.ProjectConfigFile(), "")
		equal(t, "ProjectPermissionsFile", c.ProjectPermissionsFile(), "")
		equal(t, "DBPath", c.DBPath(), filepath.Join(cwd, "rel.db"))
	})

	t.Run("RelativeWorkspaceMadeAbsolute", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		c, err := Load(LoadOptions{Workspace: ".", Getenv: b.getenv})
		if err != nil {
			t.Fatal(err)
		}
		if !filepath.IsAbs(c.Workspace()) {
			t.Fatalf("Workspace = %q, want absolute", c.Workspace())
		}
	})
}
