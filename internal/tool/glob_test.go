package tool

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestGlobPattern(t *testing.T) {
	t.Parallel()
	cases := []struct {
		pattern, path string
		want          bool
	}{
		{"*.go", "main.go", true},
		{"*.go", "cmd/main.go", false},
		{"**/*.go", "main.go", true},
		{"**/*.go", "a/b/c/main.go", true},
		{"**/*.go", "a/b/c/main.gox", false},
		{"a/**", "a/b/c", true},
		{"a/**/c", "a/c", true},
		{"a/**/c", "a/x/y/c", true},
		{"a/**/c", "a/x/y/d", false},
		{"*.{ts,tsx}", "app.tsx", true},
		{"*.{ts,tsx}", "app.js", false},
		{"{src,lib}/**/*.{c,h}", "lib/x/y.h", true},
		{"{src,lib}/**/*.{c,h}", "doc/y.h", false},
		{"src/{a,b/c}/*.go", "src/b/c/x.go", true},
		{"file?.txt", "file1.txt", true},
		{"[abc].txt", "d.txt", false},
		{"**", "anything/at/all", true},
	}
	for _, tc := range cases {
		g, err := compileGlob(tc.pattern)
		if err != nil {
			t.Fatalf("compileGlob(%q): %v", tc.pattern, err)
		}
		if got := g.match(tc.path); got != tc.want {
			t.Errorf("%q matching %q = %v, want %v", tc.pattern, tc.path, got, tc.want)
		}
	}
	for _, bad := range []string{"", "[", "a{b", "{a,b}{c,d}{e,f}{g,h}{i,j}{k,l}{m,n}{o,p}{q,r}{s,t}{u,v}"} {
		if _, err := compileGlob(bad); err == nil {
			t.Errorf("compileGlob(%q) accepted a bad pattern", bad)
		}
	}
}

func TestGlob(t *testing.T) {
	t.Parallel()

	// setup writes files with increasing modification times, oldest first.
	setup := func(t *testing.T, files ...string) *toolFixture {
		f := setupTools(t)
		base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
		for i, rel := range files {
			p := f.write(rel, "x")
			mt := base.Add(time.Duration(i) * time.Hour)
			if err := os.Chtimes(p, mt, mt); err != nil {
				t.Fatal(err)
			}
		}
		return f
	}

	t.Run("DoubleStarNewestFirst", func(t *testing.T) {
		t.Parallel()
		f := setup(t, "main.go", "internal/a/a.go", "internal/b/deep/b.go", "README.md", ".git/hooks/x.go", "internal/a/a_test.go")
		got := reqOK(t, f.call("glob", globArgs{Pattern: "**/*.go"}))
		reqEqual(t, got, "internal/a/a_test.go\ninternal/b/deep/b.go\ninternal/a/a.go\nmain.go\n")
	})

	t.Run("RelativeToSearchRoot", func(t *testing.T) {
		t.Parallel()
		f := setup(t, "internal/a/a.go", "internal/b/b.go", "other/c.go")
		reqEqual(t, reqOK(t, f.call("glob", globArgs{Pattern: "**/*.go", Path: "internal"})), "b/b.go\na/a.go\n")
		reqEqual(t, reqOK(t, f.call("glob", globArgs{Pattern: "internal/*/a.go"})), "internal/a/a.go\n")
		reqEqual(t, reqOK(t, f.call("glob", globArgs{Pattern: "*.go", Path: filepath.Join(f.root, "other")})), "c.go\n")
	})

	t.Run("AbsolutePattern", func(t *testing.T) {
		t.Parallel()
		f := setup(t, "x/one.txt", "x/two.md")
		got := reqOK(t, f.call("glob", globArgs{Pattern: filepath.Join(f.root, "x") + "/*.txt"}))
		reqEqual(t, got, filepath.Join(f.root, "x", "one.txt")+"\n")
	})

	t.Run("Braces", func(t *testing.T) {
		t.Parallel()
		f := setup(t, "web/a.ts", "web/b.tsx", "web/c.js")
		reqEqual(t, reqOK(t, f.call("glob", globArgs{Pattern: "web/*.{ts,tsx}"})), "web/b.tsx\nweb/a.ts\n")
	})

	t.Run("NoMatches", func(t *testing.T) {
		t.Parallel()
		f := setup(t, "a.txt")
		reqEqual(t, reqOK(t, f.call("glob", globArgs{Pattern: "**/*.rs"})), `no files match "**/*.rs" in .`)
		reqContains(t, reqOK(t, f.call("glob", globArgs{Pattern: "nowhere/**/*.rs"})), "no files match")
	})

	t.Run("CapsResults", func(t *testing.T) {
		t.Parallel()
		f := setupTools(t)
		for i := range globMaxResults + 3 {
			f.write(fmt.Sprintf("d/f%04d.txt", i), "")
		}
		got := reqOK(t, f.call("glob", globArgs{Pattern: "d/*.txt"}))
		lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
		reqEqual(t, len(lines), globMaxResults+1)
		reqEqual(t, lines[globMaxResults], "[… 3 more files not shown; narrow the pattern]")
	})

	t.Run("Errors", func(t *testing.T) {
		t.Parallel()
		f := setup(t, "file.txt")
		reqContains(t, reqErr(t, f.call("glob", globArgs{Pattern: "[", Path: "."})), "bad pattern")
		reqContains(t, reqErr(t, f.call("glob", globArgs{Pattern: "*", Path: "file.txt"})), "file.txt is not a directory")
		reqContains(t, reqErr(t, f.call("glob", globArgs{Pattern: "*", Path: "ghost"})), "not found: ghost")
	})
}
