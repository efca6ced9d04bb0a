package tool

import (
	"fmt"
	"strings"
	"testing"
)

func TestGrep(t *testing.T) {
	t.Parallel()

	setup := func(t *testing.T) *toolFixture {
		f := setupTools(t)
		f.write("main.go", "package main\n\nfunc main() {\n\tTODO()\n}\n")
		f.write("web/app.ts", "// todo: types\n")
		f.write("web/view.tsx", "const TODO = 1\n")
		f.write("web/old.js", "TODO\n")
		f.write(".git/config", "TODO\n")
		f.write("logo.png", "\x89PNG\x00\x00TODO")
		return f
	}

	t.Run("MatchesAsPathLineText", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		got := reqOK(t, f.call("grep", grepArgs{Pattern: "TODO"}))
		reqEqual(t, got, "main.go:4:\tTODO()\nweb/old.js:1:TODO\nweb/view.tsx:1:const TODO = 1\n")
	})

	t.Run("IgnoreCase", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		got := reqOK(t, f.call("grep", grepArgs{Pattern: "todo", IgnoreCase: true, Path: "web"}))
		reqEqual(t, got, "web/app.ts:1:// todo: types\nweb/old.js:1:TODO\nweb/view.tsx:1:const TODO = 1\n")
	})

	t.Run("IncludeFilter", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		got := reqOK(t, f.call("grep", grepArgs{Pattern: "(?i)todo", Include: "*.{ts,tsx}"}))
		reqEqual(t, got, "web/app.ts:1:// todo: types\nweb/view.tsx:1:const TODO = 1\n")
		got = reqOK(t, f.call("grep", grepArgs{Pattern: "TODO", Include: "*.go"}))
		reqEqual(t, got, "main.go:4:\tTODO()\n")
		got = reqOK(t, f.call("grep", grepArgs{Pattern: "TODO", Include: "web/*.js"}))
		reqEqual(t, got, "web/old.js:1:TODO\n")
	})

	t.Run("SingleFile", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		reqEqual(t, reqOK(t, f.call("grep", grepArgs{Pattern: "func", Path: "main.go"})), "main.go:3:func main() {\n")
	})

	t.Run("NoMatches", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		reqEqual(t, reqOK(t, f.call("grep", grepArgs{Pattern: "FIXME"})), `no matches for "FIXME" in . (4 files searched)`)
	})

	t.Run("CapsMatches", func(t *testing.T) {
		t.Parallel()
		f := setupTools(t)
		f.write("many.txt", strings.Repeat("hit\n", grepMaxMatches+10))
		got := reqOK(t, f.call("grep", grepArgs{Pattern: "hit"}))
		reqEqual(t, strings.Count(got, "many.txt:"), grepMaxMatches)
		reqContains(t, got, fmt.Sprintf("[… stopped after %d matches; narrow the search]", grepMaxMatches))

		f.write("exact.txt", strings.Repeat("bingo\n", grepMaxMatches))
		reqEqual(t, strings.Contains(reqOK(t, f.call("grep", grepArgs{Pattern: "bingo"})), "stopped"), false)
	})

	t.Run("CapsOutputAndLines", func(t *testing.T) {
		t.Parallel()
		f := setupTools(t)
		f.write("wide.txt", strings.Repeat("needle "+strings.Repeat("y", 1000)+"\n", 200))
		got := reqOK(t, f.call("grep", grepArgs{Pattern: "needle"}))
		if len(got) > grepMaxOutputChars+200 {
			t.Fatalf("output is %d chars, cap is %d", len(got), grepMaxOutputChars)
		}
		reqContains(t, got, " [… line truncated]\n", "[… output capped at 30000 characters after ")
	})

	t.Run("Errors", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		reqContains(t, reqErr(t, f.call("grep", grepArgs{Pattern: "("})), `invalid regular expression "("`)
		reqContains(t, reqErr(t, f.call("grep", grepArgs{Pattern: "x", Include: "{a"})), "invalid include")
		reqContains(t, reqErr(t, f.call("grep", grepArgs{Pattern: "x", Path: "ghost"})), "not found: ghost")
	})
}
