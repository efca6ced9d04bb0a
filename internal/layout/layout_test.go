package layout

import (
	"bufio"
	"bytes"
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/arbor-run/arbor"

// maxLines is the most lines a non-test Go file may have.
const maxLines = 500

// floor is one floor of docs/architecture.md: its name and the package
// patterns on it ("internal/store/..." is that package and those below).
type floor struct {
	name     string
	patterns []string
}

// root is the repository's top directory.
func root(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "go.mod")); err != nil {
		t.Fatalf("no go.mod at %s: %v", dir, err)
	}
	return dir
}

// readFloors reads the ```floors block of docs/architecture.md: one floor
// a line, top first, as "name: pattern pattern …".
func readFloors(t *testing.T, dir string) []floor {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(dir, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	var fl []floor
	in := false
	sc := bufio.NewScanner(bytes.NewReader(doc))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "```floors":
			in = true
		case in && line == "```":
			in = false
		case in && line != "":
			name, pats, ok := strings.Cut(line, ":")
			if !ok {
				t.Fatalf("docs/architecture.md: floor line %q has no ':'", line)
			}
			fl = append(fl, floor{name: strings.TrimSpace(name), patterns: strings.Fields(pats)})
		}
	}
	if len(fl) < 2 {
		t.Fatal("docs/architecture.md has no ```floors block listing the floors")
	}
	return fl
}

// floorOf is the index of the floor of pkg (a path inside the module):
// an exact pattern wins over a "/..." one, the longest of those over the
// others; -1 when none names it.
func floorOf(fl []floor, pkg string) int {
	best, bestLen := -1, -1
	for i, f := range fl {
		for _, p := range f.patterns {
			n := -1
			if base, ok := strings.CutSuffix(p, "/..."); ok {
				if pkg == base || strings.HasPrefix(pkg, base+"/") {
					n = len(base)
				}
			} else if pkg == p {
				n = len(p) + 1 // exact beats a subtree of the same length
			}
			if n > bestLen {
				best, bestLen = i, n
			}
		}
	}
	return best
}

// pkgInfo is a package's non-test files: their imports inside the module
// and their line counts.
type pkgInfo struct {
	imports []string
	lines   map[string]int
}

// scan parses every non-test Go file under dir (testdata folders and
// hidden ones skipped), by package directory.
func scan(t *testing.T, dir string) map[string]*pkgInfo {
	t.Helper()
	pkgs := map[string]*pkgInfo{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != dir && (n == "testdata" || strings.HasPrefix(n, ".") || n == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, path, src, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, filepath.Dir(path))
		rel = filepath.ToSlash(rel)
		p := pkgs[rel]
		if p == nil {
			p = &pkgInfo{lines: map[string]int{}}
			pkgs[rel] = p
		}
		p.lines[filepath.Base(path)] = bytes.Count(src, []byte("\n"))
		for _, im := range f.Imports {
			path, _ := strconv.Unquote(im.Path.Value)
			if in, ok := strings.CutPrefix(path, module+"/"); ok && !slices.Contains(p.imports, in) {
				p.imports = append(p.imports, in)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pkgs
}

// check places every package on its floor and lists what breaks the
// rules: a package on no floor, an import of one on no floor or on a
// higher floor. byFloor lists the packages of each floor, sorted.
func check(fl []floor, pkgs map[string]*pkgInfo) (byFloor [][]string, problems []string) {
	byFloor = make([][]string, len(fl))
	names := make([]string, 0, len(pkgs))
	for k := range pkgs {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, name := range names {
		f := floorOf(fl, name)
		if f < 0 {
			problems = append(problems, name+" is on no floor of docs/architecture.md: add it where it belongs")
			continue
		}
		byFloor[f] = append(byFloor[f], name)
		for _, im := range pkgs[name].imports {
			g := floorOf(fl, im)
			switch {
			case g < 0:
				problems = append(problems, fmt.Sprintf("%s imports %s, which is on no floor of docs/architecture.md", name, im))
			case g < f:
				problems = append(problems, fmt.Sprintf("%s (floor %q) imports %s (floor %q, higher): imports go down only", name, fl[f].name, im, fl[g].name))
			}
		}
	}
	return byFloor, problems
}

// TestLayers: every package is on a documented floor and imports nothing
// on a higher one. With -v it prints the graph, floor by floor.
func TestLayers(t *testing.T) {
	t.Parallel()
	dir := root(t)
	fl := readFloors(t, dir)
	pkgs := scan(t, dir)
	byFloor, problems := check(fl, pkgs)
	for _, p := range problems {
		t.Error(p)
	}
	for i, f := range fl {
		t.Logf("floor %d, %s:", i+1, f.name)
		for _, name := range byFloor[i] {
			im := slices.Clone(pkgs[name].imports)
			slices.Sort(im)
			t.Logf("    %s → %s", name, strings.Join(im, " "))
		}
	}
}

// TestCheckFindsUpwardImports: the check reports an import that goes up
// and a package the floors do not name, and passes one that goes down or
// stays on its floor.
func TestCheckFindsUpwardImports(t *testing.T) {
	t.Parallel()
	fl := []floor{{"top", []string{"internal/cli"}}, {"mid", []string{"internal/tree", "internal/owner"}}, {"low", []string{"internal/llm"}}}
	pkgs := map[string]*pkgInfo{
		"internal/cli":   {imports: []string{"internal/tree"}},
		"internal/tree":  {imports: []string{"internal/llm", "internal/owner"}},
		"internal/owner": {},
		"internal/llm":   {imports: []string{"internal/cli"}},
		"internal/stray": {},
	}
	_, problems := check(fl, pkgs)
	want := []string{
		`internal/llm (floor "low") imports internal/cli (floor "top", higher): imports go down only`,
		"internal/stray is on no floor of docs/architecture.md: add it where it belongs",
	}
	if !slices.Equal(problems, want) {
		t.Fatalf("problems:\n%s\nwant:\n%s", strings.Join(problems, "\n"), strings.Join(want, "\n"))
	}
}

// TestFloorOf: the most specific pattern names a package's floor.
func TestFloorOf(t *testing.T) {
	t.Parallel()
	fl := []floor{{"top", []string{"cmd/..."}}, {"mid", []string{"internal/store/..."}}, {"low", []string{"internal/store/x", "internal/llm"}}}
	for pkg, want := range map[string]int{
		"cmd/arbor": 0, "internal/store": 1, "internal/store/sqlite": 1, "internal/store/x": 2,
		"internal/llm": 2, "internal/llm/openai": -1, "internal/storex": -1,
	} {
		if got := floorOf(fl, pkg); got != want {
			t.Errorf("floorOf(%s) = %d, want %d", pkg, got, want)
		}
	}
}

// TestFileLength: no non-test Go file passes maxLines lines; a file that
// grows past it wants splitting along its seams.
func TestFileLength(t *testing.T) {
	t.Parallel()
	for name, p := range scan(t, root(t)) {
		for file, n := range p.lines {
			if n > maxLines {
				t.Errorf("%s/%s has %d lines, more than %d: split it along its seams", name, file, n, maxLines)
			}
		}
	}
}

// maxDoorLines bounds internal/cli, the door: flags, help, wiring and
// printing; logic a test or another front end could reuse belongs below.
const maxDoorLines = 2000

// TestDoorIsThin: internal/cli's non-test files stay within maxDoorLines.
func TestDoorIsThin(t *testing.T) {
	t.Parallel()
	p := scan(t, root(t))["internal/cli"]
	if p == nil {
		t.Fatal("no internal/cli")
	}
	total := 0
	for _, n := range p.lines {
		total += n
	}
	if total > maxDoorLines {
		t.Fatalf("internal/cli has %d lines, more than %d: move the logic to the package that owns it", total, maxDoorLines)
	}
}
