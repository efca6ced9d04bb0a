package project_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/project"
)

// TestProjectImportsStayInTheProject: an @import in a project's
// instruction file (which an agent can write) that names a file outside
// the project, directly, by ~/ or through a symlink, and an instruction
// file that is itself a symlink out of the project, do not bring that
// file into every agent's prompt (it would read what read_file refuses:
// a key in the home). It is reported. An import inside the project, and
// the user's own AGENTS.md importing anything, still work.
func TestProjectImportsStayInTheProject(t *testing.T) {
	t.Parallel()
	root, user, home, outside := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
	tree(t, outside, map[string]string{"secret.md": "SECRET-ABSOLUTE\n", "linked.md": "SECRET-LINKED\n", "user-import.md": "User import: fine.\n"})
	if err := os.Symlink(filepath.Join(outside, "linked.md"), filepath.Join(root, "CLAUDE.md")); err != nil {
		t.Fatal(err)
	}
	tree(t, home, map[string]string{"keys/id_rsa.md": "SECRET-HOME\n"})
	if err := os.Symlink(filepath.Join(outside, "secret.md"), filepath.Join(root, "link.md")); err != nil {
		t.Fatal(err)
	}
	tree(t, root, map[string]string{
		".git/HEAD":      "ref: refs/heads/main\n",
		"AGENTS.md":      "Root rule.\n@" + filepath.Join(outside, "secret.md") + "\n@~/keys/id_rsa.md\n@link.md\n@docs/inside.md\n",
		"docs/inside.md": "Inside import.\n",
	})
	tree(t, user, map[string]string{"AGENTS.md": "User rule.\n@" + filepath.Join(outside, "user-import.md") + "\n"})
	k := project.Load(project.Options{Workspace: root, UserDir: user, Home: home})
	p := k.Prompt()
	for _, secret := range []string{"SECRET-ABSOLUTE", "SECRET-HOME", "SECRET-LINKED"} {
		if strings.Contains(p, secret) {
			t.Fatalf("a project file's import of a file outside the project reached the prompt (%s):\n%s", secret, p)
		}
	}
	for _, w := range []string{"Root rule.", "Inside import.", "User rule.", "User import: fine."} {
		if !strings.Contains(p, w) {
			t.Fatalf("the prompt lacks %q:\n%s", w, p)
		}
	}
	probs := problemsText(k)
	for _, w := range []string{"secret.md", "id_rsa.md", "link.md", "CLAUDE.md"} {
		if !strings.Contains(probs, w) || !strings.Contains(probs, "outside the project") {
			t.Fatalf("problems do not report the import of %s as outside the project:\n%s", w, probs)
		}
	}
}
