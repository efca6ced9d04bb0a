package project_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/permission"
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

// TestFolderRuleCoversItsFiles: a deny rule naming a folder denies the
// files in it, as Claude Code's gitignore-style matching does (the real
// CLI refuses Read of secrets/key.txt under Read(./secrets) and
// Read(secrets/), in bypassPermissions); arbor matched the folder's own
// path only.
func TestFolderRuleCoversItsFiles(t *testing.T) {
	t.Parallel()
	for _, rule := range []string{"Read(./secrets)", "Read(secrets/)", "Read(/secrets)", "Read(secrets)"} {
		t.Run(rule, func(t *testing.T) {
			t.Parallel()
			ws := t.TempDir()
			tree(t, ws, map[string]string{".claude/settings.json": `{"permissions": {"deny": ["` + rule + `"]}}`, "secrets/key.txt": "KEY\n", "docs/a.md": "A\n"})
			k := project.Load(project.Options{Workspace: ws})
			if len(k.Problems) != 0 {
				t.Fatal(k.Problems)
			}
			e, err := permission.New(permission.Options{Mode: permission.ModeTrust, Workspace: ws, Extra: k.Rules})
			if err != nil {
				t.Fatal(err)
			}
			for path, want := range map[string]permission.Action{"secrets/key.txt": permission.Deny, "secrets": permission.Deny, "docs/a.md": permission.Allow} {
				for _, tl := range []string{"read_file", "grep"} {
					d := e.Decide(permission.Request{Tool: tl, Class: permission.ClassRead, Paths: []string{filepath.Join(ws, path)}})
					if d.Action != want {
						t.Errorf("%s of %s: %s (%s); want %s", tl, path, d.Action, d.Reason, want)
					}
				}
			}
		})
	}
}
