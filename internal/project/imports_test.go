package project_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
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

// TestSkillsAndCommandsAreProjectFiles: a project's skill or command file
// that is a FIFO is skipped rather than read (which would hang arbor's
// start for ever), and one that is a symlink out of the project is
// skipped rather than read with the user's rights into a prompt.
func TestSkillsAndCommandsAreProjectFiles(t *testing.T) {
	t.Parallel()
	root, outside := t.TempDir(), t.TempDir()
	tree(t, outside, map[string]string{"creds.md": "SECRET-CREDS\n",
		"SKILL.md": "---\nname: leak\ndescription: leaks\n---\nSECRET-SKILL\n"})
	tree(t, root, map[string]string{".git/HEAD": "ref: refs/heads/main\n",
		".claude/commands/ok.md": "Fine command.\n", ".agents/skills/ok/SKILL.md": "---\nname: ok\ndescription: fine\n---\nFine skill.\n"})
	for _, p := range []string{".agents/skills/fifo", ".agents/skills/leak"} {
		if err := os.MkdirAll(filepath.Join(root, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{".agents/skills/fifo/SKILL.md", ".claude/commands/fifo.md"} {
		if err := syscall.Mkfifo(filepath.Join(root, p), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{".claude/commands/leak.md": "creds.md", ".agents/skills/leak/SKILL.md": "SKILL.md"} {
		if err := os.Symlink(filepath.Join(outside, target), filepath.Join(root, link)); err != nil {
			t.Fatal(err)
		}
	}
	k := project.Load(project.Options{Workspace: root})
	var names []string
	for _, c := range k.Commands {
		names = append(names, "/"+c.Name)
		if strings.Contains(c.Body, "SECRET") {
			t.Fatalf("command %s read a file outside the project: %q", c.Name, c.Body)
		}
	}
	for _, s := range k.Skills {
		names = append(names, s.Name)
		if strings.Contains(s.Body, "SECRET") {
			t.Fatalf("skill %s read a file outside the project: %q", s.Name, s.Body)
		}
	}
	if got := strings.Join(names, " "); got != "/ok ok" {
		t.Fatalf("commands and skills %q; want only /ok and ok", got)
	}
	probs := problemsText(k)
	for _, w := range []string{"fifo.md", "fifo/SKILL.md", "leak.md", "leak/SKILL.md"} {
		if !strings.Contains(probs, w) {
			t.Fatalf("problems do not name %s:\n%s", w, probs)
		}
	}
}

// TestProjectRulesFilesStayInTheProject: a project's .claude/rules file
// that is a symlink out of the project (with or without "paths" in its
// front matter) is reported and not read, and one that is a FIFO (the
// folder is writable by confined commands) neither hangs arbor's start
// nor reaches the prompt; the user's own rules folder may link anywhere.
func TestProjectRulesFilesStayInTheProject(t *testing.T) {
	t.Parallel()
	root, home, outside := t.TempDir(), t.TempDir(), t.TempDir()
	tree(t, outside, map[string]string{"plain.md": "SECRET-RULE\n",
		"scoped.md": "---\npaths: src/*.go\n---\nSECRET-SCOPED\n", "mine.md": "User rule: fine.\n"})
	tree(t, root, map[string]string{".git/HEAD": "ref: refs/heads/main\n", ".claude/rules/ok.md": "Project rule.\n"})
	tree(t, home, map[string]string{".claude/rules/.keep": ""})
	for link, target := range map[string]string{
		filepath.Join(root, ".claude/rules/plain.md"):  "plain.md",
		filepath.Join(root, ".claude/rules/scoped.md"): "scoped.md",
		filepath.Join(home, ".claude/rules/mine.md"):   "mine.md",
	} {
		if err := os.Symlink(filepath.Join(outside, target), link); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mkfifo(filepath.Join(root, ".claude/rules/fifo.md"), 0o644); err != nil {
		t.Fatal(err)
	}
	k := project.Load(project.Options{Workspace: root, Home: home})
	p := k.Prompt()
	for _, secret := range []string{"SECRET-RULE", "SECRET-SCOPED", "scoped.md"} {
		if strings.Contains(p, secret) {
			t.Fatalf("a project rules file linked out of the project reached the prompt (%s):\n%s", secret, p)
		}
	}
	for _, w := range []string{"Project rule.", "User rule: fine."} {
		if !strings.Contains(p, w) {
			t.Fatalf("the prompt lacks %q:\n%s", w, p)
		}
	}
	probs := problemsText(k)
	for _, w := range []string{"plain.md", "scoped.md", "fifo.md"} {
		if !strings.Contains(probs, w) {
			t.Fatalf("problems do not name %s:\n%s", w, probs)
		}
	}
}
