package config

import (
	"os"
	"os/user"
	"path/filepath"
	"strings"
)

// ConfigHome is $XDG_CONFIG_HOME, or ~/.config when it is unset or not
// absolute (as the XDG spec requires); "" when no home directory is known.
// getenv nil = os.Getenv.
func ConfigHome(getenv func(string) string) string {
	return xdgDir(getenv, "XDG_CONFIG_HOME", ".config")
}

// StateHome is $XDG_STATE_HOME, or ~/.local/state when it is unset or not
// absolute; "" when no home directory is known. getenv nil = os.Getenv.
func StateHome(getenv func(string) string) string {
	return xdgDir(getenv, "XDG_STATE_HOME", filepath.Join(".local", "state"))
}

func xdgDir(getenv func(string) string, name, fallback string) string {
	if getenv == nil {
		getenv = os.Getenv
	}
	if d := getenv(name); filepath.IsAbs(d) {
		return filepath.Clean(d)
	}
	home := homeDir(getenv)
	if home == "" {
		return ""
	}
	return filepath.Join(home, fallback)
}

// homeDir is $HOME, or the account's home directory when HOME is unset
// (services started without an environment).
func homeDir(getenv func(string) string) string {
	if h := getenv("HOME"); h != "" {
		return h
	}
	if u, err := user.Current(); err == nil {
		return u.HomeDir
	}
	return ""
}

// Workspace is the absolute project directory Load was given; "" if none.
func (c *Config) Workspace() string { return c.workspace }

// StoreURL is Store when it is a database URL (postgres://…), else "".
func (c *Config) StoreURL() string {
	if isURL(c.Store) {
		return c.Store
	}
	return ""
}

// DBPath is the SQLite database file: Store when it is a file path, else
// $XDG_STATE_HOME/arbor/arbor.db. A relative Store is resolved against the
// workspace, "~/" against the home directory.
func (c *Config) DBPath() string {
	if c.Store != "" && !isURL(c.Store) {
		return c.absPath(c.Store)
	}
	state := c.stateHome
	if state == "" {
		state = StateHome(c.env)
	}
	return filepath.Join(state, "arbor", "arbor.db")
}

// UserPermissionsFile is $XDG_CONFIG_HOME/arbor/permissions.yaml, the
// user-scope rule file of internal/permission; "" when no config home is
// known.
func (c *Config) UserPermissionsFile() string { return c.inConfigHome("permissions.yaml") }

// ProjectPermissionsFile is <workspace>/.arbor/permissions.yaml, the
// project-scope rule file; "" without a workspace.
func (c *Config) ProjectPermissionsFile() string { return c.inWorkspace("permissions.yaml") }

// ProjectRoleRulesFile is <workspace>/.arbor/agents/<role>.yaml, the
// project-scope rules of a main-agent role (internal/permission's role
// rule file); "" without a workspace.
func (c *Config) ProjectRoleRulesFile(role string) string {
	return c.inWorkspace(filepath.Join("agents", role+".yaml"))
}

// UserRoleRulesFile is $XDG_CONFIG_HOME/arbor/agents/<role>.yaml, the
// user-scope rules of a main-agent role; "" when no config home is known.
func (c *Config) UserRoleRulesFile(role string) string {
	return c.inConfigHome(filepath.Join("agents", role+".yaml"))
}

func (c *Config) inConfigHome(name string) string {
	home := c.configHome
	if home == "" {
		home = ConfigHome(c.env)
	}
	if home == "" {
		return ""
	}
	return filepath.Join(home, "arbor", name)
}

func (c *Config) inWorkspace(name string) string {
	if c.workspace == "" {
		return ""
	}
	return filepath.Join(c.workspace, ".arbor", name)
}

// isURL tells a database URL ("postgres://…") from a file path.
func isURL(s string) bool { return strings.Contains(s, "://") }

// absPath expands a leading "~" and resolves a relative path against the
// workspace, or the current directory when there is none.
func (c *Config) absPath(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if home := homeDir(c.env); home != "" {
			p = filepath.Join(home, p[1:])
		}
	}
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	if c.workspace != "" {
		return filepath.Join(c.workspace, p)
	}
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}

// UserDir is arbor's directory under the config home
// ($XDG_CONFIG_HOME/arbor), where the user-level project files live
// (AGENTS.md, skills/, commands/, settings.json); "" when no home is known.
func (c *Config) UserDir() string { return c.inConfigHome("") }

// Home is the user's home directory as the environment gives it; "" when
// none is known.
func (c *Config) Home() string { return homeDir(c.env) }
