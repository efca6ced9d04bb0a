package tool

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// The permission decorator decides a file tool's call on its paths with
// symlinks resolved, but the tool opens them afterwards: a symlink swapped
// in between (by a background job, which the sandbox lets write in the
// workspace) would take the tool out of the workspace the decision saw.
// So a path in the workspace or an added directory is opened through an
// os.Root of that directory, which resolves each component itself,
// refusing a symlink or ".." that leaves it, so no swap can win. A path
// outside all of them (one an allow rule names) is opened as given: the
// decision named it.
//
// A file a tool reads or writes must also be a regular file: a FIFO would
// block the call for ever, a device has no end. It is opened without
// blocking and refused unless it is one.

// ErrNotRegular: a file tool was given a FIFO, a device or a socket.
var ErrNotRegular = errors.New("not a regular file")

// workRoot is where the file tools work: the absolute workspace relative
// paths are resolved against, and the directories paths are confined to.
// Whether a path outside may be touched at all is the permission
// decorator's decision, not the tools'.
type workRoot struct {
	dir string
	// roots are the directories a path inside is opened through (the
	// workspace, as given and with symlinks resolved, and the added
	// directories), longest first.
	roots []string
	// hides, when set, says a deny rule keeps a path from tool: a walk
	// (grep, glob, list_directory) leaves it out (Hider).
	hides func(tool, path string) bool
}

// Hider is a Policy that says which paths a folder's walk leaves out
// (permission.Engine.Hides).
type Hider interface {
	Hides(tool, path string) bool
}

// hidden reports whether a walk of tool leaves out the absolute path p.
func (w workRoot) hidden(tool, p string) bool { return w.hides != nil && w.hides(tool, p) }

// newWorkRoot is the work root of workspace ws with the added
// directories extra.
func newWorkRoot(ws string, extra []string) workRoot {
	w := workRoot{dir: ws}
	for _, d := range append([]string{ws}, extra...) {
		abs, err := filepath.Abs(d)
		if err != nil {
			continue
		}
		w.roots = append(w.roots, abs)
		if real, err := filepath.EvalSymlinks(abs); err == nil && real != abs {
			w.roots = append(w.roots, real)
		}
	}
	// A path in an added directory inside the workspace is confined to
	// the narrower one.
	for i := 1; i < len(w.roots); i++ {
		for j := i; j > 0 && len(w.roots[j]) > len(w.roots[j-1]); j-- {
			w.roots[j], w.roots[j-1] = w.roots[j-1], w.roots[j]
		}
	}
	return w
}

// abs resolves a path given by the model: absolute paths as given (cleaned),
// relative ones joined to the workspace.
func (w workRoot) abs(p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(w.dir, p)
}

// place is where one path is opened: a root and the path's name in it,
// symlinks resolved.
type place struct {
	root *os.Root
	name string
	abs  string // the path as the tool was given it, absolute and clean
}

// ErrLeavesWorkspace: a path in the workspace (or an added directory)
// leads out of it through a symlink, which the file tools do not follow.
var ErrLeavesWorkspace = errors.New("it leads out of the workspace through a symlink, which file tools do not follow (give the path it points to)")

// locate opens the root holding the absolute, clean path p (the
// workspace or an added directory, else the file system's root) and names
// p in it with its symlinks resolved, so that the root meets none unless
// one is swapped in, which it refuses to follow out. A path in a root
// that resolves out of every root is refused. Close it when done.
func (w workRoot) locate(p string) (place, error) {
	real := resolveExisting(p)
	dir := w.rootOf(real)
	if dir == "" {
		if w.rootOf(p) != "" {
			return place{}, &fs.PathError{Op: "open", Path: p, Err: ErrLeavesWorkspace}
		}
		dir = string(filepath.Separator)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return place{}, err
	}
	name, err := filepath.Rel(dir, real)
	if err != nil {
		_ = root.Close()
		return place{}, err
	}
	return place{root: root, name: name, abs: p}, nil
}

// locateLink is locate for an operation on a symlink itself (delete):
// only p's directory is resolved.
func (w workRoot) locateLink(p string) (place, error) {
	dir, base := filepath.Split(p)
	pl, err := w.locate(filepath.Clean(dir))
	if err != nil {
		return place{}, err
	}
	pl.name, pl.abs = filepath.Join(pl.name, base), p
	return pl, nil
}

// rootOf is the root holding p, "" when none does.
func (w workRoot) rootOf(p string) string {
	for _, r := range w.roots {
		if within(r, p) {
			return r
		}
	}
	return ""
}

// resolveExisting is p with the symlinks of its longest existing part
// resolved; the part that does not exist yet is kept as written.
func resolveExisting(p string) string {
	rest := ""
	for cur := p; ; {
		if real, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(real, rest)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return p
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

func (pl place) Close() { _ = pl.root.Close() }

// open opens the regular file of pl with flag (O_TRUNC is done after the
// check, so a FIFO or a device is never truncated nor waited on).
func (pl place) open(flag int, perm fs.FileMode) (*os.File, error) {
	f, err := pl.root.OpenFile(pl.name, flag&^os.O_TRUNC|syscall.O_NONBLOCK, perm)
	if err != nil {
		return nil, err
	}
	info, err := f.Stat()
	switch {
	case err != nil:
	case info.IsDir() && flag&(os.O_WRONLY|os.O_RDWR) == 0:
		return f, nil // the caller says what a directory is to it
	case !info.Mode().IsRegular():
		err = &fs.PathError{Op: "open", Path: pl.name, Err: fmt.Errorf("%w (%s)", ErrNotRegular, describeMode(info.Mode()))}
	case flag&os.O_TRUNC != 0:
		err = f.Truncate(0)
	}
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}

// readFile opens the regular file of pl, checks its size against max
// (too says what to answer when it is larger), and reads it whole.
func (pl place) readFile(max int64, too func(size int64) error) ([]byte, fs.FileInfo, error) {
	f, err := pl.open(os.O_RDONLY, 0)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	switch {
	case err != nil:
		return nil, nil, err
	case info.IsDir():
		return nil, info, nil
	case info.Size() > max:
		return nil, info, too(info.Size())
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err == nil && int64(len(data)) > max {
		err = too(int64(len(data)))
	}
	return data, info, err
}

// writeFile writes data to the file of pl, made with perm when missing,
// along with its missing parent directories.
func (pl place) writeFile(data []byte, perm fs.FileMode) error {
	if dir := filepath.Dir(pl.name); dir != "." {
		if err := pl.root.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	f, err := pl.open(os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// walk is filepath.WalkDir of pl's directory through its root: no
// symlink swapped in during the walk takes it out. fn sees the paths
// under pl's path as the tool was given it, as from filepath.WalkDir.
func (pl place) walk(fn fs.WalkDirFunc) error {
	top := filepath.ToSlash(pl.name)
	return fs.WalkDir(pl.root.FS(), top, func(p string, d fs.DirEntry, err error) error {
		rel, _ := filepath.Rel(top, p)
		return fn(filepath.Join(pl.abs, filepath.FromSlash(rel)), d, err)
	})
}

// at is the place, in pl's root, of p: a path walk gave.
func (pl place) at(p string) place {
	rel, err := filepath.Rel(pl.abs, p)
	if err != nil {
		rel = p // refused by the root as it is not local
	}
	return place{root: pl.root, name: filepath.Join(pl.name, rel), abs: p}
}

// errTooLarge: a file is larger than a tool reads.
var errTooLarge = errors.New("file too large")

// statAt stats the absolute path p in its root.
func (w workRoot) statAt(p string) (fs.FileInfo, error) {
	pl, err := w.locate(p)
	if err != nil {
		return nil, err
	}
	defer pl.Close()
	return pl.root.Stat(pl.name)
}

// readAt is readFile of the absolute path p in its root.
func (w workRoot) readAt(p string, max int64, too func(int64) error) ([]byte, fs.FileInfo, error) {
	pl, err := w.locate(p)
	if err != nil {
		return nil, nil, err
	}
	defer pl.Close()
	return pl.readFile(max, too)
}

// writeAt is writeFile of the absolute path p in its root.
func (w workRoot) writeAt(p string, data []byte, perm fs.FileMode) error {
	pl, err := w.locate(p)
	if err != nil {
		return err
	}
	defer pl.Close()
	return pl.writeFile(data, perm)
}

// mkdirAllAt makes the absolute directory p and its parents in its root.
func (w workRoot) mkdirAllAt(p string) error {
	pl, err := w.locate(p)
	if err != nil {
		return err
	}
	defer pl.Close()
	return pl.root.MkdirAll(pl.name, 0o755)
}

// removeAt removes the file (or symlink) of the absolute path p in its
// root.
func (w workRoot) removeAt(p string) error {
	pl, err := w.locateLink(p)
	if err != nil {
		return err
	}
	defer pl.Close()
	return pl.root.Remove(pl.name)
}

// describeMode names a file type for a refusal.
func describeMode(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return m.Type().String()
}

// within reports whether p is root or below it; both clean and absolute.
func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !filepath.IsAbs(rel) && (rel == "." || len(rel) < 3 || rel[:3] != "../")
}
