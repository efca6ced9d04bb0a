package app_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/app"
)

// TestPromptHookContextRedacted: what SessionStart and UserPromptSubmit
// hooks print goes before the prompt the model reads, with the
// configuration's secrets redacted, as a tool's output.
func TestPromptHookContextRedacted(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	ws := filepath.Join(home, "repo")
	writeFiles(t, ws, map[string]string{
		".claude/settings.json": `{"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "echo start sk-test-0123456789"}]}],
		  "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "echo submit sk-test-0123456789"}]}]}}`,
	})
	env := map[string]string{"ANTHROPIC_API_KEY": "sk-test-0123456789", "XDG_CONFIG_HOME": filepath.Join(home, "config"),
		"XDG_STATE_HOME": filepath.Join(home, "state"), "HOME": home}
	a, err := app.Open(context.Background(), app.Options{Workspace: ws, Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	got, err := a.PromptHooks(context.Background(), "s1", "startup", "hi")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(got, "sk-test-0123456789") || !strings.Contains(got, "start [REDACTED]") || !strings.Contains(got, "submit [REDACTED]") {
		t.Fatalf("the prompt: %q", got)
	}
}
