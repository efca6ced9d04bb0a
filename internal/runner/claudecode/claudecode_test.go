package claudecode

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/llm"
)

// TestArgs: a first turn starts the node's session, a later one resumes
// the same session; prompts always come to arbor over stdio and
// permissions are never skipped.
func TestArgs(t *testing.T) {
	first := Args(Options{Model: "claude-sonnet-4-5"}, Turn{SessionKey: "run.2"}, "{}")
	later := Args(Options{}, Turn{SessionKey: "run.2", Resume: true}, "{}")
	uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	id := SessionUUID("run.2")
	if !uuid.MatchString(id) || id == SessionUUID("run.3") {
		t.Fatalf("session uuid %q", id)
	}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{first, []string{"--session-id", id, "--model", "claude-sonnet-4-5"}},
		{later, []string{"--resume", id}},
	} {
		joined := strings.Join(c.args, " ")
		for _, w := range append(c.want, "--permission-prompt-tool stdio", "--input-format stream-json", "--output-format stream-json", "--mcp-config {}") {
			if !strings.Contains(joined, w) {
				t.Fatalf("args %q lack %q", joined, w)
			}
		}
		if slices.Contains(c.args, "--dangerously-skip-permissions") {
			t.Fatalf("args %q skip permissions", joined)
		}
	}
	if slices.Contains(later, "--session-id") || slices.Contains(first, "--resume") {
		t.Fatalf("first %q later %q", first, later)
	}
}

// TestResultSpend: a result's spend is the turn's own. The second result
// is what Claude Code 2.1 printed for a turn resumed with --resume (1000
// input and 100 output tokens served, $0.0045 at its price):
// total_cost_usd counts the first turn too, model_usage_since_last_result
// does not. A result without the per-model field falls back to usage and
// total_cost_usd.
func TestResultSpend(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, line string
		want       llm.Usage
		cost       float64
	}{
		{"resumed", `{"type":"result","subtype":"success","is_error":false,"result":"hello resume","total_cost_usd":0.009000000000000001,` +
			`"usage":{"input_tokens":1000,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":100},` +
			`"modelUsage":{"claude-sonnet-4-5":{"inputTokens":2000,"outputTokens":200,"cacheReadInputTokens":0,"cacheCreationInputTokens":0,"costUSD":0.009000000000000001}},` +
			`"model_usage_since_last_result":{"claude-sonnet-4-5":{"inputTokens":1000,"outputTokens":100,"cacheReadInputTokens":0,"cacheCreationInputTokens":0,"costUSD":0.0045000000000000005}}}`,
			llm.Usage{InputTokens: 1000, OutputTokens: 100}, 0.0045},
		{"side calls of another model", `{"type":"result","total_cost_usd":1,"usage":{"input_tokens":1000,"output_tokens":100},` +
			`"model_usage_since_last_result":{"claude-sonnet-4-5":{"inputTokens":1000,"outputTokens":100,"cacheReadInputTokens":50,"costUSD":0.004},` +
			`"claude-haiku-4-5":{"inputTokens":20,"outputTokens":5,"cacheCreationInputTokens":7,"costUSD":0.0001}}}`,
			llm.Usage{InputTokens: 1020, OutputTokens: 105, CacheReadTokens: 50, CacheWriteTokens: 7}, 0.0041},
		{"older result", `{"type":"result","total_cost_usd":0.002,"usage":{"input_tokens":300,"output_tokens":20,"cache_read_input_tokens":4,"cache_creation_input_tokens":5}}`,
			llm.Usage{InputTokens: 300, OutputTokens: 20, CacheReadTokens: 4, CacheWriteTokens: 5}, 0.002},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var m inMessage
			if err := json.Unmarshal([]byte(c.line), &m); err != nil {
				t.Fatal(err)
			}
			u, cost := m.spend()
			if u != c.want || math.Abs(cost-c.cost) > 1e-12 {
				t.Fatalf("spend %+v $%v, want %+v $%v", u, cost, c.want, c.cost)
			}
		})
	}
}

// TestMCPConfigIsAPrivateFile: the MCP configuration the CLI gets, whose
// server environment may hold a store URL with its password, is a file
// only the user reads, named on the command line, and gone after the
// turn; the command line never holds the configuration itself.
func TestMCPConfigIsAPrivateFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	record := filepath.Join(dir, "seen")
	// A stand-in CLI that records its arguments and the config it was named.
	fake := filepath.Join(dir, "claude")
	script := "#!/bin/sh\nprintf '%s\\n' \"$@\" > " + record + "\n" +
		"while [ $# -gt 0 ]; do if [ \"$1\" = --mcp-config ]; then ls -l \"$2\" >> " + record + "; cat \"$2\" >> " + record + "; fi; shift; done\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	const secret = "postgres://arbor:FAKE-PASSWORD@db/arbor"
	_, err := Run(context.Background(), Options{Path: fake, Dir: dir, MCPCommand: "arbor", MCPArgs: []string{"mcp"},
		MCPEnv: map[string]string{"ARBOR_STORE": secret}}, Turn{SessionKey: "run.2", Message: "hi"})
	if err == nil {
		t.Fatal("a CLI that wrote no result gave no error")
	}
	b, rerr := os.ReadFile(record)
	if rerr != nil {
		t.Fatal(rerr)
	}
	seen := string(b)
	args, config, _ := strings.Cut(seen, "-rw-------")
	if !strings.Contains(seen, "-rw-------") || !strings.Contains(config, secret) {
		t.Fatalf("the config was not a file only the user reads, holding the server's environment:\n%s", seen)
	}
	if strings.Contains(args, secret) || strings.Contains(args, "mcpServers") {
		t.Fatalf("the command line holds the configuration:\n%s", args)
	}
	name := regexp.MustCompile(`\S*arbor-mcp-\S+\.json`).FindString(config)
	if _, err := os.Stat(name); name == "" || !os.IsNotExist(err) {
		t.Fatalf("the config file %q was left behind (%v)", name, err)
	}
}
