package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestSaveProviderKey(t *testing.T) {
	t.Parallel()

	cases := []struct {
		name, before, after string
	}{
		{
			name:   "NoFile",
			before: "",
			after:  "providers:\n  anthropic:\n    api_key: \"sk-new\"\n",
		},
		{
			name: "ReplacesTheValueOnly",
			before: "# my arbor config\nmodel: anthropic/claude-sonnet-4-5   # the default\n\n" +
				"providers:\n   anthropic:\n      # from the console\n      api_key: sk-old    # rotated monthly\n      base_url: https://example.test\n\n" +
				"   openai:\n      api_key: 'o-key'\n# the end\n",
			after: "# my arbor config\nmodel: anthropic/claude-sonnet-4-5   # the default\n\n" +
				"providers:\n   anthropic:\n      # from the console\n      api_key: \"sk-new\"    # rotated monthly\n      base_url: https://example.test\n\n" +
				"   openai:\n      api_key: 'o-key'\n# the end\n",
		},
		{
			name:   "QuotedValue",
			before: "providers:\n  anthropic:\n    api_key: \"sk-\\\"old\" # q\n",
			after:  "providers:\n  anthropic:\n    api_key: \"sk-new\" # q\n",
		},
		{
			name:   "AddsTheKeyToTheEntry",
			before: "providers:\n    anthropic:   # mine\n        base_url: https://example.test\n\n# tail\n",
			after:  "providers:\n    anthropic:   # mine\n        api_key: \"sk-new\"\n        base_url: https://example.test\n\n# tail\n",
		},
		{
			name:   "AddsTheEntry",
			before: "# head\nproviders:\n  # local\n  ollama:\n    base_url: http://localhost:11434\n\nmax_turns: 9\n",
			after:  "# head\nproviders:\n  anthropic:\n    api_key: \"sk-new\"\n  # local\n  ollama:\n    base_url: http://localhost:11434\n\nmax_turns: 9\n",
		},
		{
			name:   "AddsProviders",
			before: "# head\n\nmax_turns: 9",
			after:  "# head\n\nmax_turns: 9\nproviders:\n  anthropic:\n    api_key: \"sk-new\"\n",
		},
		{
			name:   "OnlyComments",
			before: "# nothing yet\n",
			after:  "# nothing yet\nproviders:\n  anthropic:\n    api_key: \"sk-new\"\n",
		},
		{
			// A flow mapping is rewritten by the encoder: comments stay.
			name:   "FlowMapping",
			before: "# head\nproviders: {anthropic: {base_url: https://example.test}} # flow\n",
			after:  "# head\nproviders: {anthropic: {base_url: 'https://example.test', api_key: \"sk-new\"}} # flow\n",
		},
		{
			name:   "EmptyValue",
			before: "providers:\n  anthropic:\n    api_key:\n    base_url: https://example.test\n",
			after:  "providers:\n  anthropic:\n    api_key: \"sk-new\"\n    base_url: https://example.test\n",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			path := b.userFile()
			if c.before != "" {
				writeFile(t, path, c.before)
				if err := os.Chmod(path, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := SaveProviderKey(path, "anthropic", "sk-new"); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.after {
				t.Fatalf("file:\n%s\nwant:\n%s", got, c.after)
			}
			fi, err := os.Stat(path)
			if err != nil || fi.Mode().Perm() != 0o600 {
				t.Fatalf("mode %v (%v), want 0600", fi.Mode().Perm(), err)
			}
			cfg := b.mustLoad(t, Overrides{})
			equal(t, "providers.anthropic.api_key", cfg.Providers["anthropic"].APIKey, "sk-new")
			left, _ := filepath.Glob(filepath.Join(filepath.Dir(path), ".*.tmp"))
			if len(left) != 0 {
				t.Fatalf("temporary files left: %v", left)
			}
		})
	}

	t.Run("NotAMapping", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		path := writeFile(t, b.userFile(), "- a\n- b\n")
		if err := SaveProviderKey(path, "anthropic", "sk-new"); err == nil || !strings.Contains(err.Error(), path) {
			t.Fatalf("err = %v, want one naming the file", err)
		}
		if got, _ := os.ReadFile(path); string(got) != "- a\n- b\n" {
			t.Fatalf("a refused file was changed: %q", got)
		}
	})

	t.Run("WritesThroughASymlink", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		real := writeFile(t, filepath.Join(b.home, "dotfiles", "arbor.yaml"), "max_turns: 9\n")
		if err := os.MkdirAll(filepath.Dir(b.userFile()), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(real, b.userFile()); err != nil {
			t.Fatal(err)
		}
		if err := SaveProviderKey(b.userFile(), "openai", "o-new"); err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Lstat(b.userFile()); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Fatalf("the link was replaced: %v %v", fi, err)
		}
		if got, _ := os.ReadFile(real); !strings.Contains(string(got), `api_key: "o-new"`) {
			t.Fatalf("target %q", got)
		}
	})

	// A reader never sees a half-written file: each read is a whole
	// version, old or new, while keys are saved one after another.
	t.Run("ReadersSeeWholeFiles", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		path := b.userFile()
		// Big enough that a plain rewrite takes more than one write.
		pad := "# " + strings.Repeat("padding ", 1<<12) + "\n"
		writeFile(t, path, pad+"providers:\n  anthropic:\n    api_key: \"sk-0\"\n"+pad)
		const n = 100
		done := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				got, err := os.ReadFile(path)
				if err != nil {
					t.Errorf("read: %v", err)
					return
				}
				s := string(got)
				if !strings.HasPrefix(s, pad+"providers:\n  anthropic:\n    api_key: \"sk-") || !strings.HasSuffix(s, "\"\n"+pad) {
					t.Errorf("a reader saw a partial file of %d bytes", len(got))
					return
				}
			}
		})
		for i := 1; i <= n; i++ {
			if err := SaveProviderKey(path, "anthropic", fmt.Sprintf("sk-%d", i)); err != nil {
				t.Fatal(err)
			}
		}
		close(done)
		wg.Wait()
		equal(t, "key", b.mustLoad(t, Overrides{}).Providers["anthropic"].APIKey, fmt.Sprintf("sk-%d", n))
	})
}
