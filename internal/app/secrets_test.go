package app

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestSecretsCoverEveryCredential: what the agent redacts from tool
// output covers every credential the configuration reaches, not only the
// providers' keys: arbor's tokens, the OpenTelemetry headers, an MCP
// server's headers and environment values and the variables they name;
// and the providers' key variables are withheld from the agent's shell.
func TestSecretsCoverEveryCredential(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	dir := filepath.Join(home, "config", "arbor")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := "providers:\n  mine:\n    type: openai\n    base_url: http://127.0.0.1:1/v1\n    api_key_env: MINE_KEY\n" +
		"mcp_servers:\n  gh:\n    url: http://127.0.0.1:1/mcp\n    headers:\n      Authorization: Bearer ${GITHUB_TOKEN}\n" +
		"  search:\n    command: search-server\n    env:\n      SEARCH_KEY: ${SEARCH_KEY}\n"
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"HOME": home, "XDG_CONFIG_HOME": filepath.Join(home, "config"), "XDG_STATE_HOME": filepath.Join(home, "state"),
		"ANTHROPIC_API_KEY": "sk-ant-secret-0001", "MINE_KEY": "mine-secret-0002", "GITHUB_TOKEN": "ghp_secret_0003",
		"SEARCH_KEY": "search-secret-0004", "ARBOR_MCP_TOKEN": "mcp-token-0005", "ARBOR_SERVE_TOKEN": "serve-token-0006",
		"OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer otlp-0007"}
	a, err := Open(context.Background(), Options{Workspace: home, Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	got := a.Secrets()
	for _, want := range []string{"sk-ant-secret-0001", "mine-secret-0002", "ghp_secret_0003", "Bearer ghp_secret_0003",
		"search-secret-0004", "mcp-token-0005", "serve-token-0006", "authorization=Bearer otlp-0007"} {
		if !slices.Contains(got, want) {
			t.Errorf("secrets lack %q: %q", want, got)
		}
	}
	if keys := a.keyEnv(); !slices.Contains(keys, "ANTHROPIC_API_KEY") || !slices.Contains(keys, "MINE_KEY") {
		t.Errorf("the key variables withheld from the shell: %q", keys)
	}
}
