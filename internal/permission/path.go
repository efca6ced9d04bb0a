package permission

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// maxLinks bounds symlink resolution like the kernel's ELOOP limit.
const maxLinks = 255

// ErrTooManyLinks: resolving a path met a symlink loop.
var ErrTooManyLinks = errors.New("too many levels of symbolic links")

// ResolvePath joins a relative p to workspace, resolves symlinks (for a
// path that does not exist yet, those of its nearest existing parent) and
// reports whether the result lies inside the resolved workspace.
//
// When p contains ".." the result is computed both the way a Go tool sees
// it (lexically cleaned, then resolved) and the way the kernel does (".."
// after a symlink climbs out of the link's target); the path counts as
// inside only if both are, and abs is the one outside when they differ.
func ResolvePath(workspace, p string) (abs string, inside bool, err error) {
	ws, err := newWorkspace(workspace)
	if err != nil {
		return "", false, err
	}
	r, err := ws.resolve(p)
	if err != nil {
		return "", false, err
	}
	if r.outside != "" {
		return r.outside, false, nil
	}
	return r.reals[0], true, nil
}

// workspace is the directory calls are confined to.
type workspace struct {
	abs  string // absolute and cleaned, as configured
	real string // abs with symlinks resolved
	// roots are more directories inside which paths count as inside the
	// workspace, symlinks resolved.
	roots []string
}

// addRoots adds directories that count as inside the workspace.
func (w *workspace) addRoots(dirs []string) error {
	for _, d := range dirs {
		abs, err := filepath.Abs(d)
		if err != nil {
			return fmt.Errorf("additional directory %q: %w", d, err)
		}
		if fi, err := os.Stat(abs); err != nil {
			return fmt.Errorf("additional directory: %w", err)
		} else if !fi.IsDir() {
			return fmt.Errorf("additional directory %s: not a directory", abs)
		}
		real, err := realpath(abs)
		if err != nil {
			return fmt.Errorf("additional directory %s: %w", abs, err)
		}
		w.roots = append(w.roots, real)
	}
	return nil
}

// contains reports whether the resolved path real lies in the workspace
// or one of its roots.
func (w workspace) contains(real string) bool {
	if within(w.real, real) {
		return true
	}
	for _, r := range w.roots {
		if within(r, real) {
			return true
		}
	}
	return false
}

func newWorkspace(dir string) (workspace, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return workspace{}, fmt.Errorf("workspace %q: %w", dir, err)
	}
	real, err := realpath(abs)
	if err != nil {
		return workspace{}, fmt.Errorf("workspace %s: %w", abs, err)
	}
	return workspace{abs: abs, real: real}, nil
}

// resolved is one path of a call in every form rules are matched against.
type resolved struct {
	given string // as the model gave it
	abs   string // joined to the workspace and cleaned; symlinks not resolved
	// reals are the symlink-resolved forms: lexically cleaned first, and
	// component by component (only when that differs).
	reals []string
	// outside is the first of reals outside the workspace; "" if none.
	outside string
}

func (w workspace) resolve(p string) (resolved, error) {
	joined := p
	if !filepath.IsAbs(p) {
		joined = w.abs + string(filepath.Separator) + p
	}
	r := resolved{given: p, abs: filepath.Clean(joined)}
	real, err := realpath(r.abs)
	if err != nil {
		return r, fmt.Errorf("resolve %q: %w", p, err)
	}
	r.reals = []string{real}
	if joined != r.abs {
		kernel, err := realpath(joined)
		if err != nil {
			return r, fmt.Errorf("resolve %q: %w", p, err)
		}
		if kernel != real {
			r.reals = append(r.reals, kernel)
		}
	}
	for _, real := range r.reals {
		if !w.contains(real) {
			r.outside = real
			break
		}
	}
	return r, nil
}

// describe names a path for a reason the model reads.
func (r resolved) describe() string {
	if r.outside != "" && r.outside != r.given {
		return fmt.Sprintf("%q (resolves to %s)", r.given, r.outside)
	}
	return fmt.Sprintf("%q", r.given)
}

// realpath resolves every symlink of the absolute path p, component by
// component, with ".." applied to the resolved prefix as the kernel does.
// Components that do not exist are kept as written.
func realpath(p string) (string, error) {
	links := 0
	return walk(string(filepath.Separator), p, &links)
}

func walk(cur, rest string, links *int) (string, error) {
	for rest != "" {
		var part string
		part, rest, _ = strings.Cut(rest, string(filepath.Separator))
		switch part {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		next := filepath.Join(cur, part)
		fi, err := os.Lstat(next)
		switch {
		case errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR):
			cur = next
			continue
		case err != nil:
			return "", err
		case fi.Mode()&fs.ModeSymlink == 0:
			cur = next
			continue
		}
		*links++
		if *links > maxLinks {
			return "", fmt.Errorf("%s: %w", next, ErrTooManyLinks)
		}
		target, err := os.Readlink(next)
		if err != nil {
			return "", err
		}
		if filepath.IsAbs(target) {
			cur = string(filepath.Separator)
		}
		if cur, err = walk(cur, target, links); err != nil {
			return "", err
		}
	}
	return cur, nil
}

// within reports whether p is root or below it; both must be clean and
// absolute.
func within(root, p string) bool {
	rel, err := filepath.Rel(root, p)
	if err != nil {
		return false
	}
	return rel == "." || (rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)))
}
