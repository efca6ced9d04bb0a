package config

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestSandboxLayers: the user's file sets the sandbox; the project's may
// narrow it but not widen it (each widening ignored with a warning); the
// environment and --sandbox choose the mode; defaults hide the secrets.
func TestSandboxLayers(t *testing.T) {
	t.Parallel()
	b := setup(t)
	writeFile(t, b.userFile(), "sandbox:\n  mode: auto\n  writable: [~/cache]\n  network:\n    allow: [proxy.golang.org]\n  max_processes: 100\n  max_memory: 1GiB\n")
	writeFile(t, b.projectFile(), "sandbox:\n  mode: 'off'\n  writable: [/etc]\n  deny_read: [secrets]\n  network:\n    allow: [evil.example]\n  max_processes: 1000\n  max_memory: 2GiB\n")
	c := b.mustLoad(t, Overrides{})
	equal(t, "mode", c.Sandbox.Mode, "auto")
	equal(t, "writable", strings.Join(c.Sandbox.Writable, ","), filepath.Join(b.home, "cache"))
	equal(t, "allow", strings.Join(c.Sandbox.Network.Allow, ","), "proxy.golang.org")
	equal(t, "max processes", c.Sandbox.MaxProcesses, 100)
	equal(t, "max memory", c.Sandbox.MaxMemory, "1GiB")
	warned := strings.Join(c.Warnings(), "\n")
	for _, key := range []string{"mode: off", "writable", "network.allow", "max_processes", "max_memory"} {
		if !strings.Contains(warned, "sandbox."+key+" is ignored") {
			t.Errorf("no warning for the project's sandbox.%s:\n%s", key, warned)
		}
	}
	deny := c.SandboxDenyRead()
	for _, want := range []string{filepath.Join(b.home, ".ssh"), filepath.Join(b.home, ".config", "arbor"),
		filepath.Join(b.home, ".local", "state", "arbor"), filepath.Join(b.workspace, "secrets")} {
		if !slices.Contains(deny, want) {
			t.Errorf("deny list lacks %s: %v", want, deny)
		}
	}

	b.env["ARBOR_SANDBOX"] = "required"
	equal(t, "env mode", b.mustLoad(t, Overrides{}).Sandbox.Mode, "required")
	equal(t, "flag mode", b.mustLoad(t, Overrides{Sandbox: "off"}).Sandbox.Mode, "off")
	if _, err := b.load(Overrides{Sandbox: "on"}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "off, auto or required") {
		t.Fatalf("--sandbox on: %v; want an invalid config naming the modes", err)
	}
}

// TestSandboxDefault: with no layer setting it, the mode is the caller's
// default, and off when the caller gives none.
func TestSandboxDefault(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c, err := Load(LoadOptions{Workspace: b.workspace, Getenv: b.getenv})
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "no default", c.Sandbox.Mode, "off")
	c, err = Load(LoadOptions{Workspace: b.workspace, Getenv: b.getenv, SandboxDefault: "auto"})
	if err != nil {
		t.Fatal(err)
	}
	equal(t, "command default", c.Sandbox.Mode, "auto")
}

// TestSandboxLimitsNarrow: a project file may lower the limits below the
// defaults but not raise them or turn them off (0); a size that is no
// size is an invalid config naming the key.
func TestSandboxLimitsNarrow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	writeFile(t, b.projectFile(), "sandbox:\n  max_processes: 64\n  max_memory: 256MiB\n")
	c := b.mustLoad(t, Overrides{})
	equal(t, "narrowed processes", c.Sandbox.MaxProcesses, 64)
	equal(t, "narrowed memory", c.Sandbox.MaxMemory, "256MiB")

	writeFile(t, b.projectFile(), "sandbox:\n  max_processes: 0\n  max_memory: 1000TiB\n")
	c = b.mustLoad(t, Overrides{})
	equal(t, "processes 0 from a project", c.Sandbox.MaxProcesses, 0)
	equal(t, "memory above the default from a project", c.Sandbox.MaxMemory, "")
	warned := strings.Join(c.Warnings(), "\n")
	for _, key := range []string{"max_processes", "max_memory"} {
		if !strings.Contains(warned, "sandbox."+key+" is ignored") {
			t.Errorf("no warning for the project's sandbox.%s:\n%s", key, warned)
		}
	}

	writeFile(t, b.userFile(), "sandbox:\n  max_memory: lots\n")
	writeFile(t, b.projectFile(), "")
	if _, err := b.load(Overrides{}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "sandbox.max_memory") {
		t.Fatalf("max_memory: lots: %v; want an invalid config naming the key", err)
	}
}

// TestAddDirs: directories a launching program adds (--add-dir) are
// absolute roots and writable roots of the sandbox; one that is not a
// directory is a config error naming it.
func TestAddDirs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	extra := t.TempDir()
	c := b.mustLoad(t, Overrides{AddDirs: []string{extra}})
	equal(t, "add dirs", strings.Join(c.AddDirs, ","), extra)
	if !slices.Contains(c.Sandbox.Writable, extra) {
		t.Fatalf("sandbox writable %v lacks %s", c.Sandbox.Writable, extra)
	}
	missing := filepath.Join(extra, "missing")
	_, err := b.load(Overrides{AddDirs: []string{missing}})
	var ve *ValidationError
	if !errors.As(err, &ve) || ve.Field != "add_dirs" || !strings.Contains(err.Error(), missing) {
		t.Fatalf("err = %v, want a validation error of add_dirs naming %s", err, missing)
	}
}
