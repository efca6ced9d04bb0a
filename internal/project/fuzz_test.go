package project_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/permission"
	"github.com/arbor-run/arbor/internal/project"
)

// FuzzProjectFiles loads a workspace whose SKILL.md, CLAUDE.md, command
// and .claude/settings.json are the inputs: Load never fails; every
// problem names one of the files; every skill it takes has a valid name
// and description, and the skill tool loads it; every rule it maps is one
// arbor parses; the instructions stay under the cap.
func FuzzProjectFiles(f *testing.F) {
	f.Add("---\nname: a\ndescription: b\n---\nbody", "rules @x.md", "Review $ARGUMENTS", `{"permissions":{"deny":["Read(./.env)","Bash(rm:*)"]}}`)
	f.Add("no front matter", "@../../etc/passwd", "---\ndescription: [\n---", `{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"true"}]}]}}`)
	f.Add("---\nname: Bad\n---\n", strings.Repeat("x", 70000), "", `{"permissions":{"allow":["WebFetch(domain:x)","Edit(//tmp/**)","mcp__s__t"]}}`)
	f.Fuzz(func(t *testing.T, skill, claude, command, settings string) {
		ws := t.TempDir()
		files := map[string]string{
			".claude/skills/s/SKILL.md": skill,
			"CLAUDE.md":                 claude,
			"x.md":                      claude,
			".claude/commands/c.md":     command,
			".claude/settings.json":     settings,
		}
		for p, c := range files {
			full := filepath.Join(ws, p)
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		k := project.Load(project.Options{Workspace: ws})
		for _, p := range k.Problems {
			named := false
			for f := range files {
				named = named || strings.Contains(p.Error(), filepath.Join(ws, f))
			}
			if !named {
				t.Fatalf("problem %q names no file", p)
			}
		}
		total := 0
		for _, in := range k.Instructions {
			total += len(in.Text)
		}
		if total > project.DefaultMaxInstructions+1000 {
			t.Fatalf("%d bytes of instructions", total)
		}
		for _, s := range k.Skills {
			if s.Name == "" || s.Description == "" {
				t.Fatalf("skill %+v", s)
			}
		}
		for _, r := range k.Rules {
			if _, err := permission.ParseRule(r.String(), r.Action, r.Scope); err != nil {
				t.Fatalf("mapped rule %s does not parse: %v", r, err)
			}
		}
	})
}
