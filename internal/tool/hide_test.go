package tool

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/permission"
)

// TestWalksLeaveOutDeniedPaths: grep, glob and list_directory over a
// folder leave out what a deny rule keeps from being read: a rule of the
// walking tool's own, or of read_file (the rules Claude Code's
// Read(./secrets) maps to, and arbor's own read_file rules). Before,
// grep of "." printed the lines of secrets/key.txt that read_file
// refused. With no deny rule nothing is left out.
func TestWalksLeaveOutDeniedPaths(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		rules []permission.Rule
	}{
		{"read_file rules", []permission.Rule{
			{Tool: "read_file", Pattern: "secrets/**", Action: permission.Deny, Scope: permission.ScopeSession},
			{Tool: "read_file", Pattern: "**/.env", Action: permission.Deny, Scope: permission.ScopeSession}}},
		{"each tool's rules", []permission.Rule{
			{Tool: "grep", Pattern: "secrets/**", Action: permission.Deny, Scope: permission.ScopeSession},
			{Tool: "glob", Pattern: "secrets/**", Action: permission.Deny, Scope: permission.ScopeSession},
			{Tool: "list_directory", Pattern: "secrets", Action: permission.Deny, Scope: permission.ScopeSession},
			{Tool: "grep", Pattern: "**/.env", Action: permission.Deny, Scope: permission.ScopeSession},
			{Tool: "glob", Pattern: "**/.env", Action: permission.Deny, Scope: permission.ScopeSession},
			{Tool: "list_directory", Pattern: "**/.env", Action: permission.Deny, Scope: permission.ScopeSession}}},
		{"no rule", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ws := t.TempDir()
			for name, body := range map[string]string{"secrets/key.txt": "TOKEN=hunter2\n", "app/.env": "TOKEN=swordfish\n",
				"app/main.go": "// TOKEN is read from the environment\n", "README.md": "no TOKEN here\n"} {
				must(t, os.MkdirAll(filepath.Dir(filepath.Join(ws, name)), 0o755))
				must(t, os.WriteFile(filepath.Join(ws, name), []byte(body), 0o644))
			}
			e, err := permission.New(permission.Options{Mode: permission.ModeTrust, Workspace: ws})
			must(t, err)
			for _, r := range c.rules {
				must(t, e.AddRule(r))
			}
			tools := map[string]Tool{}
			for _, tl := range Builtins(BuiltinOptions{Workspace: ws, Policy: e}) {
				tools[Name(tl)] = Guard(tl, e, nil)
			}
			call := func(name string, args any) string {
				raw, err := json.Marshal(args)
				must(t, err)
				r := tools[name].Run(context.Background(), Call{ID: "c", Input: raw})
				if r.IsError {
					t.Fatalf("%s %s: %s", name, raw, r.Content)
				}
				return r.Content
			}
			outs := map[string]string{
				"grep":                call("grep", grepArgs{Pattern: "TOKEN"}),
				"glob":                call("glob", globArgs{Pattern: "**"}),
				"list_directory":      call("list_directory", listDirectoryArgs{}),
				"list_directory app":  call("list_directory", listDirectoryArgs{Path: "app"}),
				"grep with a pattern": call("grep", grepArgs{Pattern: "hunt(er)2|sword(fish)", Include: "*"}),
			}
			for what, out := range outs {
				hidden := strings.Contains(out, "hunter2") || strings.Contains(out, "swordfish") ||
					strings.Contains(out, "key.txt") || strings.Contains(out, ".env")
				if c.rules != nil && hidden {
					t.Fatalf("%s shows what a deny rule keeps from being read:\n%s", what, out)
				}
				if c.rules == nil && what != "list_directory" && !hidden {
					t.Fatalf("%s without a deny rule shows no secret file:\n%s", what, out)
				}
			}
			if !strings.Contains(outs["grep"], "main.go") || !strings.Contains(outs["glob"], "README.md") || !strings.Contains(outs["list_directory app"], "main.go") {
				t.Fatalf("the walks lost files no rule names:\n%v", outs)
			}
		})
	}
}
