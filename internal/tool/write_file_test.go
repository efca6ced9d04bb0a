package tool

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteFile(t *testing.T) {
	t.Parallel()

	t.Run("CreatesWithParents", func(t *testing.T) {
		t.Parallel()
		f := setupTools(t)
		got := reqOK(t, f.call("write_file", writeFileArgs{Path: "new/deep/f.txt", Content: "hello"}))
		reqEqual(t, got, "created new/deep/f.txt (5 bytes)")
		reqEqual(t, f.read("new/deep/f.txt"), "hello")
	})

	t.Run("OverwritesKeepingMode", func(t *testing.T) {
		t.Parallel()
		f := setupTools(t)
		p := f.write("run.sh", "old")
		if err := os.Chmod(p, 0o750); err != nil {
			t.Fatal(err)
		}
		got := reqOK(t, f.call("write_file", writeFileArgs{Path: "run.sh", Content: "#!/bin/sh\n"}))
		reqEqual(t, got, "overwrote run.sh (10 bytes)")
		reqEqual(t, f.read("run.sh"), "#!/bin/sh\n")
		info, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		reqEqual(t, info.Mode().Perm(), os.FileMode(0o750))
	})

	t.Run("EmptyContent", func(t *testing.T) {
		t.Parallel()
		f := setupTools(t)
		reqEqual(t, reqOK(t, f.call("write_file", writeFileArgs{Path: "e", Content: ""})), "created e (0 bytes)")
		reqEqual(t, f.read("e"), "")
	})

	t.Run("AbsolutePath", func(t *testing.T) {
		t.Parallel()
		f := setupTools(t)
		p := filepath.Join(t.TempDir(), "outside.txt")
		reqOK(t, f.call("write_file", writeFileArgs{Path: p, Content: "x"}))
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		reqEqual(t, string(data), "x")
	})

	t.Run("Errors", func(t *testing.T) {
		t.Parallel()
		f := setupTools(t)
		f.write("dir/x", "")
		f.write("file", "")
		reqContains(t, reqErr(t, f.call("write_file", writeFileArgs{Path: "dir", Content: "x"})), "dir is a directory")
		reqContains(t, reqErr(t, f.call("write_file", writeFileArgs{Path: "file/child", Content: "x"})), "file/child")
		reqContains(t, reqErr(t, f.callRaw("write_file", `{"path":"x"}`)), `missing required field "content"`)
	})
}
