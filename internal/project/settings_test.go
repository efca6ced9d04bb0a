package project_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/project"
)

// TestDisableAllHooks: Claude Code's "disableAllHooks": true in a
// project's settings file (settings.local.json, say) turns off the
// project's hooks but keeps the user's; in the user's file it turns off
// every file's. Rules are not touched.
func TestDisableAllHooks(t *testing.T) {
	t.Parallel()
	const withHook = `{"permissions": {"deny": ["Bash(rm:*)"]}, "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "true"}]}]}}`
	sources := func(k *project.Knowledge) string {
		var s []string
		for _, d := range k.Hooks {
			s = append(s, filepath.Base(filepath.Dir(d.Source))+"/"+filepath.Base(d.Source))
		}
		return strings.Join(s, " ")
	}
	for _, c := range []struct {
		name, local, user, want string
	}{
		{"none-disabled", `{}`, withHook, ".claude/settings.json USER/settings.json"},
		{"project-disables-its-own", `{"disableAllHooks": true}`, withHook, "USER/settings.json"},
		{"false-is-not-off", `{"disableAllHooks": false}`, withHook, ".claude/settings.json USER/settings.json"},
		{"user-disables-all", `{}`, `{"disableAllHooks": true, "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true"}]}]}}`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ws, user := t.TempDir(), filepath.Join(t.TempDir(), "USER")
			tree(t, ws, map[string]string{".claude/settings.json": withHook, ".claude/settings.local.json": c.local})
			tree(t, user, map[string]string{"settings.json": c.user})
			k := project.Load(project.Options{Workspace: ws, UserDir: user})
			if len(k.Problems) != 0 {
				t.Fatalf("problems: %v", k.Problems)
			}
			if got := sources(k); got != c.want {
				t.Fatalf("hooks from %q; want %q", got, c.want)
			}
			if len(k.Rules) == 0 || k.Rules[0].String() != "shell(rm *)" {
				t.Fatalf("rules %v; disableAllHooks must leave the deny rule", k.Rules)
			}
		})
	}
}
