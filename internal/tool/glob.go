package tool

import (
	"cmp"
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// globMaxResults caps one glob result.
const globMaxResults = 1000

type globArgs struct {
	Pattern string `json:"pattern" jsonschema_description:"Glob pattern, e.g. \"**/*.go\" or \"src/**/*.{ts,tsx}\". \"**\" matches any number of directories; \"*\" stays within one."`
	Path    string `json:"path,omitempty" jsonschema_description:"Directory to search in: relative to the workspace root, or absolute. Default: the workspace root."`
}

// Target names the directory actually searched: path joined with the
// pattern's leading directories, so "../../**" is seen for what it is.
func (a globArgs) Target() Target {
	dir, _ := staticPrefix(a.Pattern)
	if filepath.IsAbs(dir) {
		return Target{Paths: []string{dir}}
	}
	return Target{Paths: []string{filepath.Join(cmp.Or(a.Path, "."), dir)}}
}

const globDescription = `Find files by name pattern. Results are paths relative to the search directory (absolute for an absolute pattern), newest first ` +
	`(by modification time); .git is skipped; at most 1000 are shown. A pattern without "**" does not descend: use "**/*.go" to search all directories.`

func newGlob(root workRoot) Tool {
	return New("glob", globDescription, KindRead, func(ctx context.Context, _ Call, a globArgs) Result {
		return root.glob(ctx, a)
	})
}

type globHit struct {
	rel   string
	mtime time.Time
}

func (w workRoot) glob(ctx context.Context, a globArgs) Result {
	var start time.Time
	if wantsDetail(ctx) {
		start = time.Now()
	}
	given := cmp.Or(a.Path, ".")
	searchRoot := w.abs(given)
	prefix, rest := staticPrefix(a.Pattern)
	walkRoot := searchRoot
	absolute := filepath.IsAbs(prefix)
	if absolute {
		walkRoot, searchRoot, given = prefix, prefix, prefix
	} else if prefix != "" {
		walkRoot = filepath.Join(searchRoot, prefix)
	}
	matcher, err := compileGlob(rest)
	if err != nil {
		return Errorf("%v", err)
	}
	pl, err := w.locate(searchRoot)
	if err != nil {
		return pathError(given, err)
	}
	info, err := pl.root.Stat(pl.name)
	pl.Close()
	if err == nil {
		// The walk may start above the search directory ("../**").
		pl, err = w.locate(walkRoot)
	}
	if err != nil {
		return pathError(given, err)
	}
	defer pl.Close()
	if !info.IsDir() {
		return Errorf("%s is not a directory", given)
	}

	var hits []globHit
	err = pl.walk(func(p string, d fs.DirEntry, err error) error {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		if err != nil {
			// An unreadable directory (or a prefix that does not exist) has
			// nothing to match; keep walking the rest.
			if d != nil && d.IsDir() && p != walkRoot {
				return fs.SkipDir
			}
			return nil
		}
		if p != walkRoot && w.hidden("glob", p) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if d.Name() == ".git" && p != walkRoot {
				return fs.SkipDir
			}
			return nil
		}
		relToWalk, err := filepath.Rel(walkRoot, p)
		if err != nil || !matcher.match(filepath.ToSlash(relToWalk)) {
			return nil
		}
		rel, err := filepath.Rel(searchRoot, p)
		if err != nil || absolute {
			rel = p
		}
		hit := globHit{rel: filepath.ToSlash(rel)}
		if fi, err := d.Info(); err == nil {
			hit.mtime = fi.ModTime()
		}
		hits = append(hits, hit)
		return nil
	})
	if err != nil {
		return Errorf("glob %q cancelled: %v", a.Pattern, err)
	}
	if len(hits) == 0 {
		res := Result{Content: fmt.Sprintf("no files match %q in %s", a.Pattern, given)}
		if !start.IsZero() {
			res.Detail = &Detail{Glob: &GlobDetail{Files: []string{}, Took: time.Since(start)}}
		}
		return res
	}
	slices.SortFunc(hits, func(x, y globHit) int {
		if c := y.mtime.Compare(x.mtime); c != 0 {
			return c
		}
		return strings.Compare(x.rel, y.rel)
	})
	var out strings.Builder
	for i, h := range hits {
		if i == globMaxResults {
			fmt.Fprintf(&out, "[… %d more files not shown; narrow the pattern]\n", len(hits)-globMaxResults)
			break
		}
		out.WriteString(h.rel)
		out.WriteByte('\n')
	}
	res := Result{Content: out.String()}
	if !start.IsZero() {
		res.Detail = &Detail{Glob: w.globDetail(hits, searchRoot, absolute, start)}
	}
	return res
}

// globDetail is the files glob shows (hits, newest first), oldest first
// and relative to the workspace root, as Claude Code's Glob lists them.
func (w workRoot) globDetail(hits []globHit, searchRoot string, absolute bool, start time.Time) *GlobDetail {
	shown := slices.Clone(hits[:min(len(hits), globMaxResults)])
	slices.SortStableFunc(shown, func(x, y globHit) int {
		if c := x.mtime.Compare(y.mtime); c != 0 {
			return c
		}
		return strings.Compare(x.rel, y.rel)
	})
	d := &GlobDetail{Files: make([]string, len(shown)), Truncated: len(hits) > len(shown), Total: len(hits)}
	for i, h := range shown {
		full := h.rel
		if !absolute {
			full = filepath.Join(searchRoot, filepath.FromSlash(h.rel))
		}
		d.Files[i] = w.relative(full)
	}
	d.Took = time.Since(start)
	return d
}

// relative is path p relative to the workspace root, with '/', or p
// itself when it is outside.
func (w workRoot) relative(p string) string {
	r, err := filepath.Rel(w.dir, p)
	if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return p
	}
	return filepath.ToSlash(r)
}
