package sandbox

import (
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Git runs programs named by a repository's hooks and config: the user's
// git, unconfined, runs those of every repository it operates in, and a
// `git status` at the top runs a submodule's (a gitlink in the index is
// enough: the submodule's core.fsmonitor runs). So besides the
// workspace's own .git, the repositories nested in a writable root are
// found (up to maxGitDepth directories deep), with the git directories of
// their submodules (.git/modules/**) and worktrees (.git/worktrees/*):
//
//   - one that exists when the call starts has its hooks, config,
//     config.worktree and commondir read-only (missing ones watched), and a
//     .git file naming its git dir read-only;
//   - one that the call makes, or puts in place of one that was there
//     (git init, git clone, a renamed directory), is the command's: when
//     the call ends its hooks other than git's samples are removed, and so
//     are the keys of its config that git does not write itself (git init,
//     clone, remote, branch), since any other can run a program
//     (core.fsmonitor, core.hooksPath, alias.*, filter.*, include.path …).

// maxGitDepth is how deep below a writable root nested repositories are
// looked for (sub/a/b/.git is 3 deep); maxGitScan bounds the directories
// read, so a workspace that is a large tree (a home) costs little.
const (
	maxGitDepth = 3
	maxGitScan  = 2000
)

// fileID is a file's identity: a path whose fileID changed was replaced.
type fileID struct{ dev, ino uint64 }

// idOf is p's identity, without following a symlink.
func idOf(p string) (fileID, bool) {
	var st syscall.Stat_t
	if syscall.Lstat(p, &st) != nil {
		return fileID{}, false
	}
	return fileID{dev: uint64(st.Dev), ino: st.Ino}, true //nolint:unconvert // Dev is not uint64 everywhere
}

// gitScan finds the git directories of root and the .git entries that
// lead to them: root itself when it is a git directory, the .git of root
// and of repositories nested below it, and each git directory's
// modules/** and worktrees/*. It maps each found path to its identity;
// a .git file is mapped as found, its git dir is not followed.
func gitScan(root string) map[string]fileID {
	found := map[string]fileID{}
	budget := maxGitScan
	var gitDir func(dir string)
	gitDir = func(dir string) {
		if id, ok := idOf(dir); ok {
			found[dir] = id
		}
		wts, _ := filepath.Glob(filepath.Join(dir, "worktrees", "*"))
		for _, w := range wts {
			if isDir(w) {
				if id, ok := idOf(w); ok {
					found[w] = id
				}
			}
		}
		// Submodules nest: modules/a/modules/b, and a name may hold a
		// slash (modules/lib/x). A directory with HEAD is a git dir.
		var mods func(d string, depth int)
		mods = func(d string, depth int) {
			entries, _ := os.ReadDir(d)
			for _, e := range entries {
				if !e.IsDir() || budget <= 0 || depth > 2*maxGitDepth {
					continue
				}
				budget--
				p := filepath.Join(d, e.Name())
				if _, err := os.Lstat(filepath.Join(p, "HEAD")); err == nil {
					gitDir(p)
					continue
				}
				mods(p, depth+1)
			}
		}
		mods(filepath.Join(dir, "modules"), 0)
	}
	if isGitDir(root) {
		gitDir(root)
		return found
	}
	var walk func(dir string, depth int)
	walk = func(dir string, depth int) {
		if budget--; budget < 0 {
			return
		}
		for _, e := range readDirCached(dir) {
			p := filepath.Join(dir, e.name)
			switch {
			case e.name == ".git" && e.typ.IsDir():
				gitDir(p)
			case e.name == ".git" && e.typ.IsRegular():
				if id, ok := idOf(p); ok {
					found[p] = id
				}
			case e.typ.IsDir() && depth < maxGitDepth && e.name != "node_modules":
				walk(p, depth+1)
			}
		}
	}
	walk(root, 0)
	return found
}

// The scan runs twice a call, as it starts and as it ends, and reading
// every directory 3 deep is most of a call's bookkeeping (a few hundred
// directories: 4 system calls each). A directory's ctime changes with
// every entry added to it, removed or renamed in it, and a confined
// command cannot set it (as it can set mtime): so a directory whose inode
// and ctime are as when it was read has the entries read then, and one
// lstat stands for the read. An entry read less than ctimeSlack after its
// ctime is not kept, since a file system that keeps ctime in coarse steps
// would not show a change made in the same step.
const (
	ctimeSlack    = 2 * time.Second
	maxCachedDirs = 20000
)

// dirEnt is a directory entry as the scan uses it.
type dirEnt struct {
	name string
	typ  fs.FileMode
}

// cachedDir is a directory's entries with the inode and ctime they were
// read at.
type cachedDir struct {
	ino   uint64
	ctime int64
	ents  []dirEnt
}

var dirCache struct {
	sync.Mutex
	m map[string]cachedDir
}

// readDirCached is dir's entries, not following a symlink at dir, from
// the cache when dir is unchanged since it was read.
func readDirCached(dir string) []dirEnt { return readDirSlack(dir, ctimeSlack) }

// readDirSlack is readDirCached keeping what was read slack after its
// ctime.
func readDirSlack(dir string, slack time.Duration) []dirEnt {
	var st syscall.Stat_t
	if syscall.Lstat(dir, &st) != nil || st.Mode&syscall.S_IFMT != syscall.S_IFDIR {
		return nil
	}
	ino, ctime := uint64(st.Ino), st.Ctim.Nano() //nolint:unconvert // Ino is not uint64 everywhere
	dirCache.Lock()
	c, ok := dirCache.m[dir]
	dirCache.Unlock()
	if ok && c.ino == ino && c.ctime == ctime {
		return c.ents
	}
	read := time.Now()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	ents := make([]dirEnt, len(entries))
	for i, e := range entries {
		ents[i] = dirEnt{name: e.Name(), typ: e.Type()}
	}
	if read.Sub(time.Unix(0, ctime)) >= slack {
		dirCache.Lock()
		if dirCache.m == nil || len(dirCache.m) >= maxCachedDirs {
			dirCache.m = map[string]cachedDir{}
		}
		dirCache.m[dir] = cachedDir{ino: ino, ctime: ctime, ents: ents}
		dirCache.Unlock()
	}
	return ents
}

// isDir reports whether p is a directory, not following a symlink.
func isDir(p string) bool {
	fi, err := os.Lstat(p)
	return err == nil && fi.IsDir()
}

// gitFileDir is the git directory a .git file names, "" when it names none.
func gitFileDir(p string) string {
	b, err := os.ReadFile(p)
	if err != nil {
		return ""
	}
	d, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:")
	if !ok {
		return ""
	}
	if d = strings.TrimSpace(d); !filepath.IsAbs(d) {
		d = filepath.Join(filepath.Dir(p), d)
	}
	return filepath.Clean(d)
}

// protectGits keeps the repositories of root that exist as the call
// starts (see above); the workspace's own .git was seen to by protect.
func (g *guard) protectGits(root string, found map[string]fileID) {
	for _, p := range slices.Sorted(maps.Keys(found)) {
		if filepath.Dir(p) == root && filepath.Base(p) == ".git" || p == root {
			continue // protect's own
		}
		if isDir(p) {
			g.gitDir(p, false)
		} else {
			g.file(p)
		}
	}
}

// checkGits sanitizes the git directories the call made or replaced in
// roots (their start being before) and returns what it removed, a line
// each. Arbor runs outside the sandbox, and the command chose these
// paths: a git dir is worked on only where it really is in a writable
// root, through an os.Root, so that a symlink cannot take the removal
// outside.
func checkGits(roots []string, before map[string]fileID) []string {
	var notes []string
	seen := map[string]bool{}
	reals := realPaths(roots)
	clean := func(dir string) {
		real, err := filepath.EvalSymlinks(dir)
		if err != nil || seen[real] || !within(real, reals...) {
			return
		}
		seen[real] = true
		if id, ok := idOf(dir); ok && before[dir] == id {
			return // there before the call: it was read-only
		}
		if removed := sanitizeGitDir(real); len(removed) > 0 {
			notes = append(notes, "sandbox: the command made a git repository at "+dir+" whose "+strings.Join(removed, ", ")+
				" would run programs when git runs there (outside the sandbox); they were removed")
		}
	}
	for _, r := range roots {
		after := gitScan(r)
		for _, p := range slices.Sorted(maps.Keys(after)) {
			if before[p] == after[p] {
				continue
			}
			if isDir(p) {
				clean(p)
			} else if d := gitFileDir(p); d != "" {
				clean(d)
			}
		}
	}
	return notes
}

// realPaths is paths with their symlinks resolved (as given where that
// fails).
func realPaths(paths []string) []string {
	out := slices.Clone(paths)
	for i, p := range out {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			out[i] = r
		}
	}
	return out
}

// sanitizeGitDir removes what of a git directory made in the call would
// make git run a program: hooks other than git's samples, and config keys
// git does not write itself. It returns what it removed.
func sanitizeGitDir(dir string) []string {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil
	}
	defer root.Close()
	var removed []string
	switch fi, err := root.Lstat("hooks"); {
	case err != nil:
	case !fi.IsDir(): // a symlink to hooks elsewhere, or a file
		_ = root.Remove("hooks")
		removed = append(removed, "hooks")
	default:
		f, err := root.Open("hooks")
		if err != nil {
			break
		}
		names, _ := f.Readdirnames(-1)
		_ = f.Close()
		for _, h := range names {
			if !strings.HasSuffix(h, ".sample") {
				_ = root.RemoveAll(filepath.Join("hooks", h))
				removed = append(removed, "hooks/"+h)
			}
		}
	}
	for _, f := range []string{"config", "config.worktree"} {
		removed = append(removed, sanitizeConfig(root, f)...)
	}
	return removed
}

// sanitizeConfig removes from a git config file made in the call every key
// git does not write itself, with git. Where git is missing, or the file
// is not one git reads, the whole file goes.
func sanitizeConfig(root *os.Root, name string) []string {
	fi, err := root.Lstat(name)
	if err != nil {
		return nil
	}
	git, err := exec.LookPath("git")
	if !fi.Mode().IsRegular() || err != nil {
		_ = root.RemoveAll(name)
		return []string{name}
	}
	p := filepath.Join(root.Name(), name)
	// Run from "/" and without the user's and the system's config: git
	// reads only the file, and no repository is discovered around it.
	cmd := func(args ...string) *exec.Cmd {
		c := exec.Command(git, append([]string{"config", "--file", p}, args...)...)
		c.Dir = "/"
		c.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_DIR=/nonexistent")
		return c
	}
	out, err := cmd("--no-includes", "--list", "--name-only").Output()
	if err != nil {
		_ = root.Remove(name)
		return []string{name}
	}
	var removed []string
	for _, k := range strings.Fields(string(out)) {
		if k = strings.ToLower(k); safeConfigKey(k) || slices.Contains(removed, k) {
			continue
		}
		if cmd("--unset-all", k).Run() != nil {
			_ = root.Remove(name)
			return append(removed, name)
		}
		removed = append(removed, k)
	}
	return removed
}

// safeConfigKey reports whether a config key (lower case) is one git
// init, clone, remote and branch write, none of which runs a program.
func safeConfigKey(k string) bool {
	section, rest, _ := strings.Cut(k, ".")
	name := rest[strings.LastIndex(rest, ".")+1:]
	sub := strings.Contains(rest, ".")
	switch section {
	case "core":
		return !sub && slices.Contains([]string{"repositoryformatversion", "filemode", "bare", "logallrefupdates",
			"ignorecase", "precomposeunicode", "symlinks", "sparsecheckout", "sparsecheckoutcone", "autocrlf", "eol", "worktree"}, name)
	case "extensions", "user", "init":
		return !sub
	case "remote":
		return sub && slices.Contains([]string{"url", "fetch", "pushurl", "tagopt", "promisor", "partialclonefilter", "mirror"}, name)
	case "branch":
		return sub && slices.Contains([]string{"remote", "merge", "rebase"}, name)
	case "submodule":
		return sub && slices.Contains([]string{"url", "active"}, name)
	}
	return false
}
