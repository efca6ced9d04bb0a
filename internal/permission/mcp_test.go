package permission_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/permission"
)

func mcpCall(name string) permission.Request {
	return permission.Request{Tool: name, Class: permission.ClassExecute}
}

// TestMCPRules: MCP tools ask by default; rules name a server
// (mcp__github, mcp__github__*) or one tool.
func TestMCPRules(t *testing.T) {
	t.Parallel()

	t.Run("default asks", func(t *testing.T) {
		t.Parallel()
		d := setup(t, permission.ModeDefault).engine.Decide(mcpCall("mcp__github__create_issue"))
		requireAction(t, d, ask)
		if !strings.Contains(d.Reason, "calling MCP tools") || d.SuggestedRule != "" {
			t.Fatalf("decision = %+v", d)
		}
	})

	for _, spec := range []string{"mcp__github", "mcp__github__*", "MCP__GitHub__*"} {
		t.Run("server rule "+spec, func(t *testing.T) {
			t.Parallel()
			b := setup(t, permission.ModeDefault)
			b.add(t, spec, allow, permission.ScopeSession)
			requireAction(t, b.engine.Decide(mcpCall("mcp__github__create_issue")), allow)
			requireAction(t, b.engine.Decide(mcpCall("mcp__github__list")), allow)
			requireAction(t, b.engine.Decide(mcpCall("mcp__githubx__list")), ask)
			requireAction(t, b.engine.Decide(mcpCall("mcp__gitlab__list")), ask)
		})
	}

	t.Run("tool rule and deny", func(t *testing.T) {
		t.Parallel()
		b := setup(t, permission.ModeDefault)
		b.add(t, "mcp__github__list", allow, permission.ScopeSession)
		b.add(t, "mcp__github__delete_repo", deny, permission.ScopeProject)
		b.add(t, "mcp__github__*", allow, permission.ScopeUser)
		requireAction(t, b.engine.Decide(mcpCall("mcp__github__list")), allow)
		requireAction(t, b.engine.Decide(mcpCall("mcp__github__delete_repo")), deny)
		requireAction(t, b.engine.Decide(mcpCall("mcp__github__other")), allow)
	})

	t.Run("trust allows, plan denies", func(t *testing.T) {
		t.Parallel()
		requireAction(t, setup(t, permission.ModeTrust).engine.Decide(mcpCall("mcp__a__b")), allow)
		requireAction(t, setup(t, permission.ModePlan).engine.Decide(mcpCall("mcp__a__b")), deny)
	})

	t.Run("bad wildcards are refused", func(t *testing.T) {
		t.Parallel()
		for _, spec := range []string{"mcp__*", "mcp__git*", "shell*", "mcp__github__*(x)", "mcp__a__b__*"} {
			if _, err := permission.ParseRule(spec, allow, permission.ScopeSession); !errors.Is(err, permission.ErrInvalidRule) {
				t.Fatalf("ParseRule(%q) = %v, want ErrInvalidRule", spec, err)
			}
		}
	})
}

// TestRuleNames: a rule names its tool tolerantly, and a server rule every
// tool of that server, whatever the pattern.
func TestRuleNames(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		rule, tool string
		want       bool
	}{
		{"shell", "shell", true},
		{"Shell", "shell", true},
		{"todo_write", "TodoWrite", true},
		{"shell(rm *)", "shell", true},
		{"shell", "read_file", false},
		{"Bash", "shell", false}, // Claude Code's names are rewritten before (tool.RuleFromClaudeCode)
		{"mcp__github", "mcp__github__list", true},
		{"mcp__github__*", "mcp__github__list", true},
		{"mcp__github", "mcp__githubx__list", false},
		{"mcp__github__list", "mcp__github__list", true},
		{"mcp__github__list", "mcp__github__other", false},
	} {
		r, err := permission.ParseRule(c.rule, permission.Deny, permission.ScopeSession)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Names(c.tool); got != c.want {
			t.Errorf("rule %q names %q = %v, want %v", c.rule, c.tool, got, c.want)
		}
	}
}

// TestDeniesWhole: only a deny rule without a pattern denies a tool
// whole (so it is not offered); a server rule covers its tools.
func TestDeniesWhole(t *testing.T) {
	t.Parallel()
	b := setup(t, permission.ModeDefault)
	b.add(t, "mcp__github__delete_repo", deny, permission.ScopeSession)
	b.add(t, "mcp__docs", deny, permission.ScopeSession)
	b.add(t, "mcp__github__list_issues", allow, permission.ScopeSession)
	b.add(t, "shell(rm *)", deny, permission.ScopeSession)
	for name, want := range map[string]bool{
		"mcp__github__delete_repo": true, "MCP__GitHub__Delete-Repo": true, "mcp__docs__search": true,
		"mcp__github__list_issues": false, "mcp__github__create_issue": false, "mcp__docsx__search": false, "shell": false,
	} {
		if got := b.engine.DeniesWhole(name); got != want {
			t.Errorf("DeniesWhole(%s) = %v, want %v", name, got, want)
		}
	}
}
