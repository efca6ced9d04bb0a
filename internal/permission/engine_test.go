package permission_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/arbor-run/arbor/internal/permission"
)

const (
	allow = permission.Allow
	ask   = permission.Ask
	deny  = permission.Deny
)

func TestDecideModeByClass(t *testing.T) {
	t.Parallel()
	requests := map[permission.Class]permission.Request{
		permission.ClassRead:    read("a.txt"),
		permission.ClassWrite:   write("a.txt"),
		permission.ClassExecute: shell("ls"),
		permission.ClassNone:    {Tool: "ask_user", Class: permission.ClassNone},
	}
	want := map[permission.Mode]map[permission.Class]permission.Action{
		permission.ModeDefault:  {permission.ClassRead: allow, permission.ClassWrite: ask, permission.ClassExecute: ask, permission.ClassNone: allow},
		permission.ModeAutoEdit: {permission.ClassRead: allow, permission.ClassWrite: allow, permission.ClassExecute: ask, permission.ClassNone: allow},
		permission.ModeTrust:    {permission.ClassRead: allow, permission.ClassWrite: allow, permission.ClassExecute: allow, permission.ClassNone: allow},
	}
	for mode, byClass := range want {
		for class, action := range byClass {
			t.Run(fmt.Sprintf("%s/%s", mode, class), func(t *testing.T) {
				t.Parallel()
				b := setup(t, mode)
				d := b.engine.Decide(requests[class])
				requireAction(t, d, action)
				if d.Rule != nil || d.Reason == "" {
					t.Fatalf("mode decision has rule %v, reason %q", d.Rule, d.Reason)
				}
			})
		}
	}
}

func TestSetMode(t *testing.T) {
	t.Parallel()
	b := setup(t, "")
	if b.engine.Mode() != permission.ModeDefault {
		t.Fatalf("zero mode = %q, want default", b.engine.Mode())
	}
	b.engine.SetMode(permission.ModeTrust)
	requireAction(t, b.engine.Decide(shell("ls")), allow)
	b.engine.SetMode("acceptEdits")
	if b.engine.Mode() != permission.ModeAutoEdit {
		t.Fatalf("alias mode = %q, want auto-edit", b.engine.Mode())
	}
	b.engine.SetMode("nonsense")
	if b.engine.Mode() != permission.ModeDefault {
		t.Fatalf("invalid mode = %q, want default", b.engine.Mode())
	}
	if _, err := permission.New(permission.Options{Mode: "nonsense", Workspace: b.ws}); err == nil {
		t.Fatal("New accepted an invalid mode")
	}
}

func TestDecidePrecedence(t *testing.T) {
	t.Parallel()
	t.Run("deny beats allow in a narrower scope", func(t *testing.T) {
		t.Parallel()
		b := setup(t, permission.ModeTrust)
		b.add(t, "shell(*)", allow, permission.ScopeSession)
		b.add(t, "shell(rm *)", deny, permission.ScopeUser)
		d := b.engine.Decide(shell("rm -rf build"))
		requireAction(t, d, deny)
		if d.Rule == nil || d.Rule.String() != "shell(rm *)" || d.Rule.Scope != permission.ScopeUser {
			t.Fatalf("rule = %+v, want the user deny rule", d.Rule)
		}
		requireAction(t, b.engine.Decide(shell("ls")), allow)
	})
	t.Run("session beats project beats user", func(t *testing.T) {
		t.Parallel()
		b := setup(t, permission.ModeDefault)
		b.add(t, "shell(go *)", allow, permission.ScopeUser)
		b.add(t, "shell(go generate*)", ask, permission.ScopeProject)
		b.add(t, "shell(go *)", allow, permission.ScopeProject)
		b.add(t, "shell(go generate ./x*)", allow, permission.ScopeSession)
		b.add(t, "shell(go test*)", ask, permission.ScopeSession)
		for cmd, want := range map[string]permission.Scope{"go build": permission.ScopeProject, "go generate ./y": permission.ScopeProject,
			"go generate ./x": permission.ScopeSession, "go test ./...": permission.ScopeSession} {
			d := b.engine.Decide(shell(cmd))
			if d.Rule == nil || d.Rule.Scope != want {
				t.Fatalf("%s: decided by %+v, want the %s rule", cmd, d.Rule, want)
			}
		}
	})
	// A repository's allow rule does not lift the user's own ask: as in
	// Claude Code, where an ask rule in any file beats every allow, a
	// project's .claude/settings.json cannot turn off a person's guard. The
	// session's rules (the person's own answers and flags) still do.
	t.Run("a user's ask beats a project's allow", func(t *testing.T) {
		t.Parallel()
		b := setup(t, permission.ModeTrust)
		b.add(t, "shell(git push*)", ask, permission.ScopeUser)
		b.add(t, "shell(git *)", allow, permission.ScopeProject)
		d := b.engine.Decide(shell("git push origin main"))
		requireAction(t, d, ask)
		if d.Rule == nil || d.Rule.Scope != permission.ScopeUser {
			t.Fatalf("decided by %+v, want the user's ask", d.Rule)
		}
		requireAction(t, b.engine.Decide(shell("git status")), allow)
		requireAction(t, b.engine.Decide(shell("git status && git push")), ask)
		b.add(t, "shell(git push*)", allow, permission.ScopeSession)
		requireAction(t, b.engine.Decide(shell("git push origin main")), allow)
	})
	t.Run("rules beat the mode", func(t *testing.T) {
		t.Parallel()
		b := setup(t, permission.ModeTrust)
		b.add(t, "write_file", ask, permission.ScopeUser)
		requireAction(t, b.engine.Decide(write("a.txt")), ask)
		b.engine.SetMode(permission.ModeDefault)
		b.add(t, "shell(make *)", allow, permission.ScopeSession)
		requireAction(t, b.engine.Decide(shell("make test")), allow)
	})
	t.Run("file order within a scope", func(t *testing.T) {
		t.Parallel()
		b := setup(t, permission.ModeDefault)
		b.write(t, "ws/.arbor/permissions.yaml", `rules:
  - {rule: "shell(git *)", action: ask}
  - {rule: "shell(git status*)", action: allow}
`)
		b.write(t, "config/arbor/permissions.yaml", `rules:
  - {rule: "shell(go *)", action: allow}
  - {rule: "shell(go generate*)", action: ask}
`)
		e := b.open(t, permission.ModeDefault)
		requireAction(t, e.Decide(shell("git status")), ask)
		requireAction(t, e.Decide(shell("go generate ./...")), allow)
	})
	t.Run("tool names match tolerantly", func(t *testing.T) {
		t.Parallel()
		b := setup(t, permission.ModeDefault)
		b.add(t, "Write-File(src/**)", allow, permission.ScopeSession)
		requireAction(t, b.engine.Decide(write("src/a.go")), allow)
		requireAction(t, b.engine.Decide(permission.Request{Tool: "WRITE_FILE", Class: permission.ClassWrite, Paths: []string{"src/b.go"}}), allow)
		requireAction(t, b.engine.Decide(permission.Request{Tool: "edit", Class: permission.ClassWrite, Paths: []string{"src/b.go"}}), ask)
	})
	t.Run("a bare rule matches every call of its tool", func(t *testing.T) {
		t.Parallel()
		b := setup(t, permission.ModeDefault)
		b.add(t, "todo_write", deny, permission.ScopeSession)
		requireAction(t, b.engine.Decide(permission.Request{Tool: "todo_write", Class: permission.ClassNone}), deny)
		b.add(t, "shell", allow, permission.ScopeSession)
		requireAction(t, b.engine.Decide(shell("anything && else")), allow)
	})
}

func TestDecidePathPatterns(t *testing.T) {
	t.Parallel()
	b := setup(t, permission.ModeDefault)
	b.add(t, "write_file(src/*)", allow, permission.ScopeSession)
	b.add(t, "write_file(docs/**)", allow, permission.ScopeSession)
	b.add(t, "write_file(**/*.md)", allow, permission.ScopeSession)
	tests := []struct {
		path string
		want permission.Action
	}{
		{"src/a.go", allow},
		{"./src/a.go", allow},
		{b.ws + "/src/a.go", allow},
		{"src/x/a.go", ask},
		{"docs/a/b/c.txt", allow},
		{"README.md", allow},
		{"x/y/NOTES.md", allow},
		{"x/y/notes.txt", ask},
		{"src/../secret.txt", ask},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			t.Parallel()
			requireAction(t, b.engine.Decide(write(tt.path)), tt.want)
		})
	}
	t.Run("every path must be covered", func(t *testing.T) {
		t.Parallel()
		requireAction(t, b.engine.Decide(write("src/a.go", "docs/b.txt")), allow)
		requireAction(t, b.engine.Decide(write("src/a.go", "other/b.txt")), ask)
	})
}

func TestDecideCompoundCommands(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		mode  permission.Mode
		rules map[string]permission.Action
		cmd   string
		want  permission.Action
	}{
		{"and chain not covered", permission.ModeDefault, map[string]permission.Action{"shell(git *)": allow}, "git status && rm -rf /", ask},
		{"and chain with deny", permission.ModeTrust, map[string]permission.Action{"shell(git *)": allow, "shell(rm *)": deny}, "git status && rm -rf /", deny},
		{"pipe with one rule", permission.ModeDefault, map[string]permission.Action{"shell(git *)": allow}, "git status | grep x", ask},
		{"pipe with both rules", permission.ModeDefault, map[string]permission.Action{"shell(git *)": allow, "shell(grep *)": allow}, "git status | grep x", allow},
		{"every operator", permission.ModeDefault, map[string]permission.Action{"shell(git *)": allow, "shell(grep *)": allow}, "git a; git b || grep c & git d\ngrep e", allow},
		{"dollar paren never allowed", permission.ModeDefault, map[string]permission.Action{"shell(echo *)": allow, "shell(whoami)": allow}, "echo $(whoami)", ask},
		{"backticks never allowed", permission.ModeDefault, map[string]permission.Action{"shell(echo *)": allow, "shell(whoami)": allow}, "echo `whoami`", ask},
		{"substitution in double quotes", permission.ModeDefault, map[string]permission.Action{"shell(echo *)": allow}, `echo "$(whoami)"`, ask},
		{"single quotes are literal", permission.ModeDefault, map[string]permission.Action{"shell(echo *)": allow}, `echo '$(whoami)'`, allow},
		{"quoted operators are one segment", permission.ModeDefault, map[string]permission.Action{"shell(git *)": allow}, `git commit -m "a; b"`, allow},
		{"redirections stay in the segment", permission.ModeDefault, map[string]permission.Action{"shell(go *)": allow, "shell(tee *)": allow}, "go test ./... 2>&1 | tee out.txt", allow},
		{"deny inside a substitution", permission.ModeTrust, map[string]permission.Action{"shell(rm *)": deny}, "echo $(rm -rf /)", deny},
		{"deny behind sudo", permission.ModeTrust, map[string]permission.Action{"shell(rm *)": deny}, "sudo rm -rf /", deny},
		// Claude Code's deny of Bash(rm:*) covers "xargs rm" too.
		{"deny behind xargs", permission.ModeTrust, map[string]permission.Action{"shell(rm *)": deny}, "find . -name '*.o' | xargs rm -f", deny},
		{"deny inside a subshell", permission.ModeTrust, map[string]permission.Action{"shell(rm *)": deny}, "(cd / && rm -rf x)", deny},
		{"ask rule on one part", permission.ModeTrust, map[string]permission.Action{"shell(git push*)": ask}, "git add . && git push", ask},
		{"trust still runs substitutions", permission.ModeTrust, nil, "echo $(date)", allow},
		{"unterminated quote never allowed", permission.ModeDefault, map[string]permission.Action{"shell(echo *)": allow}, `echo "a; rm x`, ask},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, tt.mode)
			for spec, a := range tt.rules {
				b.add(t, spec, a, permission.ScopeSession)
			}
			d := b.engine.Decide(shell(tt.cmd))
			requireAction(t, d, tt.want)
			if d.Action == ask && d.Rule == nil && strings.ContainsAny(tt.cmd, "&|;`$") && d.SuggestedRule != "" {
				t.Fatalf("suggested %q for a compound command", d.SuggestedRule)
			}
		})
	}
}

func TestDecideSuggestedRule(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		req  func(b *bundle) permission.Request
		want string
	}{
		{"command with subcommand", func(*bundle) permission.Request { return shell("go test ./...") }, "shell(go test *)"},
		{"command with flags", func(*bundle) permission.Request { return shell("ls -la") }, "shell(ls *)"},
		{"bare command", func(*bundle) permission.Request { return shell("make") }, "shell(make *)"},
		{"compound", func(*bundle) permission.Request { return shell("make && make install") }, ""},
		{"substitution", func(*bundle) permission.Request { return shell("echo $(id)") }, ""},
		{"env assignment", func(*bundle) permission.Request { return shell("CGO_ENABLED=0 go build") }, ""},
		{"file in a folder", func(*bundle) permission.Request { return write("src/pkg/a.go") }, "write_file(src/pkg/**)"},
		{"file at the root", func(*bundle) permission.Request { return write("main.go") }, "write_file(*)"},
		{"files in two folders", func(*bundle) permission.Request { return write("a/x", "b/y") }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, permission.ModeDefault)
			req := tt.req(b)
			d := b.engine.Decide(req)
			requireAction(t, d, ask)
			if d.SuggestedRule != tt.want {
				t.Fatalf("suggested %q, want %q", d.SuggestedRule, tt.want)
			}
			if d.SuggestedRule == "" {
				return
			}
			// The suggestion, once remembered, allows the call it was made for.
			b.add(t, d.SuggestedRule, allow, permission.ScopeSession)
			requireAction(t, b.engine.Decide(req), allow)
		})
	}
	t.Run("outside path suggests its absolute folder", func(t *testing.T) {
		t.Parallel()
		b := setup(t, permission.ModeDefault)
		d := b.engine.Decide(write(b.outside + "/x.txt"))
		requireAction(t, d, deny)
		want := "write_file(" + b.outside + "/**)"
		if !strings.Contains(d.Reason, want) {
			t.Fatalf("reason %q does not offer %s", d.Reason, want)
		}
		b.add(t, want, allow, permission.ScopeSession)
		requireAction(t, b.engine.Decide(write(b.outside+"/x.txt")), allow)
	})
}

func TestDecideConcurrent(t *testing.T) {
	t.Parallel()
	b := setup(t, permission.ModeDefault)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			r, err := permission.ParseRule(fmt.Sprintf("shell(tool%d *)", i), allow, permission.ScopeSession)
			if err != nil {
				t.Error(err)
				return
			}
			if err := b.engine.AddRule(r); err != nil {
				t.Error(err)
			}
			if i%2 == 0 {
				if err := b.engine.AddRule(permission.Rule{Tool: "write_file", Pattern: fmt.Sprintf("p%d/**", i), Action: allow, Scope: permission.ScopeProject}); err != nil {
					t.Error(err)
				}
			}
			b.engine.SetMode(permission.ModeDefault)
			for j := range 20 {
				b.engine.Decide(shell(fmt.Sprintf("tool%d x | tool%d y", i, j%8)))
				b.engine.Decide(write(fmt.Sprintf("p%d/f", j)))
				_ = b.engine.Rules()
			}
		})
	}
	wg.Wait()
	if got := len(b.engine.Rules()); got != 12 {
		t.Fatalf("%d rules after concurrent adds, want 12", got)
	}
	if got := len(b.open(t, permission.ModeDefault).Rules()); got != 4 {
		t.Fatalf("%d rules in the project file, want 4", got)
	}
	requireAction(t, b.engine.Decide(shell("tool1 a | tool2 b")), allow)
}

// TestPlanAndDontAsk: plan mode is read-only whatever the allow rules say;
// dont-ask denies what would be asked and allows what rules allow.
func TestPlanAndDontAsk(t *testing.T) {
	t.Parallel()
	t.Run("plan", func(t *testing.T) {
		t.Parallel()
		b := setup(t, permission.ModePlan)
		b.add(t, "shell(make *)", allow, permission.ScopeSession)
		b.add(t, "write_file", allow, permission.ScopeSession)
		requireAction(t, b.engine.Decide(read("a.txt")), allow)
		requireAction(t, b.engine.Decide(write("a.txt")), deny)
		requireAction(t, b.engine.Decide(shell("make test")), deny)
	})
	t.Run("dont-ask", func(t *testing.T) {
		t.Parallel()
		b := setup(t, permission.ModeDontAsk)
		b.add(t, "shell(make *)", allow, permission.ScopeSession)
		b.add(t, "shell(git push *)", ask, permission.ScopeSession)
		requireAction(t, b.engine.Decide(read("a.txt")), allow)
		requireAction(t, b.engine.Decide(write("a.txt")), deny)
		requireAction(t, b.engine.Decide(shell("make test")), allow)
		requireAction(t, b.engine.Decide(shell("git push origin main")), deny)
	})
}

// TestAddSessionRules: --allowedTools allows, --disallowedTools denies, and
// a rule that does not parse is refused naming its flag.
func TestAddSessionRules(t *testing.T) {
	t.Parallel()
	b := setup(t, permission.ModeDefault)
	if err := b.engine.AddSessionRules([]string{"shell(ls)"}, []string{"write_file"}); err != nil {
		t.Fatal(err)
	}
	requireAction(t, b.engine.Decide(shell("ls")), allow)
	requireAction(t, b.engine.Decide(write("a.txt")), deny)
	requireAction(t, b.engine.Decide(shell("rm x")), ask)
	err := b.engine.AddSessionRules(nil, []string{"shell("})
	if err == nil || !strings.HasPrefix(err.Error(), "--disallowedTools: ") {
		t.Fatalf("bad rule: err = %v, want one naming --disallowedTools", err)
	}
}
