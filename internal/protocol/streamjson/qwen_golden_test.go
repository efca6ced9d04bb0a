//go:build unix

package streamjson_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
)

// recordQwenEnv, set to 1, makes TestQwenGoldens run every flow against
// the real qwen CLI (testdata/qwen-code) first and rewrite its reference
// transcript in testdata/qwen-golden.
const recordQwenEnv = "ARBOR_RECORD_QWEN"

const qwenGoldenDir = "testdata/qwen-golden"

const qwenSessionID = "6f1c2a9e-3b4d-4e5f-8a7b-9c0d1e2f3a4b"

// qwenFlow is one flow of TestQwenGoldens: runs of the Qwen Code SDK
// sharing a home, so that later runs see the sessions of earlier ones.
type qwenFlow struct {
	name string
	runs []qwenFlowRun
	// lenient are the fields compared by JSON type only, with the reason
	// arbor differs there on purpose.
	lenient map[string]string
}

type qwenFlowRun struct {
	turns []llmtest.Turn
	o     qwenOptions
}

var qwenFlows = []qwenFlow{
	{name: "plain", runs: []qwenFlowRun{{turns: []llmtest.Turn{ccText("Hello from the script")}}}, lenient: qwenDefaultMode},
	{name: "shell-canusetool", runs: []qwenFlowRun{{
		turns: []llmtest.Turn{ccCall("call_q1", "run_shell_command", map[string]any{"command": "echo hi > ran.txt", "description": "Write ran.txt", "is_background": false}), ccText("ran")},
		o:     qwenOptions{Prompt: "Run it", CanUseTool: "allow", Options: map[string]any{"permissionMode": "default"}},
	}}},
	{name: "auto-mode", runs: []qwenFlowRun{{
		turns: []llmtest.Turn{ccCall("call_q2", "write_file", map[string]any{"file_path": "made.txt", "content": "x"}), ccText("written")},
		o:     qwenOptions{Prompt: "Write it", CanUseTool: "allow", Options: map[string]any{"permissionMode": "auto"}},
	}}, lenient: map[string]string{
		"user.message.content.[].is_error": "qwen refuses a relative file_path; arbor resolves it against the workspace and writes the file",
	}},
	{name: "partial-messages", runs: []qwenFlowRun{{
		turns: []llmtest.Turn{ccText("Hello streamed")},
		o:     qwenOptions{Options: map[string]any{"includePartialMessages": true}},
	}}, lenient: qwenDefaultMode},
	{name: "tool-failed", runs: []qwenFlowRun{{
		turns: []llmtest.Turn{ccCall("call_q3", "read_file", map[string]any{"file_path": "missing.txt"}), ccText("could not read it")},
		o:     qwenOptions{Prompt: "Read it"},
	}}, lenient: qwenDefaultMode},
	{name: "controls", runs: []qwenFlowRun{{
		turns: []llmtest.Turn{ccText("ready")},
		o: qwenOptions{Model: qwenModel, Controls: []string{"supported_commands", "mcp_server_status", "get_context_usage", "set_effort",
			"get_available_models", "get_usage_info", "set_permission_mode", "set_model", "continue_last_turn"}},
	}}, lenient: map[string]string{
		"system/init.permission_mode": qwenDefaultMode["system/init.permission_mode"],
	}},
	{name: "resume", runs: []qwenFlowRun{
		{turns: []llmtest.Turn{ccText("first")}, o: qwenOptions{Prompt: "one", Options: map[string]any{"sessionId": qwenSessionID}}},
		{turns: []llmtest.Turn{ccText("resumed")}, o: qwenOptions{Prompt: "two", Options: map[string]any{"resume": qwenSessionID}}},
	}, lenient: map[string]string{
		"system/init.permission_mode": qwenDefaultMode["system/init.permission_mode"],
		"result.usage.input_tokens":   "qwen's result adds up the session's earlier processes too (the resumed run's); arbor's the turn's",
		"result.usage.output_tokens":  "as input_tokens",
		"result.usage.total_tokens":   "as input_tokens",
	}},
}

// qwenDefaultMode: where the client sets no mode, the qwen CLI runs its
// own default, auto; arbor runs the mode its config says (default).
var qwenDefaultMode = map[string]string{
	"system/init.permission_mode": "qwen's own default mode is auto; arbor keeps its configured mode when the client sets none",
}

// TestQwenGoldens runs each flow through the real Qwen Code SDK against
// arbor's built binary and compares what the SDK yields (and what its
// control methods answered) with the real qwen CLI's transcript of the
// same flow on the same script, field by field where the SDK's types
// read them (qwenRules; ids, times and paths masked). With
// ARBOR_RECORD_QWEN=1 the real CLI is run first and the golden rewritten.
func TestQwenGoldens(t *testing.T) {
	t.Parallel()
	h := setupQwen(t)
	var real *qwenHarness
	if os.Getenv(recordQwenEnv) == "1" {
		real = realQwen(t, h)
	}
	for _, f := range qwenFlows {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(qwenGoldenDir, f.name+".jsonl")
			if real != nil {
				writeGolden(t, path, f.play(t, real))
			}
			golden := readGolden(t, path)
			got := f.play(t, h)
			compareQwenGolden(t, golden, got, f.lenient)
			if t.Failed() {
				t.Logf("arbor's transcript, normalised:\n%s", formatGolden(got))
			}
		})
	}
}

// play runs the flow against h's CLI and returns its normalised
// transcript.
func (f qwenFlow) play(t *testing.T, h *qwenHarness) []goldenLine {
	t.Helper()
	home := t.TempDir()
	n := newNormaliser(home)
	var out []goldenLine
	for i, r := range f.runs {
		srv := llmtest.NewServer(r.turns...)
		run := h.run(t, home, srv, r.o, nil)
		for _, m := range run.lines {
			g := goldenLine{Run: i}
			if m["driver"] != nil {
				g.Driver = n.value("", m).(map[string]any)
			} else {
				g.SDK = n.value("", m).(map[string]any)
			}
			out = append(out, g)
		}
		for _, req := range srv.Requests() {
			out = append(out, goldenLine{Run: i, Request: n.request(req, false)})
		}
	}
	return out
}
