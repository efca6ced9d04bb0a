package project

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"unicode/utf8"
)

// Instruction file names, in the order read within one folder: the
// cross-tool convention, then Claude Code's (.claude/CLAUDE.md is its
// other place for the project's file; the local variant comes last).
var instructionNames = []string{"AGENTS.md", "CLAUDE.md", filepath.Join(".claude", "CLAUDE.md"), "CLAUDE.local.md"}

// DefaultMaxInstructions caps the instruction text that reaches a
// prompt, every file and import together; what passes it is cut and
// reported.
const DefaultMaxInstructions = 64 << 10

// maxImportDepth bounds @path imports within imports (Claude Code's 5).
const maxImportDepth = 5

// Instruction is one instruction file (or an import) as it reaches the
// prompt.
type Instruction struct {
	Path string // absolute
	// Dir is the folder the file applies to: work under it follows it.
	Dir  string
	Text string
	// ImportedBy is the file whose @path imported this one; "" for a
	// file found by name.
	ImportedBy string
}

// Nested is an instruction file below the workspace: it applies only to
// work under its folder, so the prompt names it rather than including it.
type Nested struct {
	Path string // relative to the workspace
	Dir  string // relative to the workspace
}

// instructionReader reads instruction files under a shared cap.
type instructionReader struct {
	home string
	// fence is the project's folder, symlinks resolved: a project file
	// (or one it imports) that is not in it is not read. An agent can
	// write the project's files, so an import or a symlink there would
	// otherwise bring into every prompt a file the agent may not read
	// (a key under ~/.ssh). The user's own file, read first, has no fence.
	fence   string
	left    int
	seen    map[string]bool // real paths read
	out     []Instruction
	report  func(error)
	capSaid bool
}

// readFile reads path and the files it imports, depth-first, each once;
// fenced says path is the project's (or imported by a project file).
func (r *instructionReader) readFile(path, dir, importedBy string, depth int, fenced bool) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		if !errorsIsNotExist(err) {
			r.report(fmt.Errorf("%s: %w; skipped", path, err))
		}
		return
	}
	if fenced && !inside(r.fence, real) {
		what := path
		if importedBy != "" {
			what = importedBy + " imports " + path + ", which"
		}
		r.report(fmt.Errorf("%s resolves to %s, outside the project %s; a project's instruction files and their imports are read only inside it (the user's own AGENTS.md may import any file); skipped", what, real, r.fence))
		return
	}
	if r.seen[real] {
		return
	}
	r.seen[real] = true
	if fi, err := os.Stat(real); err != nil || !fi.Mode().IsRegular() {
		if err == nil {
			err = fmt.Errorf("not a regular file")
		}
		r.report(fmt.Errorf("%s: %w; skipped", path, err))
		return
	}
	if r.left <= 0 {
		r.overCap(path, -1)
		return
	}
	text, size, cut, err := readCapped(real, r.left)
	if err != nil {
		r.report(fmt.Errorf("%s: %w; skipped", path, err))
		return
	}
	if cut {
		r.overCap(path, size)
		text += fmt.Sprintf("\n[arbor: the rest of %s (%d bytes in all) is left out: instruction files are capped at %d bytes together; see docs/project-files.md]", path, size, DefaultMaxInstructions)
	}
	r.left -= len(text)
	r.out = append(r.out, Instruction{Path: path, Dir: dir, Text: text, ImportedBy: importedBy})
	if depth >= maxImportDepth {
		return
	}
	for _, imp := range imports(text) {
		p := imp
		switch {
		case strings.HasPrefix(p, "~/"):
			p = filepath.Join(r.home, p[2:])
		case !filepath.IsAbs(p):
			p = filepath.Join(filepath.Dir(path), p)
		}
		if fi, err := os.Stat(p); err != nil || fi.IsDir() {
			continue // an @mention, not an import
		}
		r.readFile(p, dir, path, depth+1, fenced)
	}
}

func (r *instructionReader) overCap(path string, size int64) {
	if size >= 0 {
		r.report(fmt.Errorf("%s is %d bytes: instruction files are capped at %d bytes together, so its end is left out", path, size, DefaultMaxInstructions))
		return
	}
	r.report(fmt.Errorf("%s: left out: the instruction files before it filled the cap of %d bytes", path, DefaultMaxInstructions))
}

// readCapped reads at most limit bytes of path and returns them as text,
// with the file's size and whether the cap cut it. A text cut mid-rune is
// cut before that rune; bytes that are not UTF-8 elsewhere become U+FFFD
// (they are not a cut).
func readCapped(path string, limit int) (text string, size int64, cut bool, err error) {
	// Not blocking: a FIFO put there since the check must not hang the start.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return "", 0, false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", 0, false, err
	}
	b, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return "", 0, false, err
	}
	if cut = len(b) > limit; cut {
		b = b[:limit]
		for i := 0; i < utf8.UTFMax-1 && len(b) > 0; i++ {
			if r, n := utf8.DecodeLastRune(b); r != utf8.RuneError || n != 1 {
				break
			}
			b = b[:len(b)-1] // a rune cut at the cap
		}
	}
	if bytes.IndexByte(b, 0) >= 0 {
		return "", 0, false, fmt.Errorf("holds NUL bytes: not a text file")
	}
	return strings.ToValidUTF8(string(b), "\uFFFD"), fi.Size(), cut, nil
}

// importRe finds Claude Code's "@path" imports: an @ at the start of a
// line or after a space, then a run of anything but spaces ("\ " is a
// space in the path), as Claude Code reads them: "@~/.claude/x.md" and
// "@.github/copilot-instructions.md" are imports too.
var importRe = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?m)(?:^|[ \t(])@((?:[^\s\\]|\\ )+)`)
})

// importPath is the file an @mention names, "" when it names none:
// Claude Code's rules (an "#anchor" is cut, "\ " is a space, and the
// path starts with "./", "~/", "/" or a letter, digit, '.', '_' or '-').
// Trailing punctuation of a sentence is no part of it.
func importPath(m string) string {
	if i := strings.IndexByte(m, '#'); i >= 0 {
		m = m[:i]
	}
	m = strings.TrimRight(strings.ReplaceAll(m, `\ `, " "), ".,;:)")
	if m == "" || m == "/" {
		return ""
	}
	c := m[0]
	if c == '/' || c == '~' && strings.HasPrefix(m, "~/") || c == '.' || c == '_' || c == '-' ||
		'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' {
		return m
	}
	return ""
}

// imports lists the @paths of text outside code spans and fenced blocks.
func imports(text string) []string {
	var out []string
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if t := strings.TrimSpace(line); strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		line = codeSpan().ReplaceAllString(line, "")
		for _, m := range importRe().FindAllStringSubmatch(line, -1) {
			if p := importPath(m[1]); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

// codeSpan matches an inline code span, whose @ is no import.
var codeSpan = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("`[^`]*`") })

// repoRoot is the nearest folder at or above dir holding .git; dir
// itself when there is none (no folder above a repository is read).
func repoRoot(dir string) string {
	for d := dir; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		up := filepath.Dir(d)
		if up == d {
			return dir
		}
		d = up
	}
}

// chain is the folders from root down to ws, both included.
func chain(root, ws string) []string {
	var out []string
	for d := ws; ; d = filepath.Dir(d) {
		out = append(out, d)
		if d == root || filepath.Dir(d) == d {
			break
		}
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// skipDirs are not searched for nested instruction files.
var skipDirs = map[string]bool{".git": true, "node_modules": true, "vendor": true, "testdata": true}

// maxNestedDirs bounds the folders searched for nested files, so a huge
// tree costs a bounded time at start.
const maxNestedDirs = 4000

// nested finds the instruction files below ws.
func nested(ws string) []Nested {
	var out []Nested
	n := 0
	_ = filepath.WalkDir(ws, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if p != ws && (skipDirs[d.Name()] || strings.HasPrefix(d.Name(), ".")) {
			return filepath.SkipDir
		}
		if n++; n > maxNestedDirs {
			return filepath.SkipAll
		}
		if p == ws {
			return nil
		}
		for _, name := range instructionNames {
			if fi, err := os.Stat(filepath.Join(p, name)); err == nil && fi.Mode().IsRegular() {
				rel, _ := filepath.Rel(ws, p)
				out = append(out, Nested{Path: filepath.Join(rel, name), Dir: rel})
			}
		}
		return nil
	})
	return out
}

// inside reports whether the clean absolute path p is dir or below it.
func inside(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// projectFile checks a file arbor reads from the project: a regular file
// (a FIFO would hang the start for ever) and, when fence is set, inside
// it once symlinks are resolved (see instructionReader.fence).
func projectFile(path, fence string) error {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return err
	}
	if fence != "" && !inside(fence, real) {
		return fmt.Errorf("it resolves to %s, outside the project %s, and a project's files are read only inside it", real, fence)
	}
	fi, err := os.Stat(real)
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("not a regular file (%s)", fi.Mode().Type())
	}
	return nil
}
