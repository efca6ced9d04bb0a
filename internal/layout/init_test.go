package layout

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestNothingCompiledAtInit: no package-level variable of arbor's code is
// a regular expression compiled by its initialiser. Every process runs
// every initialiser of its binary, and a gateway starts a thousand
// headless sessions: a pattern is compiled on first use instead
// (sync.OnceValue), as docs/benchmarks.md ("Eleventh round") measured.
func TestNothingCompiledAtInit(t *testing.T) {
	t.Parallel()
	const src = "package p\nimport re \"regexp\"\nvar a, b = re.MustCompile(`a`), func() int { re.MustCompile(`b`); return 0 }\n"
	if f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, 0); err != nil || len(compiledAtInit(f)) != 1 {
		t.Fatalf("the check does not find the one pattern compiled at init of %q (%v)", src, err)
	}
	fset := token.NewFileSet()
	for _, dir := range []string{"internal", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root(t), dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && d.Name() == "testdata" {
				return filepath.SkipDir
			}
			if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			for _, pos := range compiledAtInit(f) {
				t.Errorf("%s: a regular expression compiled at init; compile it on first use (sync.OnceValue)", fset.Position(pos))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// compiledAtInit is where f's package-level variables call regexp's
// Compile functions while the package initialises (outside function
// literals, which run later).
func compiledAtInit(f *ast.File) []token.Pos {
	name := ""
	for _, im := range f.Imports {
		if p, _ := strconv.Unquote(im.Path.Value); p == "regexp" {
			name = "regexp"
			if im.Name != nil {
				name = im.Name.Name
			}
		}
	}
	if name == "" {
		return nil
	}
	var at []token.Pos
	for _, decl := range f.Decls {
		g, ok := decl.(*ast.GenDecl)
		if !ok || g.Tok != token.VAR {
			continue
		}
		ast.Inspect(g, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncLit:
				return false
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok && x.Name == name && strings.Contains(n.Sel.Name, "Compile") {
					at = append(at, n.Pos())
				}
			}
			return true
		})
	}
	return at
}
