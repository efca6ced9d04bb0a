package tool

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestListDirectory(t *testing.T) {
	t.Parallel()

	t.Run("SortedWithDirsSizesAndLinks", func(t *testing.T) {
		t.Parallel()
		f := setupTools(t)
		f.write("b.txt", "12345")
		f.write("a/inner.txt", "")
		f.write("C.md", "")
		if err := os.Symlink("b.txt", filepath.Join(f.root, "link")); err != nil {
			t.Fatal(err)
		}
		got := reqOK(t, f.call("list_directory", listDirectoryArgs{}))
		reqEqual(t, got, "C.md (0 bytes)\na/\nb.txt (5 bytes)\nlink -> b.txt\n")

		reqEqual(t, reqOK(t, f.call("list_directory", listDirectoryArgs{Path: "a"})), "inner.txt (0 bytes)\n")
		reqEqual(t, reqOK(t, f.call("list_directory", listDirectoryArgs{Path: filepath.Join(f.root, "a")})), "inner.txt (0 bytes)\n")
	})

	t.Run("Empty", func(t *testing.T) {
		t.Parallel()
		f := setupTools(t)
		if err := os.Mkdir(filepath.Join(f.root, "e"), 0o755); err != nil {
			t.Fatal(err)
		}
		reqEqual(t, reqOK(t, f.call("list_directory", listDirectoryArgs{Path: "e"})), "(e is empty)")
	})

	t.Run("CapsEntries", func(t *testing.T) {
		t.Parallel()
		f := setupTools(t)
		for i := range listMaxEntries + 5 {
			f.write(fmt.Sprintf("many/f%04d", i), "")
		}
		got := reqOK(t, f.call("list_directory", listDirectoryArgs{Path: "many"}))
		lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
		reqEqual(t, len(lines), listMaxEntries+1)
		reqEqual(t, lines[listMaxEntries-1], "f0999 (0 bytes)")
		reqEqual(t, lines[listMaxEntries], "[… 5 more entries not shown]")
	})

	t.Run("Errors", func(t *testing.T) {
		t.Parallel()
		f := setupTools(t)
		f.write("file.txt", "")
		reqContains(t, reqErr(t, f.call("list_directory", listDirectoryArgs{Path: "file.txt"})), "file.txt is not a directory; use read_file")
		reqContains(t, reqErr(t, f.call("list_directory", listDirectoryArgs{Path: "ghost"})), "not found: ghost")
	})
}
