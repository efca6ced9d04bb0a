package config

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestLoadValidation(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		project string
		env     map[string]string
		flags   Overrides
		field   string
		source  string // "project" = the project file
		cause   error  // a more specific sentinel, when there is one
	}{
		{name: "MaxTurnsZero", project: "max_turns: 0\n", field: "max_turns", source: "project"},
		{name: "MaxTurnsNegativeFlag", flags: Overrides{MaxTurns: -1}, field: "max_turns", source: "flag --max-turns"},
		{name: "EmptyMode", project: "mode: ''\n", field: "mode", source: "project"},
		{name: "ThresholdAboveOne", project: "compaction: {threshold: 1.5}\n", field: "compaction.threshold", source: "project"},
		{name: "ThresholdZero", project: "compaction: {threshold: 0}\n", field: "compaction.threshold", source: "project"},
		{name: "KeepRecentNegative", project: "compaction: {keep_recent: -1}\n", field: "compaction.keep_recent", source: "project"},
		{name: "MaxAttemptsZero", project: "retry: {max_attempts: 0}\n", field: "retry.max_attempts", source: "project"},
		{name: "QueueLimitNegative", project: "headless: {queue_limit: -1}\n", field: "headless.queue_limit", source: "project"},
		{name: "HeartbeatTooShort", project: "cluster: {heartbeat: 50ms}\n", field: "cluster.heartbeat", source: "project"},
		{name: "LeaseUnderThreeBeats", project: "cluster: {heartbeat: 1s}\n", flags: Overrides{Cluster: Cluster{LeaseTTL: 2 * time.Second}}, field: "cluster.lease_ttl", source: "flag --lease-ttl"},
		{name: "LeaseUnderDefaultBeats", project: "cluster: {lease_ttl: 5s}\n", field: "cluster.lease_ttl", source: "project"},
		{name: "PollTooShort", flags: Overrides{Cluster: Cluster{Poll: time.Millisecond}}, field: "cluster.poll", source: "flag --poll"},
		{name: "PollTooLong", project: "cluster: {poll: 2m}\n", field: "cluster.poll", source: "project"},
		{name: "StallTimeoutZero", project: "retry: {stall_timeout: 0s}\n", field: "retry.stall_timeout", source: "project"},
		{name: "StoreScheme", env: map[string]string{"ARBOR_STORE": "mysql://db/arbor"}, field: "store", source: "environment (ARBOR_STORE)"},
		{name: "ModelUnknownProvider", flags: Overrides{Model: "nope/x"}, field: "model", source: "flag --model", cause: ErrUnknownProvider},
		{name: "ModelEmptyName", env: map[string]string{"ARBOR_MODEL": "openai/"}, field: "model", source: "environment (ARBOR_MODEL)", cause: ErrInvalidRef},
		{name: "ProviderWithoutType", project: "providers:\n  mine:\n    base_url: http://127.0.0.1:8000/v1\n", field: "providers.mine.type", source: "project"},
		{name: "ProviderBadType", project: "providers:\n  mine: {type: gemini}\n", field: "providers.mine.type", source: "project"},
		{name: "ProviderReservedName", project: "providers:\n  script: {type: openai}\n", field: "providers.script", source: "project"},
		{name: "ProviderBadBaseURL", project: "providers:\n  openai: {base_url: 'localhost:8000'}\n", field: "providers.openai.base_url", source: "project"},
		{name: "KeyInKeyEnv", project: "providers:\n  openai: {api_key_env: 'sk-proj-abcdef123456'}\n", field: "providers.openai.api_key_env", source: "project"},
		{name: "NegativeWindow", project: "providers:\n  openai:\n    models:\n      x: {context_window: -1}\n", field: "providers.openai.models.x.context_window", source: "project"},
		{name: "NegativeMaxOutput", project: "providers:\n  openai:\n    models:\n      x: {max_output: -5}\n", field: "providers.openai.models.x.max_output", source: "project"},
		{name: "NegativePrice", project: "providers:\n  openai:\n    models:\n      x:\n        price: {input: -1}\n", field: "providers.openai.models.x.price", source: "project"},
		{name: "EmptyPool", project: "pools:\n  fast: []\n", field: "pools.fast", source: "project"},
		{name: "NodeModelUnknownProvider", project: "node_models:\n  fast: nope/x\n", field: "node_models.fast", source: "project", cause: ErrUnknownProvider},
		{name: "NodeModelBadName", project: "node_models:\n  a/b: openai/gpt-5\n", field: "node_models.a/b", source: "project"},
		{name: "PoolUnknownProvider", project: "pools:\n  fast: [openai/gpt-5, nope/x]\n", field: "pools.fast[1]", source: "project", cause: ErrUnknownProvider},
		{name: "PoolAmbiguousBareName", project: "providers:\n  azure:\n    type: openai\n    base_url: https://a.example/v1\n    models: {gpt-5: {}}\npools:\n  p: [gpt-5]\n", field: "pools.p[0]", source: "project", cause: ErrAmbiguousModel},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			if tt.project != "" {
				writeFile(t, b.projectFile(), tt.project)
			}
			for k, v := range tt.env {
				b.env[k] = v
			}
			_, err := b.load(tt.flags)
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("err = %v, want *ValidationError", err)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("err = %v does not unwrap to ErrInvalid", err)
			}
			if tt.cause != nil && !errors.Is(err, tt.cause) {
				t.Fatalf("err = %v does not unwrap to %v", err, tt.cause)
			}
			equal(t, "Field", ve.Field, tt.field)
			wantSource := tt.source
			if wantSource == "project" {
				wantSource = b.projectFile()
			}
			equal(t, "Source", ve.Source, wantSource)
			if !strings.Contains(err.Error(), tt.field) {
				t.Fatalf("message %q does not name the field %q", err, tt.field)
			}
		})
	}
}

// TestClusterTiming: the built-in lease timing, a file's, and flags over
// a file's, per key.
func TestClusterTiming(t *testing.T) {
	t.Parallel()
	b := setup(t)
	c := b.mustLoad(t, Overrides{})
	equal(t, "defaults", c.Cluster, Cluster{LeaseTTL: 6 * time.Second, Heartbeat: 2 * time.Second, Poll: 250 * time.Millisecond})
	writeFile(t, b.projectFile(), "cluster: {lease_ttl: 1500ms, heartbeat: 500ms}\n")
	c = b.mustLoad(t, Overrides{})
	equal(t, "file", c.Cluster, Cluster{LeaseTTL: 1500 * time.Millisecond, Heartbeat: 500 * time.Millisecond, Poll: 250 * time.Millisecond})
	c = b.mustLoad(t, Overrides{Cluster: Cluster{LeaseTTL: 1800 * time.Millisecond, Poll: 50 * time.Millisecond}})
	equal(t, "flags over the file", c.Cluster, Cluster{LeaseTTL: 1800 * time.Millisecond, Heartbeat: 500 * time.Millisecond, Poll: 50 * time.Millisecond})
}

func TestValidationErrorKeepsSecretsOut(t *testing.T) {
	t.Parallel()
	b := setup(t)
	writeFile(t, b.projectFile(), "providers:\n  openai: {api_key_env: 'sk-proj-abcdef123456'}\n")
	_, err := b.load(Overrides{})
	if err == nil || strings.Contains(err.Error(), "abcdef123456") {
		t.Fatalf("err = %v, want an error without the key", err)
	}
}
