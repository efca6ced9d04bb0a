package app_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/app"
)

// TestMCPServerGetsSettingsEnv: a stdio MCP server starts with the
// project settings' env, as the real Claude Code CLI starts it (checked
// with 2.1.332: a server of .mcp.json saw the variable); its ${VAR} is
// still expanded from arbor's own environment only (Claude Code left a
// variable only that env sets unexpanded; arbor takes its default).
func TestMCPServerGetsSettingsEnv(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	ws := filepath.Join(home, "ws")
	out := filepath.Join(home, "server-env.txt")
	writeFiles(t, home, map[string]string{
		"config/arbor/config.yaml": "mcp_servers:\n  probe:\n    command: sh\n    args: [\"-c\", \"echo \\\"marker=$PROJECT_ENV_MARKER x=$X\\\" > " + out + "\"]\n" +
			"    env:\n      X: ${PROJECT_ENV_MARKER:-unset}\n    start_timeout: 5s\n",
		"ws/.claude/settings.json": `{"env": {"PROJECT_ENV_MARKER": "env-9d2"}}`,
	})
	env := map[string]string{"HOME": home, "XDG_CONFIG_HOME": filepath.Join(home, "config"), "XDG_STATE_HOME": filepath.Join(home, "state")}
	a, err := app.Open(context.Background(), app.Options{Workspace: ws, Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	a.MCP(context.Background()) // the server writes its environment and exits: it fails to connect
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(b)); got != "marker=env-9d2 x=unset" {
		t.Fatalf("the server saw %q; want the settings' variable, and its ${VAR} not expanded from that env", got)
	}
}
