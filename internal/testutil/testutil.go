// Package testutil holds the small helpers that tests of several packages
// share: a buffer safe for a process and a test to use at once, a wait
// for a process to exit, a git
// repository to work in, and the packages a build links. Only tests
// import it.
package testutil

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

// SyncBuffer is a bytes.Buffer safe for concurrent Write and String: a
// server's diagnostics or a process's stderr, read by the test meanwhile.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// GitInit makes dir a git repository on branch main with one empty
// commit, so worktrees can be made from it.
func GitInit(t *testing.T, dir string) {
	t.Helper()
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"-c", "user.email=t@example.com", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "init"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
}

// MemDir returns a temporary directory in memory (/dev/shm) when the
// machine has one, else t.TempDir(); it is removed when t ends. Fuzz
// targets that write files use it: a file written with fsync costs more
// on a disk than the rest of an input.
func MemDir(t testing.TB) string {
	t.Helper()
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if dir, err := os.MkdirTemp("/dev/shm", "arbor-test-"); err == nil {
			t.Cleanup(func() { os.RemoveAll(dir) })
			return dir
		}
	}
	return t.TempDir()
}

// Deps lists the packages pkg links, itself included (go list -deps), as
// a build with the given tags (comma-separated, "" for none) would.
func Deps(t testing.TB, pkg, tags string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-tags", tags, pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps -tags %q %s: %v", tags, pkg, err)
	}
	return strings.Fields(string(out))
}

// JSONType names the JSON type of a value decoded into an any: null,
// string, number, boolean, array or object.
func JSONType(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "boolean"
	case []any:
		return "array"
	}
	return "object"
}
