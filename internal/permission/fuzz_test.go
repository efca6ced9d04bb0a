package permission_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/permission"
	"github.com/arbor-run/arbor/internal/testutil"
)

// FuzzRule parses an arbitrary rule and judges an arbitrary command and
// path with it, and checks what rules promise:
//
//   - ParseRule never panics, fails with ErrInvalidRule, and reads the
//     spec the same whatever the action and scope;
//   - a parsed rule round-trips: ParseRule(r.String()) is r; it names its
//     own tool (or, for an MCP server's rule, that server's tools); it
//     compiles (AddRule) and, saved in the project's rules file, loads
//     back as the same rule and is removed again;
//   - Decide never panics and gives allow, ask or deny with a reason;
//   - a rule matches itself: a deny rule without a pattern denies every
//     call of its tool, and a pattern that is a literal command or a
//     literal relative path (letters, digits, '.', '_', '-', spaces or
//     '/') is denied by its deny rule and, as a command, allowed by its
//     allow rule; once removed, the rule decides nothing.
func FuzzRule(f *testing.F) {
	for _, s := range [][2]string{
		{"shell", "ls"},
		{"shell(git status)", "git status"},
		{"shell(git *)", "git log --oneline | head"},
		{"shell:^rm -rf", "rm -rf /"},
		{"shell(re:^go (test|vet)$)", "go test"},
		{"read_file(src/**)", "src/a/b.go"},
		{"write_file(/tmp/*.txt)", "/tmp/x.txt"},
		{"edit_file(~/notes/*)", "~/notes/a"},
		{"mcp__github", "mcp__github__create_issue"},
		{"mcp__github__*", ""},
		{"mcp:server", "x"},
		{"shell(", ""}, {"shell()", ""}, {"(x)", ""}, {"shell(re:[)", ""}, {"a*(b)", ""},
		{"shell(a\\*b)", "a*b"}, {"Shell( npm   run  build )", "npm run build"},
		{"shell(sudo rm *)", "FOO=1 sudo rm -rf x; echo $(id)"},
	} {
		f.Add(s[0], s[1])
	}
	dir := testutil.MemDir(f) // the rules file is written with fsync
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		f.Fatal(err)
	}
	projectFile := filepath.Join(dir, "permissions.yaml")
	e, err := permission.New(permission.Options{Workspace: ws, ProjectFile: projectFile})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, spec, arg string) {
		// Every input starts with no rule, even after a failed one (the
		// fuzzer minimizes a failure in the same process).
		t.Cleanup(func() {
			for _, r := range e.Rules() {
				if err := e.RemoveRule(r); err != nil {
					t.Errorf("cleaning up %+v: %v", r, err)
				}
			}
		})
		r, err := permission.ParseRule(spec, permission.Deny, permission.ScopeSession)
		r2, err2 := permission.ParseRule(spec, permission.Allow, permission.ScopeProject)
		if (err == nil) != (err2 == nil) || r.Tool != r2.Tool || r.Pattern != r2.Pattern {
			t.Fatalf("the action and scope change how %q reads: %+v, %v; %+v, %v", spec, r, err, r2, err2)
		}
		if err != nil {
			if !errors.Is(err, permission.ErrInvalidRule) {
				t.Fatalf("ParseRule(%q): %v is not ErrInvalidRule", spec, err)
			}
			return
		}
		if back, err := permission.ParseRule(r.String(), r.Action, r.Scope); err != nil || back != r {
			t.Fatalf("%q parses to %+v, whose String %q parses to %+v, %v", spec, r, r.String(), back, err)
		}
		tool := r.Tool
		if !r.Names(tool) {
			tool += "__x" // a rule naming an MCP server names its tools
			if !r.Names(tool) {
				t.Fatalf("%+v names neither %q nor that server's tools", r, r.Tool)
			}
		}

		// Saved in the project's file, the rule loads back as itself.
		if err := e.AddRule(r2); err != nil {
			t.Fatalf("AddRule(%+v) in the project file: %v", r2, err)
		}
		if !hasRule(e.Rules(), r2) {
			t.Fatalf("%+v is not among the rules after AddRule: %+v", r2, e.Rules())
		}
		if err := e.RemoveRule(r2); err != nil {
			t.Fatalf("RemoveRule(%+v): %v", r2, err)
		}

		if err := e.AddRule(r); err != nil {
			t.Fatalf("AddRule(%+v): %v", r, err)
		}
		cmd := permission.Request{Tool: tool, Class: permission.ClassExecute, Command: arg}
		path := permission.Request{Tool: tool, Class: permission.ClassRead, Paths: []string{arg}}
		for _, req := range []permission.Request{cmd, path} {
			d := decide(t, e, req)
			// (A path that cannot be resolved is denied without a rule.)
			if r.Pattern == "" && (d.Action != permission.Deny || d.Rule != nil && *d.Rule != r) {
				t.Fatalf("the bare deny rule %+v gives %+v for %+v", r, d, req)
			}
		}
		if literal(r.Pattern, " ") {
			if d := decide(t, e, permission.Request{Tool: tool, Class: permission.ClassExecute, Command: r.Pattern}); d.Action != permission.Deny {
				t.Fatalf("the deny rule %+v does not deny its own command: %+v", r, d)
			}
		}
		if literal(r.Pattern, "/") && !strings.HasPrefix(r.Pattern, "/") {
			if d := decide(t, e, permission.Request{Tool: tool, Class: permission.ClassRead, Paths: []string{r.Pattern}}); d.Action != permission.Deny {
				t.Fatalf("the deny rule %+v does not deny its own path: %+v", r, d)
			}
		}
		if err := e.RemoveRule(r); err != nil {
			t.Fatalf("RemoveRule(%+v): %v", r, err)
		}
		if len(e.Rules()) != 0 {
			file, _ := os.ReadFile(projectFile)
			t.Fatalf("rules left after removing the fuzzed ones (%q): %#v\nproject file:\n%s", spec, e.Rules(), file)
		}
		for _, req := range []permission.Request{cmd, path} {
			if d := decide(t, e, req); d.Rule != nil {
				t.Fatalf("a removed rule decided %+v: %+v", req, d)
			}
		}
		if literal(r.Pattern, " ") {
			allow := r
			allow.Action = permission.Allow
			if err := e.AddRule(allow); err != nil {
				t.Fatalf("AddRule(%+v): %v", allow, err)
			}
			d := decide(t, e, permission.Request{Tool: tool, Class: permission.ClassExecute, Command: r.Pattern})
			if err := e.RemoveRule(allow); err != nil {
				t.Fatalf("RemoveRule(%+v): %v", allow, err)
			}
			if d.Action != permission.Allow || d.Rule == nil || *d.Rule != allow {
				t.Fatalf("the allow rule %+v does not allow its own command: %+v", allow, d)
			}
		}
	})
}

func decide(t *testing.T, e *permission.Engine, req permission.Request) permission.Decision {
	t.Helper()
	d := e.Decide(req)
	switch {
	case d.Action != permission.Allow && d.Action != permission.Ask && d.Action != permission.Deny:
		t.Fatalf("Decide(%+v) = %+v: no action", req, d)
	case d.Reason == "" && d.Action != permission.Allow:
		t.Fatalf("Decide(%+v) = %+v: no reason", req, d)
	}
	return d
}

// literal reports whether p is made only of letters, digits, '.', '_',
// '-' and the characters in extra, and holds a letter or digit: a glob
// that matches exactly itself.
func literal(p, extra string) bool {
	word := false
	for _, c := range p {
		switch {
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9':
			word = true
		case c == '.' || c == '_' || c == '-' || strings.ContainsRune(extra, c):
		default:
			return false
		}
	}
	return word
}

func hasRule(rs []permission.Rule, r permission.Rule) bool {
	for _, o := range rs {
		if o == r {
			return true
		}
	}
	return false
}
