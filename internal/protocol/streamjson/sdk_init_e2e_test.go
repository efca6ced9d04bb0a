//go:build unix

package streamjson_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
)

// TestSDKInitializeOptions drives the built binary through the real SDK
// with options the SDK sends in the initialize request rather than in
// argv: arbor acts on them or refuses them, never ignores them.
func TestSDKInitializeOptions(t *testing.T) {
	t.Parallel()
	h := setupSDK(t)

	t.Run("agents-refused", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer(llmtest.Turn{Text: "never"})
		r := h.driveOptions(t, srv, driverOptions{Options: map[string]any{
			"agents": map[string]any{"reviewer": map[string]any{"description": "reviews", "prompt": "Review."}}}})
		if end := r.end(t); end.Driver != "error" || !strings.Contains(end.Message, "agents") {
			r.fatalf(t, "driver ended with %s %q; want the query's error naming agents", end.Driver, end.Message)
		}
		if n := len(srv.Requests()); n != 0 {
			r.fatalf(t, "model requests = %d, want 0", n)
		}
	})

	t.Run("enableFileCheckpointing-refused", func(t *testing.T) {
		t.Parallel()
		// The SDK sets an environment variable for it, not a flag.
		srv := llmtest.NewServer(llmtest.Turn{Text: "never"})
		r := h.driveOptions(t, srv, driverOptions{Options: map[string]any{"enableFileCheckpointing": true}})
		if end := r.end(t); end.Driver != "error" || !strings.Contains(end.Message, "enableFileCheckpointing") {
			r.fatalf(t, "driver ended with %s %q; want the query's error naming enableFileCheckpointing", end.Driver, end.Message)
		}
		if n := len(srv.Requests()); n != 0 {
			r.fatalf(t, "model requests = %d, want 0", n)
		}
	})

	t.Run("disallowedTools-initialize", func(t *testing.T) {
		t.Parallel()
		// disallowedToolsDelivery 'initialize': --await-initialize, the
		// rules in the initialize request, and an answer that must confirm them.
		srv := llmtest.NewServer(
			llmtest.Turn{ToolCalls: []llmtest.ToolCall{{ID: "toolu_a1", Name: "Bash", Input: map[string]any{"command": "echo x > ran.txt"}}}},
			llmtest.Turn{Text: "refused"})
		r := h.driveOptions(t, srv, driverOptions{Options: map[string]any{
			"disallowedTools": []string{"Bash"}, "disallowedToolsDelivery": "initialize",
			"permissionMode": "bypassPermissions", "allowDangerouslySkipPermissions": true}})
		r.requireDone(t)
		r.find(t, "an error tool_result for toolu_a1", func(m sdkMessage) bool {
			return m.Type == "user" && m.hasBlock(func(b sdkBlock) bool { return b.ToolUseID == "toolu_a1" && b.IsError })
		})
		// A bare name leaves the tool out of init's tools, as Claude Code's.
		init := r.find(t, "system/init", func(m sdkMessage) bool { return m.Type == "system" && m.Subtype == "init" })
		if slices.Contains(init.Tools, "Bash") || !slices.Contains(init.Tools, "Read") {
			r.fatalf(t, "init.tools = %q; want Read and no Bash", init.Tools)
		}
	})
}
