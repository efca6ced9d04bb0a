package tool

import (
	"fmt"
	"strings"
	"testing"
)

func numberedLines(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

func TestReadFile(t *testing.T) {
	t.Parallel()

	t.Run("NumbersLines", func(t *testing.T) {
		t.Parallel()
		f := setupTools(t)
		f.write("a.txt", "alpha\nbeta\r\n\ngamma")
		got := reqOK(t, f.call("read_file", readFileArgs{Path: "a.txt"}))
		reqEqual(t, got, "     1\talpha\n     2\tbeta\n     3\t\n     4\tgamma\n")
	})

	t.Run("OffsetAndLimit", func(t *testing.T) {
		t.Parallel()
		f := setupTools(t)
		f.write("n.txt", numberedLines(10))
		got := reqOK(t, f.call("read_file", readFileArgs{Path: "n.txt", Offset: 4, Limit: 2}))
		reqEqual(t, got, "     4\tline 4\n     5\tline 5\n[showing lines 4-5; the file continues: read again with offset=6]\n")

		got = reqOK(t, f.call("read_file", readFileArgs{Path: "n.txt", Offset: 9, Limit: 2}))
		reqEqual(t, got, "     9\tline 9\n    10\tline 10\n")
	})

	t.Run("DefaultLimitIs2000Lines", func(t *testing.T) {
		t.Parallel()
		f := setupTools(t)
		f.write("big.txt", numberedLines(2500))
		got := reqOK(t, f.call("read_file", readFileArgs{Path: "big.txt"}))
		reqEqual(t, strings.Count(got, "\n"), 2001)
		reqContains(t, got, "  2000\tline 2000\n", "offset=2001")
	})

	t.Run("AbsolutePath", func(t *testing.T) {
		t.Parallel()
		f := setupTools(t)
		abs := f.write("sub/abs.txt", "x\n")
		reqEqual(t, reqOK(t, f.call("read_file", readFileArgs{Path: abs})), "     1\tx\n")
	})

	t.Run("CutsLongLines", func(t *testing.T) {
		t.Parallel()
		f := setupTools(t)
		f.write("long.txt", strings.Repeat("é", 5000)+"\nshort\n")
		got := reqOK(t, f.call("read_file", readFileArgs{Path: "long.txt"}))
		first, rest, _ := strings.Cut(got, "\n")
		reqEqual(t, first, "     1\t"+strings.Repeat("é", readMaxLineChars)+" [… line truncated]")
		reqEqual(t, rest, "     2\tshort\n")
	})

	t.Run("HugeLineLongerThanReadBuffer", func(t *testing.T) {
		t.Parallel()
		f := setupTools(t)
		f.write("huge.txt", "first\n"+strings.Repeat("z", 300_000)+"\nlast")
		got := reqOK(t, f.call("read_file", readFileArgs{Path: "huge.txt"}))
		reqEqual(t, got, "     1\tfirst\n     2\t"+strings.Repeat("z", readMaxLineChars)+" [… line truncated]\n     3\tlast\n")
		got = reqOK(t, f.call("read_file", readFileArgs{Path: "huge.txt", Offset: 3}))
		reqEqual(t, got, "     3\tlast\n")
	})

	t.Run("CapsTotalOutput", func(t *testing.T) {
		t.Parallel()
		f := setupTools(t)
		line := strings.Repeat("x", 1000) + "\n"
		f.write("wide.txt", strings.Repeat(line, 1000))
		got := reqOK(t, f.call("read_file", readFileArgs{Path: "wide.txt"}))
		if len(got) > readMaxOutputBytes+200 {
			t.Fatalf("output is %d bytes, cap is %d", len(got), readMaxOutputBytes)
		}
		reqContains(t, got, "[output capped at 262144 bytes; continue with offset=")
	})

	t.Run("EmptyFile", func(t *testing.T) {
		t.Parallel()
		f := setupTools(t)
		f.write("empty.txt", "")
		reqEqual(t, reqOK(t, f.call("read_file", readFileArgs{Path: "empty.txt"})), "(empty.txt is empty)")
	})

	t.Run("Errors", func(t *testing.T) {
		t.Parallel()
		f := setupTools(t)
		f.write("dir/n.txt", numberedLines(3))
		f.write("bin.dat", "ELF\x00\x01\x02binary")
		cases := []struct {
			name string
			args readFileArgs
			want string
		}{
			{"Missing", readFileArgs{Path: "nope.txt"}, "not found: nope.txt"},
			{"Directory", readFileArgs{Path: "dir"}, "dir is a directory; use list_directory"},
			{"Binary", readFileArgs{Path: "bin.dat"}, "bin.dat is a binary file (12 bytes)"},
			{"PastEnd", readFileArgs{Path: "dir/n.txt", Offset: 7}, "dir/n.txt has 3 lines; offset 7 is past the end"},
			{"EmptyPath", readFileArgs{}, "path is empty"},
		}
		for _, tc := range cases {
			reqContains(t, reqErr(t, f.call("read_file", tc.args)), tc.want)
		}
		reqContains(t, reqErr(t, f.callRaw("read_file", `{"path":"a","offset":-1}`)), `field "offset" must be >= 0`)
	})
}
