package project_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/project"
)

// TestSettingsEnv: the settings files' env, as the real Claude Code CLI
// applies it (recorded in streamjson's project flows "settings-env"):
// values literal, a number or a boolean as its text, a variable set in
// several files taking the narrowest file's value (local, then the
// project's, then arbor's, then the repository root's, then the user's).
func TestSettingsEnv(t *testing.T) {
	t.Parallel()
	root, user := t.TempDir(), filepath.Join(t.TempDir(), "USER")
	ws := filepath.Join(root, "sub")
	tree(t, root, map[string]string{
		".git/HEAD":                       "ref: refs/heads/main\n",
		".claude/settings.json":           `{"env": {"A": "root", "ROOT": "r"}}`,
		"sub/.claude/settings.local.json": `{"env": {"A": "local", "LOCAL": "l"}}`,
		"sub/.claude/settings.json":       `{"env": {"A": "project", "B": "project", "NUM": 5, "FLOAT": 1.50, "FLAG": false, "LITERAL": "$HOME/x"}}`,
		"sub/.arbor/settings.json":        `{"env": {"B": "arbor", "C": "arbor"}}`,
	})
	tree(t, user, map[string]string{"settings.json": `{"env": {"C": "user", "USER_ONLY": "u", "A": "user"}}`})
	k := project.Load(project.Options{Workspace: ws, UserDir: user})
	if len(k.Problems) != 0 {
		t.Fatalf("problems: %v", k.Problems)
	}
	want := []string{"A=local", "B=project", "C=arbor", "FLAG=false", "FLOAT=1.5", "LITERAL=$HOME/x", "LOCAL=l", "NUM=5", "ROOT=r", "USER_ONLY=u"}
	if got := k.EnvList(); !slices.Equal(got, want) {
		t.Fatalf("env %q\nwant %q", got, want)
	}
	// --setting-sources project: neither the local file nor the user's.
	k = project.Load(project.Options{Workspace: ws, UserDir: user, Sources: []string{"project"}})
	if got := k.EnvList(); slices.Contains(got, "LOCAL=l") || slices.Contains(got, "USER_ONLY=u") || !slices.Contains(got, "A=project") {
		t.Fatalf("env under --setting-sources project: %q", got)
	}
}

// TestSettingsEnvMistakes: an env value that is null, an object or a
// list, a name no environment can hold, and an env that is not an
// object are reported and left out; the file's other variables, rules
// and hooks are used. A misspelt "Env" is reported as such.
func TestSettingsEnvMistakes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, file string
		want       []string // in the problems
		env        []string
	}{
		{"bad-values", `{"env": {"OK": "yes", "NUL": null, "OBJ": {"a": 1}, "LIST": [1], "A=B": "x", "ZERO": "a\u0000b"}, "permissions": {"deny": ["Bash(rm:*)"]}}`,
			[]string{"env.NUL: null is not a string", "env.OBJ: {\"a\": 1} is not a string", "env.LIST: [1] is not a string", "env.A=B: not a variable name", "env.ZERO: a value with a NUL byte"},
			[]string{"OK=yes"}},
		{"not-an-object", `{"env": ["A=1"], "permissions": {"deny": ["Bash(rm:*)"]}}`, []string{"env: not an object of variable names and values"}, nil},
		{"misspelt", `{"Env": {"A": "1"}, "permissions": {"deny": ["Bash(rm:*)"]}}`, []string{"Env: not a settings key arbor reads (did you mean env?)"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ws := t.TempDir()
			tree(t, ws, map[string]string{".claude/settings.json": c.file})
			k := project.Load(project.Options{Workspace: ws})
			var problems []string
			for _, p := range k.Problems {
				problems = append(problems, p.Error())
			}
			all := strings.Join(problems, "\n")
			for _, w := range c.want {
				if !strings.Contains(all, w) {
					t.Errorf("problems lack %q:\n%s", w, all)
				}
			}
			if len(problems) != len(c.want) {
				t.Errorf("%d problems, want %d:\n%s", len(problems), len(c.want), all)
			}
			if got := k.EnvList(); !slices.Equal(got, c.env) {
				t.Errorf("env %q, want %q", got, c.env)
			}
			if len(k.Rules) == 0 {
				t.Error("the file's deny rule was lost with its env")
			}
		})
	}
}
