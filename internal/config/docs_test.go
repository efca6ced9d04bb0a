package config

import (
	"os"
	"strings"
	"testing"
)

// TestDocsExample keeps docs/configuration.md honest: its full example must
// load, and the message it quotes must be ErrNoModel's.
func TestDocsExample(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	_, rest, ok := strings.Cut(doc, "```yaml\n")
	if !ok {
		t.Fatal("no yaml block in docs/configuration.md")
	}
	example, _, _ := strings.Cut(rest, "```")

	b := setup(t)
	writeFile(t, b.projectFile(), example)
	c := b.mustLoad(t, Overrides{})
	equal(t, "vllm base url", c.Providers["vllm"].BaseURL, "http://127.0.0.1:8000/v1")
	equal(t, "local pool", strings.Join(c.Pools["local"], ","), "ollama/qwen3,vllm/qwen3-coder")
	if _, err := c.Pool("local"); err != nil {
		t.Fatalf("local pool of the example: %v", err)
	}

	if !strings.Contains(doc, "\n"+ErrNoModel.Error()+"\n") {
		t.Fatal("docs/configuration.md does not quote ErrNoModel's message verbatim")
	}
}
