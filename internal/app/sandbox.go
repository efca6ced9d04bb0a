package app

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/arbor-run/arbor/internal/config"
	"github.com/arbor-run/arbor/internal/tool/sandbox"
)

// Sandbox returns the sandbox that confines the commands of this App's
// workspace, made on first use; nil when the config turns it off or no
// mechanism works here (then commands ask for approval as before; Open
// said so). The App's Close closes it.
func (a *App) Sandbox() *sandbox.Sandbox {
	a.sandboxOnce.Do(func() {
		cfg := a.Config()
		mode, _ := sandbox.ParseMode(cfg.Sandbox.Mode) // validated by config.Load
		if mode == sandbox.Off {
			return
		}
		maxMem, _ := sandbox.ParseSize(cfg.Sandbox.MaxMemory) // validated by config.Load; "" is 0, the default
		sb, err := sandbox.New(sandbox.Policy{
			Workspace:    a.Workspace,
			Writable:     append(gitCommonDirs(a.Workspace), cfg.Sandbox.Writable...),
			DenyRead:     cfg.SandboxDenyRead(),
			Allow:        cfg.Sandbox.Network.Allow,
			MaxProcesses: cfg.Sandbox.MaxProcesses,
			MaxMemory:    maxMem,
		})
		if err != nil {
			a.sandboxErr = err
			return
		}
		a.sandbox = sb
		a.onClose(func() { _ = sb.Close() })
	})
	return a.sandbox
}

// detectSandbox starts finding the sandbox's mechanism (sandbox.Detect,
// cached for the process) unless cfg turns the sandbox off; the channel
// is closed when it is done, and the caller waits for it.
func detectSandbox(cfg *config.Config) <-chan struct{} {
	done := make(chan struct{})
	if mode, _ := sandbox.ParseMode(cfg.Sandbox.Mode); mode == sandbox.Off {
		close(done)
		return done
	}
	go func() {
		defer close(done)
		_, _ = sandbox.Detect() // its error is checkSandbox's to report
	}()
	return done
}

// SandboxStatus says whether commands run confined, for front ends that
// report it (status, system/init): "on", "off", or "unavailable: why".
func (a *App) SandboxStatus() string {
	if a.Sandbox() != nil {
		return "on"
	}
	if a.sandboxErr != nil {
		return "unavailable: " + a.sandboxErr.Error()
	}
	return "off"
}

// checkSandbox runs at Open: in required mode a sandbox that cannot be
// made refuses the start (ErrUsage, exit 2, saying what is missing); in
// auto mode it is said once, as a warning.
func (a *App) checkSandbox() error {
	mode, _ := sandbox.ParseMode(a.Config().Sandbox.Mode)
	if mode == sandbox.Off || a.Sandbox() != nil {
		return nil
	}
	if mode == sandbox.Required {
		return fmt.Errorf("%w: sandbox.mode is required, but %v", ErrUsage, a.sandboxErr)
	}
	a.warnings = append(a.warnings, fmt.Sprintf("%v; shell commands run unconfined and ask for approval (sandbox.mode: auto; off to silence this)", a.sandboxErr))
	return nil
}

// Warnings are what the user should hear about once at start: the
// config's warnings and a sandbox that auto mode could not make.
func (a *App) Warnings() []string {
	return append(append([]string(nil), a.Config().Warnings()...), a.warnings...)
}

// gitCommonDirs is the main repository's .git of a git worktree at ws
// (whose .git is a file naming it): git writes its objects and refs
// there, so a confined git commit in the worktree needs it writable.
func gitCommonDirs(ws string) []string {
	b, err := os.ReadFile(filepath.Join(ws, ".git"))
	if err != nil {
		return nil // a directory, or not a repository
	}
	dir, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:")
	if !ok {
		return nil
	}
	dir = strings.TrimSpace(dir)
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(ws, dir)
	}
	// .git/worktrees/NAME → .git
	common := filepath.Dir(filepath.Dir(filepath.Clean(dir)))
	if fi, err := os.Stat(common); err != nil || !fi.IsDir() {
		return nil
	}
	return []string{common}
}
