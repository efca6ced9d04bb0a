package sandbox

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/arbor-run/arbor/internal/permission"
)

// A confined command writes in the workspace, but some files there are
// read later by programs that run unconfined: arbor itself at its next
// start (.arbor/permissions.yaml, .claude/settings.json with its hooks,
// .mcp.json with its servers), git when the user runs it (.git/hooks,
// .git/config, .git/commondir), an editor opening the folder (.vscode),
// a login shell (.bashrc in a workspace that is a home). Writing one is
// a way out of the sandbox, so they are read-only inside, as in Claude
// Code's sandbox runtime (its mandatory deny list) and Codex (.git).
//
// A protected path that exists is bound read-only over itself, which also
// makes it a mount point the command can neither remove nor rename. A
// .git directory is bound over itself first, so that it cannot be moved
// aside and replaced by one of the command's own. A missing .arbor,
// .claude or .git/hooks is made as an empty directory and bound the same
// way, and removed again (if still empty) when the last call ends. A
// missing file cannot be bound without creating it, and an empty
// .mcp.json or .git/commondir would break arbor and git, so those are
// checked when the call ends instead: one the call made is removed, and
// named among what the sandbox blocked. A protected path that is a
// symlink is put back to the link it was when the call ends.

// The protected names are the permission check's sensitive ones
// (permission.SensitiveDirs and SensitiveFiles), at a writable root's
// top: a file tool's write of one asks, a confined command's is refused.
// Of those, madeDirs are made when missing (arbor reads them at its next
// start), newFiles are watched when missing (one the call creates is
// removed), .git is kept as gitDir says, and the others are read-only
// when they exist.
var (
	madeDirs = []string{".arbor", ".claude"}
	newFiles = []string{".mcp.json"}
)

// guard is what one call does to keep the protected paths: the bubblewrap
// arguments, the directories it made, and the paths to check when it ends.
type guard struct {
	args    []string
	made    []string        // directories made as mount points
	watch   map[string]link // path → how it was before the call
	changed []string        // set by check: the paths the call changed
}

// link is a watched path's state before the call: absent, or a symlink
// to target.
type link struct {
	absent bool
	target string
}

// protect is the guard of a call whose writable roots are roots, the
// workspace first.
func protect(roots []string) *guard {
	g := &guard{watch: map[string]link{}}
	for i, r := range roots {
		if isGitDir(r) {
			g.gitDir(r)
			continue
		}
		for _, d := range permission.SensitiveDirs {
			// Only the workspace's own are made: arbor reads them there,
			// and a writable cache directory should not grow an .arbor.
			if d != ".git" {
				g.dir(filepath.Join(r, d), i == 0 && slices.Contains(madeDirs, d))
			}
		}
		for _, f := range permission.SensitiveFiles {
			if slices.Contains(newFiles, f) {
				g.file(filepath.Join(r, f))
			} else {
				g.dir(filepath.Join(r, f), false)
			}
		}
		dotgit := filepath.Join(r, ".git")
		switch fi, err := os.Lstat(dotgit); {
		case err != nil:
		case fi.IsDir():
			g.args = append(g.args, "--bind", dotgit, dotgit) // pinned: it cannot be moved aside
			g.gitDir(dotgit)
		default: // a worktree's .git file names its git dir
			g.file(dotgit)
		}
	}
	return g
}

// gitDir protects what of a git directory makes git run programs.
func (g *guard) gitDir(dir string) {
	g.dir(filepath.Join(dir, "hooks"), true)
	g.file(filepath.Join(dir, "config"))
	g.file(filepath.Join(dir, "commondir"))
	wts, _ := filepath.Glob(filepath.Join(dir, "worktrees", "*"))
	subs, _ := filepath.Glob(filepath.Join(dir, "modules", "*"))
	for _, d := range append(wts, subs...) {
		for _, f := range []string{"config", "config.worktree", "commondir"} {
			if _, err := os.Lstat(filepath.Join(d, f)); err == nil {
				g.file(filepath.Join(d, f))
			}
		}
		if _, err := os.Lstat(filepath.Join(d, "hooks")); err == nil {
			g.dir(filepath.Join(d, "hooks"), false)
		}
	}
}

// dir protects the directory (or file) p, making it when missing and make
// is set.
func (g *guard) dir(p string, make bool) {
	fi, err := os.Lstat(p)
	switch {
	case err == nil && fi.Mode()&os.ModeSymlink != 0:
		g.symlink(p)
	case err == nil:
		g.args = append(g.args, "--ro-bind", p, p)
	case !make:
		g.watch[p] = link{absent: true}
	case os.Mkdir(p, 0o755) == nil:
		g.made = append(g.made, p)
		g.args = append(g.args, "--ro-bind", p, p)
	default: // its parent is missing or read-only: watch it instead
		g.watch[p] = link{absent: true}
	}
}

// file protects the file p: read-only when it exists, watched when not.
func (g *guard) file(p string) {
	fi, err := os.Lstat(p)
	switch {
	case err != nil:
		g.watch[p] = link{absent: true}
	case fi.Mode()&os.ModeSymlink != 0:
		g.symlink(p)
	default:
		g.args = append(g.args, "--ro-bind", p, p)
	}
}

// symlink protects a protected path that is a symlink: what it points to
// is bound read-only where it exists, and the link itself is put back
// when the call ends.
func (g *guard) symlink(p string) {
	target, err := os.Readlink(p)
	if err != nil {
		return
	}
	g.watch[p] = link{target: target}
	if _, err := os.Stat(p); err == nil {
		g.args = append(g.args, "--ro-bind", p, p)
	}
}

// check puts back every watched path the call changed and returns their
// names.
func (g *guard) check() []string {
	if g.changed != nil {
		return g.changed
	}
	g.changed = []string{}
	for _, p := range slices.Sorted(maps.Keys(g.watch)) {
		was := g.watch[p]
		fi, err := os.Lstat(p)
		switch {
		case was.absent && err != nil:
			continue
		case !was.absent && err == nil && fi.Mode()&os.ModeSymlink != 0:
			if t, _ := os.Readlink(p); t == was.target {
				continue
			}
		}
		_ = os.RemoveAll(p)
		if !was.absent {
			_ = os.Symlink(was.target, p)
		}
		g.changed = append(g.changed, p)
	}
	return g.changed
}

// hold makes the guard of a new call and counts the call as active.
func (s *Sandbox) hold() *guard {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.active++
	g := protect(append([]string{s.policy.Workspace}, s.policy.Writable...))
	s.made = append(s.made, g.made...)
	return g
}

// release ends a call's hold; the last active call removes the protected
// directories made as mount points, those still empty.
func (s *Sandbox) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.active--; s.active > 0 {
		return
	}
	for _, d := range s.made {
		_ = os.Remove(d) // only an empty directory goes
	}
	s.made = nil
}

// protectedNote explains a refused write to a protected path.
const protectedNote = "sandbox: in the workspace, .arbor, .claude, .git/hooks, .git/config, .mcp.json and editor and shell settings are read-only for commands too (programs outside the sandbox act on them); change them with the file tools, which ask"

// mentionsProtected reports whether output names a protected path.
func mentionsProtected(output string) bool {
	for _, p := range append(append([]string{".git/hooks", ".git/config", ".git/commondir"}, permission.SensitiveDirs...), permission.SensitiveFiles...) {
		if p != ".git" && strings.Contains(output, p) {
			return true
		}
	}
	return false
}

// isGitDir reports whether dir is a git directory itself (a main
// repository's .git made writable for a worktree).
func isGitDir(dir string) bool {
	if filepath.Base(dir) == ".git" {
		return true
	}
	_, errHead := os.Stat(filepath.Join(dir, "HEAD"))
	fi, errObj := os.Stat(filepath.Join(dir, "objects"))
	return errHead == nil && errObj == nil && fi.IsDir()
}
