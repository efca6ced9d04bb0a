package tool

import (
	"strings"
	"testing"
)

func TestEdit(t *testing.T) {
	t.Parallel()

	const src = "func a() {\n\treturn 1\n}\n\nfunc b() {\n\treturn 1\n}\n"

	t.Run("ReplacesUniqueMatch", func(t *testing.T) {
		t.Parallel()
		f := setupTools(t)
		f.write("x.go", src)
		got := reqOK(t, f.call("edit", editArgs{Path: "x.go", OldString: "func b() {\n\treturn 1", NewString: "func b() {\n\treturn 2"}))
		reqEqual(t, got, "replaced 1 occurrence in x.go")
		reqEqual(t, f.read("x.go"), "func a() {\n\treturn 1\n}\n\nfunc b() {\n\treturn 2\n}\n")
	})

	t.Run("ReplaceAll", func(t *testing.T) {
		t.Parallel()
		f := setupTools(t)
		f.write("x.go", src)
		got := reqOK(t, f.call("edit", editArgs{Path: "x.go", OldString: "return 1", NewString: "return 0", ReplaceAll: true}))
		reqEqual(t, got, "replaced 2 occurrences in x.go")
		reqEqual(t, f.read("x.go"), strings.ReplaceAll(src, "return 1", "return 0"))
	})

	t.Run("ManyMatchesWithoutReplaceAll", func(t *testing.T) {
		t.Parallel()
		f := setupTools(t)
		f.write("x.go", src)
		msg := reqErr(t, f.call("edit", editArgs{Path: "x.go", OldString: "return 1", NewString: "return 0"}))
		reqContains(t, msg, "occurs 2 times in x.go", "add surrounding context", "replace_all")
		reqEqual(t, f.read("x.go"), src)
	})

	t.Run("NoMatchQuotesOldString", func(t *testing.T) {
		t.Parallel()
		f := setupTools(t)
		f.write("x.go", src)
		msg := reqErr(t, f.call("edit", editArgs{Path: "x.go", OldString: "return  1", NewString: "return 0"}))
		reqContains(t, msg, `old_string not found in x.go: "return  1"`)
		reqEqual(t, f.read("x.go"), src)

		long := strings.Repeat("z", 1000)
		msg = reqErr(t, f.call("edit", editArgs{Path: "x.go", OldString: long, NewString: ""}))
		reqContains(t, msg, strings.Repeat("z", editMaxQuoteChars)+`…"`)
		if strings.Contains(msg, strings.Repeat("z", editMaxQuoteChars+1)) {
			t.Fatal("quote of old_string was not cut")
		}
	})

	t.Run("Errors", func(t *testing.T) {
		t.Parallel()
		f := setupTools(t)
		f.write("x.go", src)
		f.write("bin", "\x00\x01\x02")
		cases := []struct {
			args editArgs
			want string
		}{
			{editArgs{Path: "x.go", OldString: "a", NewString: "a"}, "old_string and new_string are the same"},
			{editArgs{Path: "x.go", OldString: "", NewString: "a"}, "old_string is empty"},
			{editArgs{Path: "missing.go", OldString: "a", NewString: "b"}, "not found: missing.go"},
			{editArgs{Path: ".", OldString: "a", NewString: "b"}, ". is a directory"},
			{editArgs{Path: "bin", OldString: "\x01", NewString: "b"}, "bin is a binary file"},
		}
		for _, tc := range cases {
			reqContains(t, reqErr(t, f.call("edit", tc.args)), tc.want)
		}
		reqEqual(t, f.read("x.go"), src)
	})
}

func TestMultiEdit(t *testing.T) {
	t.Parallel()
	const src = "a = 1\nb = 2\nc = 3\n"

	t.Run("AppliesInOrder", func(t *testing.T) {
		t.Parallel()
		f := setupTools(t)
		f.write("x.py", src)
		got := reqOK(t, f.call("edit", editArgs{Path: "x.py", Edits: []editOp{
			{OldString: "a = 1", NewString: "a = 10"},
			{OldString: "a = 10\nb", NewString: "a = 10\nbb"}, // sees the first edit's result
			{OldString: " = ", NewString: ": ", ReplaceAll: true},
		}}))
		reqEqual(t, got, "made 3 edits (5 replacements) in x.py")
		reqEqual(t, f.read("x.py"), "a: 10\nbb: 2\nc: 3\n")
	})

	t.Run("AllOrNothing", func(t *testing.T) {
		t.Parallel()
		f := setupTools(t)
		f.write("x.py", src)
		msg := reqErr(t, f.call("edit", editArgs{Path: "x.py", Edits: []editOp{
			{OldString: "a = 1", NewString: "a = 10"},
			{OldString: "z = 26", NewString: "z = 0"},
		}}))
		reqContains(t, msg, "edit 2 of 2", "old_string not found", "no edit was made")
		reqEqual(t, f.read("x.py"), src)
	})

	t.Run("ClaudeCodesMultiEdit", func(t *testing.T) {
		t.Parallel()
		f := setupTools(t)
		p := f.write("x.py", src)
		reqOK(t, f.callRaw("MultiEdit", `{"file_path":"`+p+`","edits":[{"old_string":"b = 2","new_string":"b = 20"}]}`))
		reqEqual(t, f.read("x.py"), "a = 1\nb = 20\nc = 3\n")
	})

	t.Run("NotBoth", func(t *testing.T) {
		t.Parallel()
		f := setupTools(t)
		f.write("x.py", src)
		reqContains(t, reqErr(t, f.call("edit", editArgs{Path: "x.py", OldString: "a", NewString: "b", Edits: []editOp{{OldString: "c", NewString: "d"}}})), "not both")
	})
}
