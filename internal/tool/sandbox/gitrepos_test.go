package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// gitIn runs git in dir, unconfined, as the user would, and returns its
// output.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=a", "-c", "user.email=a@b", "-c", "protocol.file.allow=always"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v in %s: %v\n%s", args, dir, err, out)
	}
	return string(out)
}

// TestNestedRepositories: the hooks and config of a repository nested in
// the workspace, and of a submodule (whose git dir is in the top .git's
// modules), stay read-only; one a command makes, or puts in place of one,
// loses the hooks and config keys that would run a program, so that the
// user's git, run later outside the sandbox, runs nothing of the
// command's (a `git status` at the top runs a gitlinked repository's
// core.fsmonitor).
func TestNestedRepositories(t *testing.T) {
	t.Parallel()
	b := setup(t)
	lib := filepath.Join(b.outside, "libsrc")
	must(t, os.MkdirAll(lib, 0o755))
	gitIn(t, lib, "init", "-q")
	gitIn(t, lib, "commit", "-q", "--allow-empty", "-m", "lib")
	gitIn(t, b.ws, "init", "-q")
	gitIn(t, b.ws, "commit", "-q", "--allow-empty", "-m", "top")
	gitIn(t, b.ws, "submodule", "add", "-q", lib, "deps/x") // its git dir: .git/modules/deps/x
	nested := filepath.Join(b.ws, "vendor", "lib")
	must(t, os.MkdirAll(nested, 0o755))
	gitIn(t, nested, "init", "-q")
	read := func(p string) string {
		got, _ := os.ReadFile(filepath.Join(b.ws, p))
		return string(got)
	}
	configs := map[string]string{}
	for _, p := range []string{"vendor/lib/.git/config", ".git/modules/deps/x/config", "deps/x/.git", ".git/config"} {
		configs[p] = read(p)
	}
	pwned := filepath.Join(b.outside, "pwned")
	fsmonitor := "git config core.fsmonitor 'touch " + pwned + "; false'"
	hook := "printf '#!/bin/sh\\ntouch " + pwned + "\\n' > %s/hooks/pre-commit; chmod +x %s/hooks/pre-commit"
	hookIn := func(gitdir string) string { return strings.ReplaceAll(hook, "%s", gitdir) }

	for _, c := range []struct {
		name, script string
		gone         []string // paths that must not exist afterwards
		removed      bool     // the call's result names what was removed
	}{
		{name: "nested-hook", script: hookIn("vendor/lib/.git"), gone: []string{"vendor/lib/.git/hooks/pre-commit"}},
		{name: "nested-config", script: "cd vendor/lib && " + fsmonitor},
		{name: "submodule-config", script: "cd deps/x && " + fsmonitor},
		{name: "submodule-hook", script: hookIn(".git/modules/deps/x"), gone: []string{".git/modules/deps/x/hooks/pre-commit"}},
		{name: "submodule-gitfile", script: "cp -r .git/modules/deps/x evil && echo \"gitdir: $PWD/evil\" > deps/x/.git"},
		{name: "nested-gitdir-replaced", removed: true, gone: []string{"vendor/lib/.git-old/hooks/pre-commit", "vendor/lib/.git/hooks/pre-commit"},
			script: "mv vendor/lib/.git vendor/lib/.git-old && git init -q vendor/lib && (cd vendor/lib && " + fsmonitor + ") && " + hookIn("vendor/lib/.git")},
		{name: "submodule-gitdir-replaced", removed: true, gone: []string{".git/modules/deps/x/hooks/pre-commit"},
			script: "mv .git/modules/deps/x .git/modules/deps/y && cp -r .git/modules/deps/y .git/modules/deps/x && (cd deps/x && " + fsmonitor + ") && " + hookIn(".git/modules/deps/x")},
		{name: "new-gitlink", removed: true, gone: []string{"newsub/.git/hooks/pre-commit"},
			script: "git init -q newsub && cd newsub && git -c user.name=a -c user.email=a@b commit -q --allow-empty -m n && " + fsmonitor +
				" && git config alias.st '!touch " + pwned + "' && git config include.path ../../evil.cfg && cd .. && " + hookIn("newsub/.git") + " && git add newsub"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := b.run(t, c.script)
			for p, want := range configs {
				if got := read(p); got != want && !strings.Contains(c.name, "replaced") {
					t.Fatalf("%s: %s is now %q:\n%s", c.script, p, got, r.out)
				}
			}
			for _, p := range c.gone {
				if _, err := os.Lstat(filepath.Join(b.ws, p)); err == nil {
					t.Fatalf("%s: %s exists after the call:\n%s", c.script, p, r.out)
				}
			}
			for _, dir := range []string{b.ws, nested, filepath.Join(b.ws, "deps", "x"), filepath.Join(b.ws, "newsub")} {
				if _, err := os.Stat(dir); err == nil {
					gitIn(t, dir, "status")
					gitIn(t, dir, "config", "--list")
				}
			}
			if _, err := os.Stat(pwned); err == nil {
				t.Fatalf("%s: the user's git ran the command's program:\n%s\nblocked: %q", c.script, r.out, r.blocked)
			}
			if c.removed && !strings.Contains(strings.Join(r.blocked, "\n"), "they were removed") {
				t.Fatalf("%s: blocked %q; want the removed hooks and keys named", c.script, r.blocked)
			}
		})
	}
	t.Run("clone-works", func(t *testing.T) {
		r := b.run(t, "git clone -q deps/x cloned && git -C cloned log --oneline && git -C cloned remote -v")
		if r.code != 0 || !strings.Contains(r.out, "lib") || strings.Contains(strings.Join(r.blocked, "\n"), "cloned") {
			t.Fatalf("a confined clone: exit %d, blocked %q:\n%s", r.code, r.blocked, r.out)
		}
		if out := gitIn(t, filepath.Join(b.ws, "cloned"), "remote", "-v"); !strings.Contains(out, "deps/x") {
			t.Fatalf("the clone's remote was removed: %q", out)
		}
	})
}

// TestNewRepositoryInTheWorkspace: a workspace that is no repository gets
// one from the command (git init); it works, but its hooks and
// program-running config do not outlive the call.
func TestNewRepositoryInTheWorkspace(t *testing.T) {
	t.Parallel()
	b := setup(t)
	pwned := filepath.Join(b.outside, "pwned")
	r := b.run(t, "git init -q . && git config core.hooksPath h && git config core.fsmonitor 'touch "+pwned+"; false' && "+
		"mkdir -p h && printf '#!/bin/sh\\ntouch "+pwned+"\\n' | tee .git/hooks/pre-commit h/pre-commit && chmod +x .git/hooks/pre-commit h/pre-commit")
	if r.code != 0 {
		t.Fatalf("git init: exit %d:\n%s", r.code, r.out)
	}
	gitIn(t, b.ws, "status")
	gitIn(t, b.ws, "commit", "-q", "--allow-empty", "-m", "x")
	if _, err := os.Stat(pwned); err == nil {
		t.Fatalf("the user's git ran the command's program; blocked %q", r.blocked)
	}
	if got := gitIn(t, b.ws, "config", "--list", "--local"); !strings.Contains(got, "core.bare=false") {
		t.Fatalf("the repository's own config was removed: %q", got)
	}
}

// TestSanitizeStaysInTheWorkspace: arbor sanitizes and puts back paths a
// command chose, from outside the sandbox; a symlink put on the way to
// another repository of the user's must not make it lose its hooks or
// config.
func TestSanitizeStaysInTheWorkspace(t *testing.T) {
	t.Parallel()
	b := setup(t)
	victim := filepath.Join(b.outside, "victim")
	must(t, os.MkdirAll(victim, 0o755))
	gitIn(t, victim, "init", "-q")
	gitIn(t, victim, "config", "core.pager", "less")
	hook := filepath.Join(victim, ".git", "hooks", "pre-commit")
	must(t, os.WriteFile(hook, []byte("#!/bin/sh\n"), 0o755))
	nested := filepath.Join(b.ws, "vendor", "lib")
	must(t, os.MkdirAll(nested, 0o755))
	gitIn(t, nested, "init", "-q")
	must(t, os.RemoveAll(filepath.Join(nested, ".git", "hooks"))) // watched, then

	r := b.run(t, "mv vendor/lib vendor/lib-old && ln -s "+victim+" vendor/lib; mkdir evil && echo 'gitdir: "+victim+"/.git' > evil/.git; "+
		"ln -s "+victim+"/.git newgit && mkdir new && echo 'gitdir: ../newgit' > new/.git")
	if _, err := os.Stat(hook); err != nil {
		t.Fatalf("the hook of a repository outside the workspace was removed: %v\n%s\nblocked %q", err, r.out, r.blocked)
	}
	if got := gitIn(t, victim, "config", "core.pager"); got != "less\n" {
		t.Fatalf("the config of a repository outside the workspace lost core.pager (%q); blocked %q", got, r.blocked)
	}
}

// BenchmarkGitScan is the look for nested repositories a confined call
// does twice (as it starts and as it ends) in a workspace shaped like a
// mid-sized project: 10 top directories of 10 of 5 (610 directories in
// all, the scan reads those 3 deep), a .git at the top and two nested
// repositories.
func BenchmarkGitScan(b *testing.B) {
	root := b.TempDir()
	for i := range 10 {
		for j := range 10 {
			for k := range 5 {
				if err := os.MkdirAll(filepath.Join(root, "d"+string(rune('a'+i)), "e"+string(rune('a'+j)), "f"+string(rune('a'+k))), 0o755); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	for _, g := range []string{".git/hooks", "da/ea/.git/hooks", "db/.git/hooks"} {
		if err := os.MkdirAll(filepath.Join(root, g), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	// As in a project checked out a while ago: the scan keeps what it
	// read of directories whose ctime is older than ctimeSlack.
	time.Sleep(ctimeSlack + 100*time.Millisecond)
	for b.Loop() {
		if found := gitScan(root); len(found) != 3 {
			b.Fatalf("found %v", found)
		}
	}
}

// TestScanSeesChangesOfACachedDirectory: what the scan keeps of a
// directory is read again once an entry is added, removed, renamed or
// replaced in it, even when the command puts its mtime back (a
// directory's ctime it cannot set).
func TestScanSeesChangesOfACachedDirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	names := func() string {
		var out []string
		for _, e := range readDirSlack(dir, 0) {
			kind := "file"
			if e.typ.IsDir() {
				kind = "dir"
			}
			out = append(out, e.name+":"+kind)
		}
		return strings.Join(out, ",")
	}
	if got := names(); got != "a:dir" {
		t.Fatalf("first read %s", got)
	}
	before, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		do   func() error
		want string
	}{
		{func() error { return os.Mkdir(filepath.Join(dir, ".git"), 0o755) }, ".git:dir,a:dir"},
		{func() error { return os.Rename(filepath.Join(dir, "a"), filepath.Join(dir, "b")) }, ".git:dir,b:dir"},
		{func() error { return os.Remove(filepath.Join(dir, "b")) }, ".git:dir"},
		{func() error {
			if err := os.Remove(filepath.Join(dir, ".git")); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(dir, ".git"), []byte("gitdir: x\n"), 0o644)
		}, ".git:file"},
	}
	for i, s := range steps {
		if err := s.do(); err != nil {
			t.Fatal(err)
		}
		// The command puts the directory's times back: its ctime moves on.
		if err := os.Chtimes(dir, before.ModTime(), before.ModTime()); err != nil {
			t.Fatal(err)
		}
		if got := names(); got != s.want {
			t.Fatalf("step %d: read %s, want %s", i, got, s.want)
		}
	}
}
