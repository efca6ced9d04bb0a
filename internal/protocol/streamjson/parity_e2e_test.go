//go:build unix

package streamjson_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/testutil"
)

// realClaudeCode installs the real Claude Code CLI (pinned in
// testdata/claude-code) and returns its native binary, which the SDK runs
// directly (the npm wrapper needs a postinstall step the test skips).
func realClaudeCode(t *testing.T) string {
	t.Helper()
	dir := testutil.NPMPackage(t, filepath.Join("testdata", "claude-code"))
	arch := map[string]string{"amd64": "x64", "arm64": "arm64"}[runtime.GOARCH]
	bin := filepath.Join(dir, "node_modules", "@anthropic-ai", "claude-code-"+runtime.GOOS+"-"+arch, "claude")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("the Claude Code binary for %s/%s is not installed: %v", runtime.GOOS, runtime.GOARCH, err)
	}
	return bin
}

// rawMessages are the SDK messages of a run as JSON objects.
func (r *sdkRun) rawMessages(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(r.stdout))
	sc.Buffer(make([]byte, 0, 64*1024), 16<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) != nil || m["driver"] != nil {
			continue
		}
		out = append(out, m)
	}
	return out
}

func firstOf(ms []map[string]any, typ, subtype string) map[string]any {
	for _, m := range ms {
		if m["type"] == typ && (subtype == "" || m["subtype"] == subtype) {
			return m
		}
	}
	return nil
}

// jsonKind is the JSON type of a decoded value.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "boolean"
	case []any:
		return "array"
	}
	return "object"
}

// sameShape checks that arbor's message has every field of keys the real
// CLI's has, with the same JSON type; equal lists fields whose values must
// also be equal.
func sameShape(t *testing.T, what string, real, arbor map[string]any, keys, equal []string) {
	t.Helper()
	if real == nil || arbor == nil {
		t.Fatalf("%s: the real CLI sent %v, arbor %v", what, real != nil, arbor != nil)
	}
	for _, k := range keys {
		rv, ok := real[k]
		if !ok {
			continue
		}
		av, ok := arbor[k]
		if !ok {
			t.Errorf("%s: arbor has no %q (the real CLI sends %v)", what, k, rv)
			continue
		}
		if jsonKind(rv) != jsonKind(av) {
			t.Errorf("%s.%s: arbor sends a %s (%v), the real CLI a %s (%v)", what, k, jsonKind(av), av, jsonKind(rv), rv)
		}
	}
	for _, k := range equal {
		rb, _ := json.Marshal(real[k])
		ab, _ := json.Marshal(arbor[k])
		if string(rb) != string(ab) {
			t.Errorf("%s.%s: arbor %s, the real CLI %s", what, k, ab, rb)
		}
	}
}

// The fields of system/init, assistant and result the SDK's types
// declare and programs read.
var (
	initFields      = []string{"type", "subtype", "cwd", "session_id", "tools", "mcp_servers", "model", "permissionMode", "slash_commands", "apiKeySource", "output_style", "uuid"}
	resultFields    = []string{"type", "subtype", "is_error", "duration_ms", "duration_api_ms", "num_turns", "result", "session_id", "total_cost_usd", "usage", "modelUsage", "permission_denials", "uuid", "stop_reason"}
	assistantFields = []string{"type", "message", "session_id", "parent_tool_use_id", "uuid"}
	messageFields   = []string{"id", "type", "role", "model", "content", "stop_reason", "usage"}
)

// TestClaudeCodeParity runs the same flows through the SDK against the
// real Claude Code CLI and against arbor, both on the scripted model
// server, and compares what the SDK yields field by field where programs
// read it: init, assistant and result messages, and canUseTool's
// arguments for a Bash call.
func TestClaudeCodeParity(t *testing.T) {
	t.Parallel()
	h := setupSDK(t)
	real := &sdkHarness{bin: realClaudeCode(t), driverDir: h.driverDir}
	realEnv := map[string]string{"ENABLE_TOOL_SEARCH": "false", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "ARBOR_MODEL": ""}

	compare := func(t *testing.T, rr, ar *sdkRun) {
		t.Helper()
		rm, am := rr.rawMessages(t), ar.rawMessages(t)
		sameShape(t, "system/init", firstOf(rm, "system", "init"), firstOf(am, "system", "init"), initFields, []string{"type", "subtype", "permissionMode", "apiKeySource", "mcp_servers"})
		ra, aa := firstOf(rm, "assistant", ""), firstOf(am, "assistant", "")
		sameShape(t, "assistant", ra, aa, assistantFields, []string{"parent_tool_use_id"})
		if ra != nil && aa != nil {
			rmsg, _ := ra["message"].(map[string]any)
			amsg, _ := aa["message"].(map[string]any)
			sameShape(t, "assistant.message", rmsg, amsg, messageFields, []string{"type", "role", "content"})
		}
		sameShape(t, "result", firstOf(rm, "result", ""), firstOf(am, "result", ""), resultFields, []string{"type", "subtype", "is_error", "result", "num_turns", "permission_denials"})
		if t.Failed() {
			t.Logf("real CLI:\n%s\narbor:\n%s", rr.stdout, ar.stdout)
		}
	}

	t.Run("plain", func(t *testing.T) {
		t.Parallel()
		rr := real.run(t, "plain", llmtest.NewServer(llmtest.Turn{Text: "Hello from the script"}), nil, realEnv, driverOptions{})
		ar := h.run(t, "plain", llmtest.NewServer(llmtest.Turn{Text: "Hello from the script"}), nil, nil, driverOptions{})
		compare(t, rr, ar)
	})

	t.Run("Bash-canUseTool", func(t *testing.T) {
		t.Parallel()
		turns := func() *llmtest.Server {
			return llmtest.NewServer(
				llmtest.Turn{ToolCalls: []llmtest.ToolCall{{ID: "toolu_p1", Name: "Bash", Input: map[string]any{"command": "echo hi > ran.txt", "description": "Write ran.txt"}}}},
				llmtest.Turn{Text: "ran"})
		}
		o := driverOptions{Prompt: "Run it", CanUseTool: "allow"}
		rr := real.run(t, "options", turns(), nil, realEnv, o)
		ar := h.run(t, "options", turns(), nil, nil, o)
		compare(t, rr, ar)
		re, ae := rr.driverEvents("can_use_tool"), ar.driverEvents("can_use_tool")
		if len(re) != 1 || len(ae) != 1 {
			t.Fatalf("canUseTool calls: real CLI %d, arbor %d; want one each", len(re), len(ae))
		}
		if re[0].ToolName != ae[0].ToolName || re[0].ToolUseID != ae[0].ToolUseID || string(re[0].Input) != string(ae[0].Input) {
			t.Fatalf("canUseTool(%q, %s, %q) from the real CLI, (%q, %s, %q) from arbor", re[0].ToolName, re[0].Input, re[0].ToolUseID, ae[0].ToolName, ae[0].Input, ae[0].ToolUseID)
		}
		for _, r := range []*sdkRun{rr, ar} {
			if b, err := os.ReadFile(filepath.Join(r.workspace, "ran.txt")); err != nil || strings.TrimSpace(string(b)) != "hi" {
				t.Fatalf("ran.txt = %q, %v", b, err)
			}
		}
	})
}
