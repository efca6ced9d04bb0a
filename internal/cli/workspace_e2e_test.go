package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWorkspaceMustBeADirectory: -C naming a regular file or a missing
// path is refused with exit 2 and an error saying which, before the
// state directory or the store is created.
func TestWorkspaceMustBeADirectory(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	model := e.useProvider("anthropic", "http://127.0.0.1:1") // never called
	file := filepath.Join(e.home, "notes.txt")
	if err := os.WriteFile(file, []byte("not a workspace\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(e.home, "missing")
	for _, c := range []struct {
		ws, want string
	}{
		{file, "workspace " + file + " is not a directory"},
		{missing, "workspace " + missing + " does not exist"},
	} {
		for _, args := range [][]string{{"run", "hi"}, {"resume", "some-run"}, {"runs"}, {"sessions", "list"}} {
			o := e.run(append([]string{"-C", c.ws, "--model", model}, args...)...)
			if o.code != 2 || !strings.Contains(o.stderr, c.want) {
				t.Errorf("arbor -C %s %s: exit %d, stderr %q; want 2 and %q", c.ws, strings.Join(args, " "), o.code, o.stderr, c.want)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(e.home, "state")); !os.IsNotExist(err) {
		t.Errorf("the state directory was created (%v)", err)
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Errorf("the missing workspace was created (%v)", err)
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "not a workspace\n" {
		t.Errorf("the file named as workspace: %q %v", b, err)
	}
}
