package atomicfile_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/arbor-run/arbor/internal/atomicfile"
)

func TestWrite(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "new", "dir", "config.yaml")
	if err := atomicfile.Write(path, []byte("a: 1\n"), 0o600, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.Write(path, []byte("a: 2\n"), 0o600, 0o700); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "a: 2\n" {
		t.Fatalf("read %q, %v", b, err)
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, %v", fi.Mode(), err)
	}
	if di, err := os.Stat(filepath.Dir(path)); err != nil || di.Mode().Perm() != 0o700 {
		t.Fatalf("dir mode %v, %v", di.Mode(), err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Fatalf("%d files in the directory, want 1 (no temporary file left)", len(entries))
	}
}
