package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/llm"
)

type bundle struct {
	home      string
	workspace string
	env       map[string]string
}

// setup gives each test its own HOME and workspace under t.TempDir() and
// an injected environment holding only HOME.
func setup(t *testing.T) *bundle {
	t.Helper()
	root := t.TempDir()
	b := &bundle{
		home:      filepath.Join(root, "home"),
		workspace: filepath.Join(root, "ws"),
		env:       map[string]string{},
	}
	b.env["HOME"] = b.home
	for _, d := range []string{b.home, b.workspace} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

func (b *bundle) getenv(k string) string { return b.env[k] }

func (b *bundle) userFile() string {
	return filepath.Join(b.home, ".config", "arbor", "config.yaml")
}

func (b *bundle) projectFile() string {
	return filepath.Join(b.workspace, ".arbor", "config.yaml")
}

func writeFile(t *testing.T, path, body string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func (b *bundle) load(ov Overrides) (*Config, error) {
	return Load(LoadOptions{Workspace: b.workspace, Overrides: ov, Getenv: b.getenv})
}

func (b *bundle) mustLoad(t *testing.T, ov Overrides) *Config {
	t.Helper()
	c, err := b.load(ov)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return c
}

func equal[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Fatalf("%s = %v, want %v", what, got, want)
	}
}

func TestLoadBuiltins(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.mustLoad(t, Overrides{})

	equal(t, "Model", c.Model, "")
	equal(t, "Mode", c.Mode, "default")
	equal(t, "Store", c.Store, "")
	equal(t, "MaxTurns", c.MaxTurns, 50)
	equal(t, "Compaction.Threshold", c.Compaction.Threshold, 0.8)
	equal(t, "Compaction.KeepRecent", c.Compaction.KeepRecent, 6)
	equal(t, "Retry.MaxAttempts", c.Retry.MaxAttempts, 4)
	equal(t, "Retry.StallTimeout", c.Retry.StallTimeout, 60*time.Second)
	equal(t, "Workspace", c.Workspace(), b.workspace)

	for name, typ := range map[string]string{"anthropic": "anthropic", "openai": "openai", "ollama": "openai"} {
		equal(t, name+" type", c.Providers[name].Type, typ)
	}
	equal(t, "anthropic key env", c.Providers["anthropic"].APIKeyEnv, "ANTHROPIC_API_KEY")
	equal(t, "openai key env", c.Providers["openai"].APIKeyEnv, "OPENAI_API_KEY")
	equal(t, "anthropic base url", c.Providers["anthropic"].BaseURL, "")
	equal(t, "ollama base url", c.Providers["ollama"].BaseURL, "http://127.0.0.1:11434/v1")
	equal(t, "ollama key env", c.Providers["ollama"].APIKeyEnv, "")

	sonnet := c.Providers["anthropic"].Models["claude-sonnet-4-5"]
	equal(t, "sonnet price", *sonnet.Price, llm.Price{InputPerMTok: 3, OutputPerMTok: 15, CacheReadPerMTok: 0.30, CacheWritePerMTok: 3.75})
	equal(t, "sonnet window", sonnet.ContextWindow, int64(200_000))
	gpt5 := c.Providers["openai"].Models["gpt-5"]
	equal(t, "gpt-5 price", *gpt5.Price, llm.Price{InputPerMTok: 1.25, OutputPerMTok: 10, CacheReadPerMTok: 0.125})
	equal(t, "gpt-5 window", gpt5.ContextWindow, int64(400_000))
	if len(c.Warnings()) != 0 {
		t.Fatalf("Warnings = %v, want none", c.Warnings())
	}
}

func TestLoadVendorBaseURLFromEnv(t *testing.T) {
	t.Parallel()

	t.Run("EnvFillsBuiltin", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.env["ANTHROPIC_BASE_URL"] = "http://127.0.0.1:9000"
		b.env["OPENAI_BASE_URL"] = "http://127.0.0.1:9001/v1"
		c := b.mustLoad(t, Overrides{})
		equal(t, "anthropic", c.Providers["anthropic"].BaseURL, "http://127.0.0.1:9000")
		equal(t, "openai", c.Providers["openai"].BaseURL, "http://127.0.0.1:9001/v1")
	})

	t.Run("FileOverridesEnv", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.env["OPENAI_BASE_URL"] = "http://127.0.0.1:9001/v1"
		writeFile(t, b.projectFile(), "providers:\n  openai:\n    base_url: https://proxy.example/v1\n")
		c := b.mustLoad(t, Overrides{})
		equal(t, "openai", c.Providers["openai"].BaseURL, "https://proxy.example/v1")
	})
}

func TestLoadPrecedence(t *testing.T) {
	t.Parallel()

	// Each case adds one more layer; the highest layer present must win.
	tests := []struct {
		name    string
		user    string
		project string
		env     map[string]string
		flags   Overrides
		want    Config
	}{
		{
			name: "Builtin",
			want: Config{Model: "", Mode: "default", MaxTurns: 50},
		},
		{
			name: "UserFile",
			user: "model: openai/gpt-5\nmode: auto-edit\nmax_turns: 10\n",
			want: Config{Model: "openai/gpt-5", Mode: "auto-edit", MaxTurns: 10},
		},
		{
			name:    "ProjectFileOverUser",
			user:    "model: openai/gpt-5\nmode: auto-edit\nmax_turns: 10\n",
			project: "model: anthropic/claude-haiku-4-5\nmax_turns: 20\n",
			want:    Config{Model: "anthropic/claude-haiku-4-5", Mode: "auto-edit", MaxTurns: 20},
		},
		{
			name:    "EnvOverProject",
			user:    "model: openai/gpt-5\nmode: auto-edit\n",
			project: "model: anthropic/claude-haiku-4-5\nmax_turns: 20\n",
			env:     map[string]string{"ARBOR_MODEL": "ollama/qwen3", "ARBOR_MODE": "trust"},
			want:    Config{Model: "ollama/qwen3", Mode: "trust", MaxTurns: 20},
		},
		{
			name:    "FlagsOverEnv",
			user:    "model: openai/gpt-5\nmode: auto-edit\n",
			project: "model: anthropic/claude-haiku-4-5\nmax_turns: 20\n",
			env:     map[string]string{"ARBOR_MODEL": "ollama/qwen3", "ARBOR_MODE": "trust"},
			flags:   Overrides{Model: "openai/gpt-4.1", Mode: "default", MaxTurns: 7},
			want:    Config{Model: "openai/gpt-4.1", Mode: "default", MaxTurns: 7},
		},
		{
			name:  "ZeroFlagsAreUnset",
			user:  "model: openai/gpt-5\nmax_turns: 10\n",
			env:   map[string]string{"ARBOR_MODE": "trust"},
			flags: Overrides{},
			want:  Config{Model: "openai/gpt-5", Mode: "trust", MaxTurns: 10},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			if tt.user != "" {
				writeFile(t, b.userFile(), tt.user)
			}
			if tt.project != "" {
				writeFile(t, b.projectFile(), tt.project)
			}
			for k, v := range tt.env {
				b.env[k] = v
			}
			c := b.mustLoad(t, tt.flags)
			equal(t, "Model", c.Model, tt.want.Model)
			equal(t, "Mode", c.Mode, tt.want.Mode)
			equal(t, "MaxTurns", c.MaxTurns, tt.want.MaxTurns)
		})
	}
}

func TestLoadStorePrecedence(t *testing.T) {
	t.Parallel()
	b := setup(t)
	writeFile(t, b.userFile(), "store: /data/user.db\n")
	writeFile(t, b.projectFile(), "store: project.db\n")

	c := b.mustLoad(t, Overrides{})
	equal(t, "project store", c.Store, filepath.Join(b.workspace, "project.db"))

	b.env["ARBOR_STORE"] = "postgres://arbor@db/arbor"
	c = b.mustLoad(t, Overrides{})
	equal(t, "env store", c.Store, "postgres://arbor@db/arbor")

	c = b.mustLoad(t, Overrides{Store: "/tmp/flag.db"})
	equal(t, "flag store", c.Store, "/tmp/flag.db")
}

func TestLoadMergesPerKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	writeFile(t, b.userFile(), `
providers:
  proxy:
    type: openai
    base_url: https://proxy.example/v1
    api_key_env: PROXY_KEY
    models:
      big: {context_window: 64000}
pools:
  fast: [anthropic/claude-haiku-4-5, openai/gpt-5-mini]
  smart: [anthropic/claude-opus-4-1]
compaction:
  keep_recent: 10
retry:
  stall_timeout: 2m
`)
	writeFile(t, b.projectFile(), `
providers:
  anthropic:
    models:
      claude-next:
        price: {input: 2, output: 9}
  proxy:
    models:
      small: {max_output: 4096, images: false}
      big: {max_output: 8192}
pools:
  fast: [ollama/qwen3]
compaction:
  threshold: 0.5
`)
	c := b.mustLoad(t, Overrides{})

	anth := c.Providers["anthropic"]
	equal(t, "anthropic type kept", anth.Type, "anthropic")
	equal(t, "anthropic key env kept", anth.APIKeyEnv, "ANTHROPIC_API_KEY")
	equal(t, "builtin sonnet kept", anth.Models["claude-sonnet-4-5"].ContextWindow, int64(200_000))
	equal(t, "added price", *anth.Models["claude-next"].Price, llm.Price{InputPerMTok: 2, OutputPerMTok: 9})

	proxy := c.Providers["proxy"]
	equal(t, "proxy type", proxy.Type, "openai")
	equal(t, "proxy base url", proxy.BaseURL, "https://proxy.example/v1")
	equal(t, "proxy big window kept", proxy.Models["big"].ContextWindow, int64(64000))
	equal(t, "proxy big max output added", proxy.Models["big"].MaxOutput, int64(8192))
	equal(t, "proxy small", proxy.Models["small"].MaxOutput, int64(4096))
	if img := proxy.Models["small"].Images; img == nil || *img {
		t.Errorf("proxy small images = %v, want false", img)
	}
	if mr, err := c.Resolve("proxy/small"); err != nil || !mr.NoImages {
		t.Errorf("proxy/small resolved NoImages = %v (%v), want true", mr.NoImages, err)
	}
	if mr, err := c.Resolve("proxy/big"); err != nil || mr.NoImages {
		t.Errorf("proxy/big resolved NoImages = %v (%v), want false", mr.NoImages, err)
	}

	equal(t, "fast pool replaced", strings.Join(c.Pools["fast"], ","), "ollama/qwen3")
	equal(t, "smart pool kept", strings.Join(c.Pools["smart"], ","), "anthropic/claude-opus-4-1")

	equal(t, "threshold", c.Compaction.Threshold, 0.5)
	equal(t, "keep_recent", c.Compaction.KeepRecent, 10)
	equal(t, "max_attempts builtin", c.Retry.MaxAttempts, 4)
	equal(t, "stall_timeout", c.Retry.StallTimeout, 2*time.Minute)
}

func TestLoadUnknownKey(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name string
		body string
		key  string
		line int
	}{
		{"TopLevel", "model: openai/gpt-5\nmodle: x\n", "modle", 2},
		{"Provider", "providers:\n  anthropic:\n    modles: {}\n", "providers.anthropic.modles", 3},
		{"Price", "providers:\n  openai:\n    models:\n      gpt-5:\n        price: {inptu: 1}\n", "providers.openai.models.gpt-5.price.inptu", 5},
		{"Retry", "retry:\n  attempts: 3\n", "retry.attempts", 2},
		{"ThroughAlias", "compaction: &c {threshold: 0.5}\nretry: *c\n", "retry.threshold", 1},
		{"MergeKey", "compaction: &c {threshold: 0.5}\nretry:\n  <<: *c\n", "retry.threshold", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			path := writeFile(t, b.projectFile(), tt.body)
			_, err := b.load(Overrides{})
			if !errors.Is(err, ErrUnknownKey) || !errors.Is(err, ErrInvalid) {
				t.Fatalf("err = %v, want ErrUnknownKey and ErrInvalid", err)
			}
			var fe *FileError
			if !errors.As(err, &fe) {
				t.Fatalf("err = %T, want *FileError", err)
			}
			equal(t, "Path", fe.Path, path)
			equal(t, "Key", fe.Key, tt.key)
			equal(t, "Line", fe.Line, tt.line)
			for _, want := range []string{path, tt.key} {
				if !strings.Contains(err.Error(), want) {
					t.Fatalf("message %q does not name %q", err, want)
				}
			}
		})
	}
}

func TestLoadFileErrors(t *testing.T) {
	t.Parallel()

	t.Run("Malformed", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		path := writeFile(t, b.userFile(), "model: [unclosed\n")
		_, err := b.load(Overrides{})
		var fe *FileError
		if !errors.As(err, &fe) || fe.Path != path || !errors.Is(err, ErrInvalid) {
			t.Fatalf("err = %v, want *FileError for %s", err, path)
		}
	})

	t.Run("WrongType", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		path := writeFile(t, b.projectFile(), "max_turns: many\n")
		_, err := b.load(Overrides{})
		var fe *FileError
		if !errors.As(err, &fe) || fe.Path != path {
			t.Fatalf("err = %v, want *FileError for %s", err, path)
		}
	})

	// A duration without a unit says what to write, with the key and the
	// line (it said "cannot unmarshal !!int `60` into time.Duration").
	t.Run("DurationWithoutUnit", func(t *testing.T) {
		t.Parallel()
		for _, tc := range []struct{ file, want string }{
			{"retry:\n  stall_timeout: 60\n", `:2: retry.stall_timeout: "60" is not a duration: write one with its unit, such as 60s`},
			{"retry: {max_attempts: 2, stall_timeout: \"90\"}\n", `:1: retry.stall_timeout: "90" is not a duration: write one with its unit, such as 90s`},
			{"question_timeout: soon\n", `:1: question_timeout: "soon" is not a duration: write one with its unit, such as 60s, 2m or 1h30m`},
			{"mcp_servers:\n  fs:\n    command: x\n    start_timeout: 1.5\n", `:4: mcp_servers.fs.start_timeout: "1.5" is not a duration: write one with its unit, such as 1.5s`},
		} {
			b := setup(t)
			path := writeFile(t, b.projectFile(), tc.file)
			_, err := b.load(Overrides{})
			var fe *FileError
			if !errors.Is(err, ErrInvalid) || !errors.As(err, &fe) || fe.Path != path || !strings.HasSuffix(err.Error(), path+tc.want) {
				t.Fatalf("%q: err = %v, want *FileError ending %q", tc.file, err, path+tc.want)
			}
		}
		for _, ok := range []string{"retry: {stall_timeout: 60s}\n", "question_timeout: 1h30m\n", "question_timeout:\n", "question_timeout: 0\n"} {
			b := setup(t)
			writeFile(t, b.projectFile(), ok)
			if _, err := b.load(Overrides{}); err != nil {
				t.Fatalf("%q: %v", ok, err)
			}
		}
	})

	// A bare 0 is a duration (none), in a layer that overrides another's.
	t.Run("BareZeroDuration", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		writeFile(t, b.userFile(), "question_timeout: 5m\napproval_timeout: 2m\n")
		writeFile(t, b.projectFile(), "question_timeout: 0\napproval_timeout: 0\n")
		c := b.mustLoad(t, Overrides{})
		if c.QuestionTimeout != 0 || c.ApprovalTimeout != 0 {
			t.Fatalf("question_timeout %v, approval_timeout %v; want 0 from the project's bare 0", c.QuestionTimeout, c.ApprovalTimeout)
		}
		writeFile(t, b.projectFile(), "retry: {stall_timeout: 0}\n")
		if _, err := b.load(Overrides{}); err == nil || !strings.Contains(err.Error(), "must be a positive duration") {
			t.Fatalf("stall_timeout: 0: err = %v, want the positive-duration check", err)
		}
	})

	t.Run("Unreadable", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		if err := os.MkdirAll(b.projectFile(), 0o755); err != nil { // a directory where the file should be
			t.Fatal(err)
		}
		if _, err := b.load(Overrides{}); err == nil {
			t.Fatal("Load succeeded with a directory as config file")
		}
	})

	t.Run("EmptyAndMissingFilesAreFine", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		writeFile(t, b.userFile(), "# nothing yet\n")
		c := b.mustLoad(t, Overrides{})
		equal(t, "MaxTurns", c.MaxTurns, 50)
	})
}

func TestLoadWarnsAboutReadableLiteralKey(t *testing.T) {
	t.Parallel()
	b := setup(t)
	path := writeFile(t, b.userFile(), "providers:\n  openai:\n    api_key: sk-literal\n")
	if c := b.mustLoad(t, Overrides{}); len(c.Warnings()) != 0 {
		t.Fatalf("mode 0600: Warnings = %v, want none", c.Warnings())
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	c := b.mustLoad(t, Overrides{})
	if len(c.Warnings()) != 1 || !strings.Contains(c.Warnings()[0], path) || strings.Contains(c.Warnings()[0], "sk-literal") {
		t.Fatalf("mode 0644: Warnings = %v, want one naming the file and not the key", c.Warnings())
	}
}
