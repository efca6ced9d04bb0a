package config_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/arbor-run/arbor/internal/config"
)

func ExampleLoad() {
	workspace, _ := os.MkdirTemp("", "arbor-example")
	defer os.RemoveAll(workspace)
	_ = os.MkdirAll(filepath.Join(workspace, ".arbor"), 0o755)
	_ = os.WriteFile(filepath.Join(workspace, ".arbor", "config.yaml"), []byte(`
model: anthropic/claude-haiku-4-5
pools:
  fast: [anthropic/claude-haiku-4-5, openai/gpt-5-mini]
`), 0o600)

	env := map[string]string{"HOME": workspace, "ANTHROPIC_API_KEY": "sk-ant-example"}
	cfg, err := config.Load(config.LoadOptions{
		Workspace: workspace,
		Overrides: config.Overrides{MaxTurns: 20}, // from --max-turns
		Getenv:    func(k string) string { return env[k] },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ref, _ := cfg.DefaultModelRef()
	m, _ := cfg.Resolve(ref)
	fmt.Println(m.Provider, m.Name, m.ContextWindow, m.Price.InputPerMTok, cfg.MaxTurns)

	_, err = cfg.Pool("fast") // openai has no key
	fmt.Println(err)
	// Output:
	// anthropic claude-haiku-4-5 200000 1 20
	// pool "fast", member 1 (openai/gpt-5-mini): provider "openai" needs an API key: set OPENAI_API_KEY (or api_key_env / api_key under providers.openai in config.yaml)
}
