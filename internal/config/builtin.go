package config

import (
	"time"

	"github.com/arbor-run/arbor/internal/llm"
)

// Built-in values, the lowest layer of every Config.
const (
	DefaultMode                = "default"
	DefaultMaxTurns            = 50
	DefaultCompactionThreshold = 0.8
	DefaultKeepRecent          = 6
	DefaultMaxAttempts         = 4
	DefaultStallTimeout        = 60 * time.Second
	// DefaultContextWindow is assumed for a model no table lists.
	DefaultContextWindow int64 = 128_000

	// DefaultAnthropicModel and DefaultOpenAIModel are what DefaultModelRef
	// infers when only that provider's key is present.
	DefaultAnthropicModel = "anthropic/claude-sonnet-4-5"
	DefaultOpenAIModel    = "openai/gpt-5"
)

// Provider types: the wire protocol a provider speaks.
const (
	TypeAnthropic = "anthropic"
	TypeOpenAI    = "openai" // any Chat Completions compatible server
	TypeScript    = "script" // llmtest's scripted model; only via "script:FILE"
)

func price(in, out, cacheRead, cacheWrite float64) *llm.Price {
	return &llm.Price{InputPerMTok: in, OutputPerMTok: out, CacheReadPerMTok: cacheRead, CacheWritePerMTok: cacheWrite}
}

// anthropicModels are list prices in USD per million tokens; cache write
// is the 5-minute rate.
func anthropicModels() map[string]Model {
	return map[string]Model{
		"claude-opus-4-5":         {Price: price(5, 25, 0.50, 6.25), ContextWindow: 200_000, MaxOutput: 64_000},
		"claude-sonnet-4-5":       {Price: price(3, 15, 0.30, 3.75), ContextWindow: 200_000, MaxOutput: 64_000},
		"claude-haiku-4-5":        {Price: price(1, 5, 0.10, 1.25), ContextWindow: 200_000, MaxOutput: 64_000},
		"claude-opus-4-1":         {Price: price(15, 75, 1.50, 18.75), ContextWindow: 200_000, MaxOutput: 32_000},
		"claude-opus-4-0":         {Price: price(15, 75, 1.50, 18.75), ContextWindow: 200_000, MaxOutput: 32_000},
		"claude-sonnet-4-0":       {Price: price(3, 15, 0.30, 3.75), ContextWindow: 200_000, MaxOutput: 64_000},
		"claude-3-5-haiku-latest": {Price: price(0.80, 4, 0.08, 1), ContextWindow: 200_000, MaxOutput: 8_192},
	}
}

// openAIModels are list prices in USD per million tokens; OpenAI does not
// charge for cache writes.
func openAIModels() map[string]Model {
	return map[string]Model{
		"gpt-5":        {Price: price(1.25, 10, 0.125, 0), ContextWindow: 400_000, MaxOutput: 128_000},
		"gpt-5-mini":   {Price: price(0.25, 2, 0.025, 0), ContextWindow: 400_000, MaxOutput: 128_000},
		"gpt-5-nano":   {Price: price(0.05, 0.40, 0.005, 0), ContextWindow: 400_000, MaxOutput: 128_000},
		"gpt-4.1":      {Price: price(2, 8, 0.50, 0), ContextWindow: 1_047_576, MaxOutput: 32_768},
		"gpt-4.1-mini": {Price: price(0.40, 1.60, 0.10, 0), ContextWindow: 1_047_576, MaxOutput: 32_768},
		"gpt-4.1-nano": {Price: price(0.10, 0.40, 0.025, 0), ContextWindow: 1_047_576, MaxOutput: 32_768},
		"gpt-4o":       {Price: price(2.50, 10, 1.25, 0), ContextWindow: 128_000, MaxOutput: 16_384},
		"gpt-4o-mini":  {Price: price(0.15, 0.60, 0.075, 0), ContextWindow: 128_000, MaxOutput: 16_384},
		"o3":           {Price: price(2, 8, 0.50, 0), ContextWindow: 200_000, MaxOutput: 100_000},
		"o4-mini":      {Price: price(1.10, 4.40, 0.275, 0), ContextWindow: 200_000, MaxOutput: 100_000},
	}
}

// builtin returns the lowest layer. The vendors' base URLs come from the
// variables their own SDKs read, so a file may still override them.
func builtin(getenv func(string) string) *Config {
	return &Config{
		Mode:     DefaultMode,
		MaxTurns: DefaultMaxTurns,
		Providers: map[string]Provider{
			"anthropic": {
				Type:      TypeAnthropic,
				BaseURL:   getenv("ANTHROPIC_BASE_URL"),
				APIKeyEnv: "ANTHROPIC_API_KEY",
				Models:    anthropicModels(),
			},
			"openai": {
				Type:      TypeOpenAI,
				BaseURL:   getenv("OPENAI_BASE_URL"),
				APIKeyEnv: "OPENAI_API_KEY",
				Models:    openAIModels(),
			},
			"ollama": {
				Type:    TypeOpenAI,
				BaseURL: "http://127.0.0.1:11434/v1",
				Models:  map[string]Model{},
			},
		},
		Pools:      map[string][]string{},
		Compaction: Compaction{Threshold: DefaultCompactionThreshold, KeepRecent: DefaultKeepRecent},
		Retry:      Retry{MaxAttempts: DefaultMaxAttempts, StallTimeout: DefaultStallTimeout},
		Cluster:    Cluster{LeaseTTL: DefaultLeaseTTL, Heartbeat: DefaultHeartbeat, Poll: DefaultPoll},
	}
}
