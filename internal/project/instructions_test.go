package project_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/project"
)

// TestImportPathsAsClaudeCodeReadsThem: an @path is a run of anything but
// spaces, so the imports Claude Code's docs show (@~/.claude/…, a dot
// folder such as @.github/…) are taken for imports, "\ " is a space in a
// path, and an "#anchor" is cut off; an @ inside a word (a mail address)
// is none. A project file's import outside the project (@~/…) is
// reported and not read, as Claude Code withholds such imports until the
// user approves them (TestProjectImportsStayInTheProject).
func TestImportPathsAsClaudeCodeReadsThem(t *testing.T) {
	t.Parallel()
	ws, home := t.TempDir(), t.TempDir()
	tree(t, ws, map[string]string{
		"CLAUDE.md": "Imports:\n- @.github/copilot-instructions.md\n- @~/.claude/my-prefs.md\n" +
			"- @docs/my\\ notes.md and @docs/a+b.md#setup.\n- mail me at dev@docs/mail.md\n",
		".github/copilot-instructions.md": "DOT-FOLDER-IMPORTED\n",
		"docs/my notes.md":                "SPACE-IMPORTED\n",
		"docs/a+b.md":                     "PLUS-IMPORTED\n",
		"docs/mail.md":                    "MAIL-MUST-NOT-APPEAR\n",
	})
	tree(t, home, map[string]string{".claude/my-prefs.md": "HOME-DOT-IMPORTED\n"})
	k := project.Load(project.Options{Workspace: ws, Home: home})
	if probs := problemsText(k); len(k.Problems) != 1 || !strings.Contains(probs, "my-prefs.md") || !strings.Contains(probs, "outside the project") {
		t.Fatalf("problems: %v; want the home import reported as outside the project", k.Problems)
	}
	var got []string
	for _, in := range k.Instructions {
		got = append(got, filepath.Base(in.Path))
	}
	if want := "CLAUDE.md copilot-instructions.md my notes.md a+b.md"; strings.Join(got, " ") != want {
		t.Fatalf("instructions %q; want %s", got, want)
	}
	if p := k.Prompt(); strings.Contains(p, "MAIL-MUST-NOT-APPEAR") {
		t.Fatalf("an @ inside a word was taken for an import:\n%s", p)
	}
}

// TestClaudeCodesOtherInstructionPlaces: Claude Code reads the user's
// ~/.claude/CLAUDE.md, and a folder's .claude/CLAUDE.md beside (after)
// its CLAUDE.md; --setting-sources without user leaves the user's out.
func TestClaudeCodesOtherInstructionPlaces(t *testing.T) {
	t.Parallel()
	root, home := t.TempDir(), t.TempDir()
	tree(t, root, map[string]string{
		".git/HEAD":                 "ref: refs/heads/main\n",
		"CLAUDE.md":                 "ROOT-FILE\n",
		".claude/CLAUDE.md":         "ROOT-DOT-CLAUDE\n",
		"CLAUDE.local.md":           "ROOT-LOCAL\n",
		"svc/.claude/CLAUDE.md":     "SVC-DOT-CLAUDE\n",
		"svc/api/.claude/CLAUDE.md": "API-DOT-CLAUDE\n",
	})
	tree(t, home, map[string]string{".claude/CLAUDE.md": "HOME-CLAUDE\n"})
	ws := filepath.Join(root, "svc")
	names := func(k *project.Knowledge) string {
		var got []string
		for _, in := range k.Instructions {
			got = append(got, strings.TrimSpace(in.Text))
		}
		return strings.Join(got, " ")
	}
	k := project.Load(project.Options{Workspace: ws, Home: home})
	if len(k.Problems) != 0 {
		t.Fatalf("problems: %v", k.Problems)
	}
	if want := "HOME-CLAUDE ROOT-FILE ROOT-DOT-CLAUDE ROOT-LOCAL SVC-DOT-CLAUDE"; names(k) != want {
		t.Fatalf("instructions %q; want %q", names(k), want)
	}
	if len(k.Nested) != 1 || k.Nested[0].Path != filepath.Join("api", ".claude", "CLAUDE.md") {
		t.Fatalf("nested %+v; want api/.claude/CLAUDE.md", k.Nested)
	}
	k = project.Load(project.Options{Workspace: ws, Home: home, Sources: []string{"project"}})
	if want := "ROOT-FILE ROOT-DOT-CLAUDE SVC-DOT-CLAUDE"; names(k) != want {
		t.Fatalf("with --setting-sources project: instructions %q; want %q", names(k), want)
	}
}

// TestClaudeRulesFolders: Claude Code's .claude/rules/**/*.md (the
// project's and ~/.claude/rules) are instruction files, read after a
// folder's CLAUDE.md files and before CLAUDE.local.md; a rules file whose
// front matter names "paths" applies to those files only, so the prompt
// lists it with its patterns rather than including it.
func TestClaudeRulesFolders(t *testing.T) {
	t.Parallel()
	ws, home := t.TempDir(), t.TempDir()
	tree(t, ws, map[string]string{
		"CLAUDE.md":                       "ROOT-FILE\n",
		"CLAUDE.local.md":                 "ROOT-LOCAL\n",
		".claude/rules/style.md":          "RULE-STYLE\n",
		".claude/rules/frontend/react.md": "RULE-REACT\n",
		".claude/rules/api.md":            "---\npaths:\n  - \"src/api/**/*.ts\"\n  - lib/*.ts\n---\nRULE-API-MUST-NOT-BE-INCLUDED\n",
		".claude/rules/notes.txt":         "NOT-MARKDOWN\n",
	})
	tree(t, home, map[string]string{".claude/rules/mine.md": "RULE-MINE\n"})
	k := project.Load(project.Options{Workspace: ws, Home: home})
	if len(k.Problems) != 0 {
		t.Fatalf("problems: %v", k.Problems)
	}
	var got []string
	for _, in := range k.Instructions {
		got = append(got, strings.TrimSpace(in.Text))
	}
	if want := "RULE-MINE ROOT-FILE RULE-REACT RULE-STYLE ROOT-LOCAL"; strings.Join(got, " ") != want {
		t.Fatalf("instructions %q; want %q", got, want)
	}
	p := k.Prompt()
	if strings.Contains(p, "RULE-API-MUST-NOT-BE-INCLUDED") || !strings.Contains(p, filepath.ToSlash(filepath.Join(ws, ".claude/rules/api.md"))+" (for files matching src/api/**/*.ts, lib/*.ts)") {
		t.Fatalf("the prompt must list the path rule with its patterns, not include it:\n%s", p)
	}
}
