package tool

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Caps of grep.
const (
	grepMaxMatches     = 500
	grepMaxOutputChars = 30000
	// grepMaxLineChars is where a matching line is cut in the output.
	grepMaxLineChars = 500
	// grepScanLineBytes is how much of each line is searched; the rest of
	// a longer line (minified code, data) is skipped.
	grepScanLineBytes = 64 << 10
)

type grepArgs struct {
	Pattern    string `json:"pattern" jsonschema_description:"Regular expression (Go RE2 syntax) searched for in each line."`
	Path       string `json:"path,omitempty" jsonschema_description:"File or directory to search: relative to the workspace root, or absolute. Default: the workspace root."`
	Include    string `json:"include,omitempty" jsonschema_description:"Only search files whose name matches this glob, e.g. \"*.go\" or \"*.{ts,tsx}\"."`
	IgnoreCase bool   `json:"ignore_case,omitempty" jsonschema_description:"Match case-insensitively."`
}

func (a grepArgs) Target() Target { return Target{Paths: []string{cmp.Or(a.Path, ".")}} }

const grepDescription = `Search file contents with a regular expression. Prints "path:line:text" for each matching line; ` +
	`paths are relative to the workspace root when path is relative. Binary files and .git are skipped. ` +
	`At most 500 matches are shown.`

func newGrep(root workRoot) Tool {
	return New("grep", grepDescription, KindRead, func(ctx context.Context, _ Call, a grepArgs) Result {
		return root.grep(ctx, a)
	})
}

// errGrepFull stops the walk once the output is full.
var errGrepFull = errors.New("grep output full")

// grepRun holds the state of one search.
type grepRun struct {
	re      *regexp.Regexp
	include *globPattern
	matches int
	out     strings.Builder
	full    bool   // a cap was hit and the walk stops
	capNote string // says which cap
	scanned int    // text files searched
}

func (w workRoot) grep(ctx context.Context, a grepArgs) Result {
	expr := a.Pattern
	if a.IgnoreCase {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return Errorf("invalid regular expression %q: %v", a.Pattern, err)
	}
	g := &grepRun{re: re}
	if a.Include != "" {
		if g.include, err = compileGlob(a.Include); err != nil {
			return Errorf("invalid include: %v", err)
		}
	}
	given := cmp.Or(a.Path, ".")
	root := w.abs(given)
	pl, err := w.locate(root)
	if err != nil {
		return pathError(given, err)
	}
	defer pl.Close()
	info, err := pl.root.Stat(pl.name)
	if err != nil {
		return pathError(given, err)
	}
	if !info.IsDir() {
		g.file(pl, displayPath(a.Path, ""))
	} else {
		err = pl.walk(func(p string, d fs.DirEntry, err error) error {
			if ctxErr := ctx.Err(); ctxErr != nil {
				return ctxErr
			}
			if err != nil {
				if d != nil && d.IsDir() && p != root {
					return fs.SkipDir
				}
				return nil
			}
			if p != root && w.hidden("grep", p) {
				if d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
			if d.IsDir() {
				if d.Name() == ".git" && p != root {
					return fs.SkipDir
				}
				return nil
			}
			if !d.Type().IsRegular() {
				return nil
			}
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return nil
			}
			rel = filepath.ToSlash(rel)
			if g.include != nil && !g.includes(rel) {
				return nil
			}
			g.file(pl.at(p), displayPath(a.Path, rel))
			if g.full {
				return errGrepFull
			}
			return nil
		})
		if err != nil && !errors.Is(err, errGrepFull) {
			return Errorf("grep cancelled: %v", err)
		}
	}
	var d *Detail
	if wantsDetail(ctx) {
		d = &Detail{Grep: &GrepDetail{Content: strings.TrimSuffix(g.out.String(), "\n"), Lines: g.matches}}
	}
	if g.matches == 0 {
		return Result{Content: fmt.Sprintf("no matches for %q in %s (%s searched)", a.Pattern, given, plural(g.scanned, "file")), Detail: d}
	}
	if g.full {
		g.out.WriteString(g.capNote)
	}
	return Result{Content: g.out.String(), Detail: d}
}

// includes matches the include glob against the file name, or against the
// whole relative path when the glob has a '/'.
func (g *grepRun) includes(rel string) bool {
	if strings.Contains(g.include.source, "/") {
		return g.include.match(rel)
	}
	return g.include.match(rel[strings.LastIndexByte(rel, '/')+1:])
}

// file searches one file, appending matches until a cap is hit.
func (g *grepRun) file(pl place, display string) {
	f, err := pl.open(os.O_RDONLY, 0)
	if err != nil {
		return // unreadable files (and FIFOs, devices) are skipped like binary ones
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	if binary, err := sniffBinary(br); err != nil || binary {
		return
	}
	g.scanned++
	for lineNo := 1; ; lineNo++ {
		line, _, err := readLine(br, grepScanLineBytes)
		if err != nil {
			return // io.EOF or a read error: nothing more to search here
		}
		if !g.re.Match(line) {
			continue
		}
		if g.matches == grepMaxMatches {
			g.full = true
			g.capNote = fmt.Sprintf("[… stopped after %d matches; narrow the search]\n", grepMaxMatches)
			return
		}
		text, cut := cutRunes(string(line), grepMaxLineChars)
		if cut {
			text += " [… line truncated]"
		}
		entry := fmt.Sprintf("%s:%d:%s\n", display, lineNo, text)
		if g.out.Len()+len(entry) > grepMaxOutputChars {
			g.full = true
			g.capNote = fmt.Sprintf("[… output capped at %d characters after %d matches; narrow the search]\n", grepMaxOutputChars, g.matches)
			return
		}
		g.out.WriteString(entry)
		g.matches++
	}
}

// displayPath shows a match the way the model can reuse it: under the path
// it gave (so a relative one stays relative to the workspace root).
func displayPath(given, rel string) string {
	switch {
	case given == "":
		return rel
	case rel == "":
		return given
	}
	return filepath.ToSlash(filepath.Join(given, rel))
}
