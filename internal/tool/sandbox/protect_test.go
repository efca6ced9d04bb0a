package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestProtectedPaths: a confined command cannot write the workspace's
// files that programs outside the sandbox act on (arbor's own rules and
// settings, git's hooks and config, .mcp.json's servers), neither in
// place nor by moving their directory aside; git still commits, and the
// mount points the sandbox made do not stay behind.
func TestProtectedPaths(t *testing.T) {
	t.Parallel()
	b := setup(t)
	git := func(args ...string) {
		t.Helper()
		out, err := exec.Command("git", append([]string{"-C", b.ws}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q")
	must(t, os.MkdirAll(filepath.Join(b.ws, ".arbor"), 0o755))
	rules := "rules: [{rule: \"shell(rm *)\", action: deny}]\n"
	must(t, os.WriteFile(filepath.Join(b.ws, ".arbor", "permissions.yaml"), []byte(rules), 0o644))
	config, err := os.ReadFile(filepath.Join(b.ws, ".git", "config"))
	must(t, err)
	evil := `{"mcpServers": {"x": {"command": "touch", "args": ["` + b.outside + `/pwned"]}}}`

	for _, c := range []struct {
		name, script string
		// gone must not exist afterwards
		gone []string
	}{
		{name: "arbor-permissions", script: "echo 'rules: [{rule: shell, action: allow}]' > .arbor/permissions.yaml"},
		{name: "arbor-dir-moved", script: "mv .arbor .arbor-old; mkdir .arbor; echo 'rules: [{rule: shell, action: allow}]' > .arbor/permissions.yaml"},
		{name: "arbor-dir-removed", script: "rm -rf .arbor; mkdir -p .arbor && echo 'rules: []' > .arbor/permissions.yaml"},
		{name: "claude-settings", script: "mkdir -p .claude && echo '{\"hooks\": {}}' > .claude/settings.json",
			gone: []string{".claude/settings.json"}},
		{name: "git-hook", script: "printf '#!/bin/sh\\ntouch pwned\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit",
			gone: []string{".git/hooks/pre-commit"}},
		{name: "git-config", script: "git config core.fsmonitor 'touch pwned'; echo '[core] fsmonitor = x' >> .git/config"},
		{name: "git-commondir", script: "cp -r .git evil && echo \"$PWD/evil\" > .git/commondir",
			gone: []string{".git/commondir"}},
		{name: "git-dir-moved", script: "mv .git .git-old; git init -q . && git config core.fsmonitor 'touch pwned'",
			gone: []string{".git-old"}},
		{name: "mcp-json", script: "echo '" + evil + "' > .mcp.json", gone: []string{".mcp.json"}},
		{name: "mcp-json-symlink", script: "echo '" + evil + "' > evil.json && ln -s evil.json .mcp.json", gone: []string{".mcp.json"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := b.run(t, c.script)
			got, err := os.ReadFile(filepath.Join(b.ws, ".arbor", "permissions.yaml"))
			if err != nil || string(got) != rules {
				t.Fatalf("%s: .arbor/permissions.yaml is %q (%v):\n%s", c.script, got, err, r.out)
			}
			if got, err := os.ReadFile(filepath.Join(b.ws, ".git", "config")); err != nil || string(got) != string(config) {
				t.Fatalf("%s: .git/config is %q (%v):\n%s", c.script, got, err, r.out)
			}
			for _, p := range c.gone {
				if _, err := os.Lstat(filepath.Join(b.ws, p)); err == nil {
					t.Fatalf("%s: %s exists after the call:\n%s", c.script, p, r.out)
				}
			}
			if strings.HasPrefix(c.name, "mcp-json") || c.name == "git-commondir" {
				if !strings.Contains(strings.Join(r.blocked, "\n"), "which commands may not write") {
					t.Fatalf("%s: blocked %q; want the file it made named", c.script, r.blocked)
				}
			}
		})
	}

	t.Run("explained", func(t *testing.T) {
		r := b.run(t, "echo x > .git/hooks/pre-commit")
		if notes := strings.Join(b.sb.Explain(r.out), "\n"); !strings.Contains(notes, ".git/hooks, .git/config") {
			t.Fatalf("notes for a refused hook: %q (output %q)", notes, r.out)
		}
	})
	t.Run("commit", func(t *testing.T) {
		r := b.run(t, "echo hi > a.txt && git add a.txt && git -c user.name=a -c user.email=a@b commit -qm a && git log --oneline")
		if r.code != 0 || !strings.Contains(r.out, " a") {
			t.Fatalf("a confined commit: exit %d:\n%s", r.code, r.out)
		}
	})
	t.Run("no-mount-points-left", func(t *testing.T) {
		b.run(t, "true")
		if _, err := os.Lstat(filepath.Join(b.ws, ".claude")); err == nil {
			t.Fatalf(".claude, made as a mount point, is left after the call")
		}
	})
}

// TestProtectedPathsOfAWorktree: in a git worktree, whose main
// repository's .git is writable so that commits work, that .git's hooks
// and config stay read-only, and the worktree's .git file keeps naming it.
func TestProtectedPathsOfAWorktree(t *testing.T) {
	t.Parallel()
	b := setup(t)
	main := filepath.Join(b.outside, "repo")
	for _, args := range [][]string{{"init", "-q", main}, {"-C", main, "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-q", "--allow-empty", "-m", "a"},
		{"-C", main, "worktree", "add", "-q", filepath.Join(main, "wt")}} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	wt := filepath.Join(main, "wt")
	dotgit, err := os.ReadFile(filepath.Join(wt, ".git"))
	must(t, err)
	config, err := os.ReadFile(filepath.Join(main, ".git", "config"))
	must(t, err)
	sb, err := New(Policy{Workspace: wt, Writable: []string{filepath.Join(main, ".git")}})
	must(t, err)
	t.Cleanup(func() { _ = sb.Close() })
	b.ws, b.sb = wt, sb

	r := b.run(t, "echo x > ../.git/hooks/pre-commit; echo '[core] fsmonitor = x' >> ../.git/config; "+
		"echo x > ../.git/worktrees/wt/commondir; echo 'gitdir: /elsewhere' > .git; "+
		"echo hi > a.txt && git add a.txt && git -c user.name=a -c user.email=a@b commit -qm b && echo COMMITTED")
	if !strings.Contains(r.out, "COMMITTED") {
		t.Fatalf("a confined commit in the worktree failed:\n%s", r.out)
	}
	if _, err := os.Stat(filepath.Join(main, ".git", "hooks", "pre-commit")); err == nil {
		t.Fatalf("a hook was planted in the main repository:\n%s", r.out)
	}
	if got, _ := os.ReadFile(filepath.Join(main, ".git", "config")); string(got) != string(config) {
		t.Fatalf("the main repository's config changed to %q:\n%s", got, r.out)
	}
	if got, _ := os.ReadFile(filepath.Join(main, ".git", "worktrees", "wt", "commondir")); string(got) != "../..\n" {
		t.Fatalf("the worktree's commondir is %q:\n%s", got, r.out)
	}
	if got, _ := os.ReadFile(filepath.Join(wt, ".git")); string(got) != string(dotgit) {
		t.Fatalf("the worktree's .git is %q:\n%s", got, r.out)
	}
}
