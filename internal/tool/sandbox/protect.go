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
	made    []string          // directories made as mount points
	watch   map[string]link   // path → how it was before the call
	roots   []string          // the writable roots
	gits    map[string]fileID // the git dirs (and .git files) there before the call (gitrepos.go)
	changed []string          // set by check: what the call changed, a line each
}

// link is a watched path's state before the call: absent, or a symlink
// to target, which resolved to real (id) in a writable root.
type link struct {
	absent bool
	target string
	real   string
	id     fileID
}

// protect is the guard of a call whose writable roots are roots, the
// workspace first.
func protect(roots []string) *guard {
	g := &guard{watch: map[string]link{}, roots: roots, gits: map[string]fileID{}}
	for i, r := range roots {
		found := gitScan(r)
		maps.Copy(g.gits, found)
		if isGitDir(r) {
			g.gitDir(r, true)
			g.protectGits(r, found)
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
		if _, err := os.Lstat(filepath.Join(r, ".husky")); err == nil {
			g.dir(filepath.Join(r, ".husky"), false) // its hooks, when core.hooksPath names it
		}
		dotgit := filepath.Join(r, ".git")
		switch fi, err := os.Lstat(dotgit); {
		case err != nil:
		case fi.IsDir():
			g.args = append(g.args, "--bind", dotgit, dotgit) // pinned: it cannot be moved aside
			g.gitDir(dotgit, true)
			g.hooksPath(r, filepath.Join(dotgit, "config"))
		default: // a worktree's .git file names its git dir
			g.file(dotgit)
			if d := gitFileDir(dotgit); d != "" {
				g.hooksPath(r, filepath.Join(d, "config.worktree"), filepath.Join(commonDir(d), "config"))
			}
		}
		g.protectGits(r, found)
	}
	return g
}

// gitDir protects what of a git directory makes git run programs; its
// hooks directory is made when missing if top (the workspace's own).
func (g *guard) gitDir(dir string, top bool) {
	g.dir(filepath.Join(dir, "hooks"), top)
	for _, f := range []string{"config", "config.worktree", "commondir"} {
		g.file(filepath.Join(dir, f))
	}
}

// hooksPath protects the directory core.hooksPath names in the configs
// of the repository whose work tree is top, when it is in a writable
// root (husky's .husky/_, a .githooks): git runs the hooks there.
func (g *guard) hooksPath(top string, configs ...string) {
	for _, c := range configs {
		p := configValue(c, "core", "hookspath")
		if home, err := os.UserHomeDir(); err == nil && strings.HasPrefix(p, "~/") {
			p = filepath.Join(home, p[2:])
		}
		if p == "" {
			continue
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(top, p)
		}
		if p = filepath.Clean(p); within(p, g.roots...) {
			g.dir(p, false)
		}
	}
}

// configValue is the last value of section.key (both lower case, no
// subsection) in the git config file p, "" when unset. It reads the file
// itself (running git costs milliseconds a call); includes are not
// followed.
func configValue(p, section, key string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return ""
	}
	var in, v string
	for line := range strings.Lines(string(b)) {
		line = strings.TrimSpace(line)
		if rest, ok := strings.CutPrefix(line, "["); ok {
			end := strings.IndexAny(rest, "] \t\"")
			if end < 0 {
				end = len(rest)
			}
			in, line = strings.ToLower(rest[:end]), ""
			if i := strings.Index(rest, "]"); i >= 0 {
				line = strings.TrimSpace(rest[i+1:]) // [core] hooksPath = x
			}
		}
		k, val, ok := strings.Cut(line, "=")
		if ok && in == section && strings.ToLower(strings.TrimSpace(k)) == key {
			v = strings.Trim(strings.TrimSpace(val), "\"")
		}
	}
	return v
}

// commonDir is the common git directory of the git directory d (a
// worktree's names it in commondir), d itself when it names none.
func commonDir(d string) string {
	b, err := os.ReadFile(filepath.Join(d, "commondir"))
	if err != nil {
		return d
	}
	c := strings.TrimSpace(string(b))
	if !filepath.IsAbs(c) {
		c = filepath.Join(d, c)
	}
	return filepath.Clean(c)
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
// when the call ends. Where it resolves into a writable root, the command
// could move a directory on the way aside, or change a link on the way,
// and so change what it points to without touching it: that is checked
// when the call ends too, and the link removed.
func (g *guard) symlink(p string) {
	target, err := os.Readlink(p)
	if err != nil {
		return
	}
	l := link{target: target}
	if real, err := filepath.EvalSymlinks(p); err == nil {
		g.args = append(g.args, "--ro-bind", p, p)
		if within(real, g.roots...) {
			l.real, l.id = real, must1(idOf(real))
		}
	}
	g.watch[p] = l
}

// must1 is the value of a (value, ok) pair.
func must1(id fileID, _ bool) fileID { return id }

// check puts back every watched path the call changed, sanitizes the git
// repositories it made (gitrepos.go), and returns what it changed, a line
// each.
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
			t, _ := os.Readlink(p)
			if t != was.target {
				break
			}
			if real, err := filepath.EvalSymlinks(p); was.real == "" || err == nil && real == was.real && must1(idOf(real)) == was.id {
				continue
			}
			if q, ok := g.inRoots(p); ok {
				_ = os.Remove(q)
			}
			g.changed = append(g.changed, "sandbox: the command changed what "+p+" points to, which commands may not write (a program outside the sandbox reads it); the link was removed")
			continue
		}
		q, ok := g.inRoots(p)
		if !ok {
			continue
		}
		_ = os.RemoveAll(q)
		if !was.absent {
			_ = os.Symlink(was.target, q)
		}
		g.changed = append(g.changed, "sandbox: the command changed "+p+", which commands may not write (a program outside the sandbox reads it); it was put back")
	}
	g.changed = append(g.changed, checkGits(g.roots, g.gits)...)
	return g.changed
}

// inRoots is p with its directory's symlinks resolved, and whether that
// is in a writable root. The command chose what is on the way to p:
// arbor, outside the sandbox, changes p only there (a nested
// repository's directory swapped for a symlink to the user's elsewhere
// must not lose that one's hooks).
func (g *guard) inRoots(p string) (string, bool) {
	dir, err := filepath.EvalSymlinks(filepath.Dir(p))
	if err != nil || !within(dir, realPaths(g.roots)...) {
		return "", false
	}
	return filepath.Join(dir, filepath.Base(p)), true
}

// hold makes the guard of a new call and counts the call as active. A
// path watched by a call still running keeps the state it had before
// that call: otherwise a call started while a background job had made
// .mcp.json would take the job's file for the user's, and put it back.
func (s *Sandbox) hold() *guard {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.active == 0 {
		s.enter()
		s.base, s.gitBase = map[string]link{}, map[string]fileID{}
	}
	s.active++
	g := protect(append([]string{s.policy.Workspace}, s.policy.Writable...))
	for p, l := range g.watch {
		if b, ok := s.base[p]; ok {
			g.watch[p] = b
		} else {
			s.base[p] = l
		}
	}
	for p := range g.gits {
		if b, ok := s.gitBase[p]; ok {
			g.gits[p] = b
		}
	}
	for p, id := range s.gitBase {
		if _, ok := g.gits[p]; !ok {
			g.gits[p] = id // gone since: one made in its place is new
		}
	}
	maps.Copy(s.gitBase, g.gits)
	s.made = append(s.made, g.made...)
	s.record(g.made)
	return g
}

// release ends a call's hold; the last active call removes the protected
// directories made as mount points, those still empty (mounts.go).
func (s *Sandbox) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.active--; s.active > 0 {
		return
	}
	s.leave()
	s.base, s.gitBase = nil, nil
}

// protectedNote explains a refused write to a protected path.
const protectedNote = "sandbox: in the workspace, .arbor, .claude, .git/hooks, .git/config (a nested repository's and a submodule's too), .mcp.json, .husky and editor and shell settings are read-only for commands too (programs outside the sandbox act on them); change them with the file tools, which ask"

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
