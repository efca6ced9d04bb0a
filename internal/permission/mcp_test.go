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
