package permission_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/permission"
)

func TestParseMode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want permission.Mode
	}{
		{"default", permission.ModeDefault},
		{"auto-edit", permission.ModeAutoEdit},
		{"auto_edit", permission.ModeAutoEdit},
		{"autoEdit", permission.ModeAutoEdit},
		{"acceptEdits", permission.ModeAutoEdit},
		{"auto", permission.ModeAutoEdit},
		{"trust", permission.ModeTrust},
		{"yolo", permission.ModeTrust},
		{"bypassPermissions", permission.ModeTrust},
		{" TRUST ", permission.ModeTrust},
		{"plan", permission.ModePlan},
		{"dontAsk", permission.ModeDontAsk},
		{"dont-ask", permission.ModeDontAsk},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := permission.ParseMode(tt.in)
			if err != nil || got != tt.want {
				t.Fatalf("ParseMode(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
		})
	}
	t.Run("invalid lists the valid names", func(t *testing.T) {
		t.Parallel()
		_, err := permission.ParseMode("planned")
		if !errors.Is(err, permission.ErrInvalidMode) {
			t.Fatalf("err = %v, want ErrInvalidMode", err)
		}
		for _, name := range []string{"default", "auto-edit", "trust", "plan", "dont-ask", `"planned"`} {
			if !strings.Contains(err.Error(), name) {
				t.Fatalf("error %q does not mention %s", err, name)
			}
		}
	})
}

func TestParseScopeAndAction(t *testing.T) {
	t.Parallel()
	scopes := map[string]permission.Scope{
		"session": permission.ScopeSession, "project": permission.ScopeProject,
		"user": permission.ScopeUser, "user_global": permission.ScopeUser,
		"userSettings": permission.ScopeUser, "projectSettings": permission.ScopeProject,
	}
	for in, want := range scopes {
		if got, err := permission.ParseScope(in); err != nil || got != want {
			t.Fatalf("ParseScope(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := permission.ParseScope("galaxy"); !errors.Is(err, permission.ErrInvalidScope) {
		t.Fatalf("ParseScope(galaxy) err = %v, want ErrInvalidScope", err)
	}
	for _, in := range []string{"allow", "ask", "DENY"} {
		if _, err := permission.ParseAction(in); err != nil {
			t.Fatalf("ParseAction(%q): %v", in, err)
		}
	}
	if _, err := permission.ParseAction("maybe"); !errors.Is(err, permission.ErrInvalidAction) {
		t.Fatalf("ParseAction(maybe) err = %v, want ErrInvalidAction", err)
	}
}

func TestParseRule(t *testing.T) {
	t.Parallel()
	valid := []struct {
		spec          string
		tool, pattern string
	}{
		{"shell", "shell", ""},
		{"shell(git *)", "shell", "git *"},
		{" write_file( src/** ) ", "write_file", "src/**"},
		{"shell(echo (a))", "shell", "echo (a)"},
		{"mcp__github__create_issue", "mcp__github__create_issue", ""},
	}
	for _, tt := range valid {
		t.Run(tt.spec, func(t *testing.T) {
			t.Parallel()
			r, err := permission.ParseRule(tt.spec, permission.Allow, permission.ScopeSession)
			if err != nil {
				t.Fatal(err)
			}
			if r.Tool != tt.tool || r.Pattern != tt.pattern {
				t.Fatalf("ParseRule(%q) = %+v, want tool %q pattern %q", tt.spec, r, tt.tool, tt.pattern)
			}
			again, err := permission.ParseRule(r.String(), r.Action, r.Scope)
			if err != nil || again != r {
				t.Fatalf("String %q does not round-trip: %+v, %v", r.String(), again, err)
			}
		})
	}
	invalid := []struct {
		name   string
		spec   string
		action permission.Action
		scope  permission.Scope
		want   error
	}{
		{"empty", "", permission.Allow, permission.ScopeSession, permission.ErrInvalidRule},
		{"unclosed", "shell(git *", permission.Allow, permission.ScopeSession, permission.ErrInvalidRule},
		{"empty pattern", "shell()", permission.Allow, permission.ScopeSession, permission.ErrInvalidRule},
		{"space in tool", "my tool", permission.Allow, permission.ScopeSession, permission.ErrInvalidRule},
		{"bad action", "shell", "maybe", permission.ScopeSession, permission.ErrInvalidAction},
		{"bad scope", "shell", permission.Allow, "galaxy", permission.ErrInvalidScope},
	}
	for _, tt := range invalid {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := permission.ParseRule(tt.spec, tt.action, tt.scope)
			if !errors.Is(err, tt.want) || !errors.Is(err, permission.ErrInvalidRule) {
				t.Fatalf("err = %v, want %v wrapped in ErrInvalidRule", err, tt.want)
			}
		})
	}
}
