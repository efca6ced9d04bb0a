package config

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/llm"
)

func TestResolve(t *testing.T) {
	t.Parallel()

	t.Run("KnownModel", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.env["ANTHROPIC_API_KEY"] = "sk-ant"
		m, err := b.mustLoad(t, Overrides{}).Resolve("anthropic/claude-sonnet-4-5")
		if err != nil {
			t.Fatal(err)
		}
		want := ModelRef{
			Ref: "anthropic/claude-sonnet-4-5", Provider: "anthropic", Type: "anthropic", Name: "claude-sonnet-4-5",
			APIKey: "sk-ant", ContextWindow: 200_000, MaxOutput: 64_000,
		}
		equal(t, "price", *m.Price, llm.Price{InputPerMTok: 3, OutputPerMTok: 15, CacheReadPerMTok: 0.30, CacheWritePerMTok: 3.75})
		m.Price = nil
		equal(t, "ref", m, want)
	})

	t.Run("PriceIsACopy", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.env["OPENAI_API_KEY"] = "sk-oa"
		c := b.mustLoad(t, Overrides{})
		m, err := c.Resolve("openai/gpt-5")
		if err != nil {
			t.Fatal(err)
		}
		m.Price.InputPerMTok = 999
		equal(t, "table price", c.Providers["openai"].Models["gpt-5"].Price.InputPerMTok, 1.25)
	})

	t.Run("UnlistedModelOfKnownProvider", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		m, err := b.mustLoad(t, Overrides{}).Resolve("ollama/qwen3:8b")
		if err != nil {
			t.Fatal(err)
		}
		if m.Price != nil {
			t.Fatalf("Price = %+v, want nil (unknown)", *m.Price)
		}
		equal(t, "name", m.Name, "qwen3:8b")
		equal(t, "type", m.Type, "openai")
		equal(t, "base url", m.BaseURL, "http://127.0.0.1:11434/v1")
		equal(t, "window", m.ContextWindow, int64(128_000))
		equal(t, "key", m.APIKey, "")
	})

	t.Run("NameWithSlash", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		writeFile(t, b.projectFile(), "providers:\n  router: {type: openai, base_url: 'https://router.example/v1'}\n")
		m, err := b.mustLoad(t, Overrides{}).Resolve("router/meta/llama-4")
		if err != nil {
			t.Fatal(err)
		}
		equal(t, "provider", m.Provider, "router")
		equal(t, "name", m.Name, "meta/llama-4")
	})

	t.Run("DatedSnapshotUsesTable", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.env["ANTHROPIC_API_KEY"] = "k"
		c := b.mustLoad(t, Overrides{})
		m, err := c.Resolve("anthropic/claude-sonnet-4-5-20250929")
		if err != nil {
			t.Fatal(err)
		}
		equal(t, "name sent as given", m.Name, "claude-sonnet-4-5-20250929")
		equal(t, "window", m.ContextWindow, int64(200_000))
		if m.Price == nil || m.Price.InputPerMTok != 3 {
			t.Fatalf("Price = %+v, want sonnet's", m.Price)
		}
		m, err = c.Resolve("anthropic/claude-sonnet-4-5-preview")
		if err != nil {
			t.Fatal(err)
		}
		if m.Price != nil {
			t.Fatalf("a non-date suffix matched the table: %+v", *m.Price)
		}
	})

	t.Run("BareName", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.env["OPENAI_API_KEY"] = "sk-oa"
		m, err := b.mustLoad(t, Overrides{}).Resolve("gpt-5-mini")
		if err != nil {
			t.Fatal(err)
		}
		equal(t, "ref", m.Ref, "openai/gpt-5-mini")
		equal(t, "provider", m.Provider, "openai")
	})

	t.Run("BareNameAmbiguous", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		writeFile(t, b.projectFile(), "providers:\n  azure:\n    type: openai\n    base_url: https://a.example/v1\n    models: {gpt-5: {}}\n")
		_, err := b.mustLoad(t, Overrides{}).Resolve("gpt-5")
		if !errors.Is(err, ErrAmbiguousModel) {
			t.Fatalf("err = %v, want ErrAmbiguousModel", err)
		}
		for _, want := range []string{"azure/gpt-5", "openai/gpt-5"} {
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("message %q does not offer %s", err, want)
			}
		}
	})

	t.Run("BareNameUnknown", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		_, err := b.mustLoad(t, Overrides{}).Resolve("qwen3")
		if !errors.Is(err, ErrUnknownModel) {
			t.Fatalf("err = %v, want ErrUnknownModel", err)
		}
	})

	t.Run("UnknownProviderListsKnown", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		_, err := b.mustLoad(t, Overrides{}).Resolve("gemini/flash")
		var upe *UnknownProviderError
		if !errors.As(err, &upe) || !errors.Is(err, ErrUnknownProvider) {
			t.Fatalf("err = %v, want *UnknownProviderError", err)
		}
		equal(t, "provider", upe.Provider, "gemini")
		equal(t, "known", strings.Join(upe.Known, ","), "anthropic,ollama,openai")
		if !strings.Contains(err.Error(), "anthropic, ollama, openai") {
			t.Fatalf("message %q does not list the known providers", err)
		}
	})

	t.Run("Malformed", func(t *testing.T) {
		t.Parallel()
		c := setup(t).mustLoad(t, Overrides{})
		for _, ref := range []string{"", "  ", "anthropic/", "/gpt-5", "script:"} {
			if _, err := c.Resolve(ref); !errors.Is(err, ErrInvalidRef) {
				t.Fatalf("Resolve(%q) err = %v, want ErrInvalidRef", ref, err)
			}
		}
	})

	t.Run("MissingKey", func(t *testing.T) {
		t.Parallel()
		c := setup(t).mustLoad(t, Overrides{})
		for ref, variable := range map[string]string{"anthropic/claude-haiku-4-5": "ANTHROPIC_API_KEY", "openai/gpt-5": "OPENAI_API_KEY"} {
			_, err := c.Resolve(ref)
			var mke *MissingKeyError
			if !errors.As(err, &mke) || !errors.Is(err, ErrMissingKey) {
				t.Fatalf("Resolve(%s) err = %v, want *MissingKeyError", ref, err)
			}
			if errors.Is(err, ErrNoModel) {
				t.Fatalf("MissingKeyError must not unwrap to ErrNoModel")
			}
			equal(t, "Var", mke.Var, variable)
			if !strings.Contains(err.Error(), variable) {
				t.Fatalf("message %q does not name %s", err, variable)
			}
		}
	})

	t.Run("KeySources", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.env["MY_KEY"] = "from-env"
		writeFile(t, b.projectFile(), `
providers:
  anthropic: {api_key: literal}
  openai: {api_key_env: MY_KEY}
  custom: {type: openai}
`)
		c := b.mustLoad(t, Overrides{})
		for ref, want := range map[string]string{"anthropic/claude-haiku-4-5": "literal", "openai/gpt-5": "from-env"} {
			m, err := c.Resolve(ref)
			if err != nil {
				t.Fatal(err)
			}
			equal(t, ref+" key", m.APIKey, want)
		}
		_, err := c.Resolve("custom/x")
		var mke *MissingKeyError
		if !errors.As(err, &mke) || mke.Var != "" || !strings.Contains(err.Error(), "providers.custom") {
			t.Fatalf("custom without key: err = %v, want *MissingKeyError naming providers.custom", err)
		}
	})

	t.Run("CompatibleServerNeedsNoKey", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.env["OPENAI_BASE_URL"] = "http://127.0.0.1:8000/v1"
		m, err := b.mustLoad(t, Overrides{}).Resolve("openai/qwen3-coder")
		if err != nil {
			t.Fatal(err)
		}
		equal(t, "base url", m.BaseURL, "http://127.0.0.1:8000/v1")
		equal(t, "key", m.APIKey, "")
	})

	t.Run("Script", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		c := b.mustLoad(t, Overrides{})
		m, err := c.Resolve("script:demo/run.yaml")
		if err != nil {
			t.Fatal(err)
		}
		equal(t, "ref", m.Ref, "script:demo/run.yaml")
		equal(t, "provider", m.Provider, "script")
		equal(t, "type", m.Type, "script")
		equal(t, "path", m.ScriptPath, filepath.Join(b.workspace, "demo", "run.yaml"))
		equal(t, "name", m.Name, "run.yaml")
		equal(t, "price", *m.Price, llm.Price{})

		m, err = c.Resolve("script:/abs/s.json")
		if err != nil {
			t.Fatal(err)
		}
		equal(t, "abs path", m.ScriptPath, "/abs/s.json")

		m, err = c.Resolve("script:~/s.yaml")
		if err != nil {
			t.Fatal(err)
		}
		equal(t, "home path", m.ScriptPath, filepath.Join(b.home, "s.yaml"))
	})
}

func TestDefaultModelRef(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name  string
		env   map[string]string
		flags Overrides
		want  string
	}{
		{"ExplicitModelWins", map[string]string{"ANTHROPIC_API_KEY": "k"}, Overrides{Model: "ollama/qwen3"}, "ollama/qwen3"},
		{"AnthropicKey", map[string]string{"ANTHROPIC_API_KEY": "k"}, Overrides{}, "anthropic/claude-sonnet-4-5"},
		{"OpenAIKey", map[string]string{"OPENAI_API_KEY": "k"}, Overrides{}, "openai/gpt-5"},
		{"BothPreferAnthropic", map[string]string{"ANTHROPIC_API_KEY": "k", "OPENAI_API_KEY": "k"}, Overrides{}, "anthropic/claude-sonnet-4-5"},
		{"EnvModel", map[string]string{"ARBOR_MODEL": "openai/gpt-4.1"}, Overrides{}, "openai/gpt-4.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			for k, v := range tt.env {
				b.env[k] = v
			}
			got, err := b.mustLoad(t, tt.flags).DefaultModelRef()
			if err != nil {
				t.Fatal(err)
			}
			equal(t, "ref", got, tt.want)
		})
	}

	t.Run("KeyFromConfigCounts", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.env["CORP_OPENAI"] = "k"
		writeFile(t, b.userFile(), "providers:\n  openai: {api_key_env: CORP_OPENAI}\n")
		got, err := b.mustLoad(t, Overrides{}).DefaultModelRef()
		if err != nil {
			t.Fatal(err)
		}
		equal(t, "ref", got, "openai/gpt-5")
	})

	t.Run("NoModel", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.env["OPENAI_BASE_URL"] = "http://127.0.0.1:8000/v1" // a base URL alone does not name a model
		_, err := b.mustLoad(t, Overrides{}).DefaultModelRef()
		if !errors.Is(err, ErrNoModel) {
			t.Fatalf("err = %v, want ErrNoModel", err)
		}
		for _, want := range []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL", "--model", "script:FILE", "ARBOR_MODEL"} {
			if !strings.Contains(err.Error(), want) {
				t.Fatalf("message %q does not mention %s", err, want)
			}
		}
	})
}

func TestPool(t *testing.T) {
	t.Parallel()

	t.Run("ResolvesInOrder", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.env["ANTHROPIC_API_KEY"] = "a"
		b.env["OPENAI_API_KEY"] = "o"
		writeFile(t, b.userFile(), "pools:\n  fast: [anthropic/claude-haiku-4-5, gpt-5-mini, ollama/qwen3]\n")
		refs, err := b.mustLoad(t, Overrides{}).Pool("fast")
		if err != nil {
			t.Fatal(err)
		}
		got := make([]string, len(refs))
		for i, r := range refs {
			got[i] = r.Ref
		}
		equal(t, "refs", strings.Join(got, ","), "anthropic/claude-haiku-4-5,openai/gpt-5-mini,ollama/qwen3")
	})

	t.Run("Unknown", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		writeFile(t, b.userFile(), "pools:\n  fast: [ollama/a]\n  smart: [ollama/b]\n")
		_, err := b.mustLoad(t, Overrides{}).Pool("cheap")
		if !errors.Is(err, ErrUnknownPool) || !strings.Contains(err.Error(), "fast, smart") {
			t.Fatalf("err = %v, want ErrUnknownPool listing fast, smart", err)
		}
	})

	t.Run("NoneDefined", func(t *testing.T) {
		t.Parallel()
		_, err := setup(t).mustLoad(t, Overrides{}).Pool("fast")
		if !errors.Is(err, ErrUnknownPool) {
			t.Fatalf("err = %v, want ErrUnknownPool", err)
		}
	})

	t.Run("MemberWithoutKey", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		writeFile(t, b.userFile(), "pools:\n  fast: [ollama/qwen3, openai/gpt-5-mini]\n")
		_, err := b.mustLoad(t, Overrides{}).Pool("fast")
		var mke *MissingKeyError
		if !errors.As(err, &mke) || mke.Var != "OPENAI_API_KEY" || !strings.Contains(err.Error(), `pool "fast", member 1`) {
			t.Fatalf("err = %v, want *MissingKeyError for member 1", err)
		}
	})
}
