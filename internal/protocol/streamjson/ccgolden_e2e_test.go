//go:build unix

package streamjson_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/llm/llmtest"
)

// recordEnv, set to 1, makes TestClaudeCodeGoldens run every flow against
// the real Claude Code CLI first and rewrite its golden transcript.
const recordEnv = "ARBOR_RECORD_CLAUDE_CODE"

const goldenDir = "testdata/claude-code-golden"

// ccFlow is one flow of TestClaudeCodeGoldens: one or more SDK runs (or
// one raw run) on scripted model servers, sharing a home so that later
// runs see the sessions of earlier ones.
type ccFlow struct {
	name string
	runs []ccRun
	// raw runs the CLI directly under the SDK's argv instead of through
	// the SDK (see rawEOF).
	raw bool
	// env changes the CLI's environment in every run ("" removes).
	env map[string]string
	// system records the system prompt the model received.
	system bool
	// lenient are the fields ("result.num_turns") compared by JSON type
	// only in this flow, with the reason arbor differs there on purpose.
	lenient map[string]string
}

type ccRun struct {
	turns []llmtest.Turn
	o     driverOptions
}

// usage is fixed so that both CLIs report the same tokens (the server's
// default estimates them from the request's size).
var ccUsage = llmtest.Usage{Input: 100, Output: 10}

func ccText(s string) llmtest.Turn { return llmtest.Turn{Text: s, Usage: ccUsage} }

func ccCall(id, name string, input map[string]any) llmtest.Turn {
	return llmtest.Turn{ToolCalls: []llmtest.ToolCall{{ID: id, Name: name, Input: input}}, Usage: ccUsage}
}

var ccFlows = []ccFlow{
	{name: "plain", runs: []ccRun{{turns: []llmtest.Turn{ccText("Hello from the script")}}}},
	{name: "bash-canusetool", runs: []ccRun{{
		turns: []llmtest.Turn{ccCall("toolu_g1", "Bash", map[string]any{"command": "echo hi > ran.txt", "description": "Write ran.txt"}), ccText("ran")},
		o:     driverOptions{Prompt: "Run it", CanUseTool: "allow"},
	}}},
	{name: "hook-deny", runs: []ccRun{{
		turns: []llmtest.Turn{ccCall("toolu_g2", "Bash", map[string]any{"command": "echo x > ran.txt", "description": "Write ran.txt"}), ccText("blocked")},
		o:     driverOptions{Prompt: "Run it", PreToolUseDeny: "Bash", Options: map[string]any{"allowedTools": []string{"Bash"}}},
	}}},
	{name: "disallowed-tools", runs: []ccRun{{
		turns: []llmtest.Turn{ccCall("toolu_g3", "Bash", map[string]any{"command": "echo x > ran.txt", "description": "Write ran.txt"}), ccText("refused")},
		o:     driverOptions{Prompt: "Run it", Options: map[string]any{"disallowedTools": []string{"Bash"}}},
	}}},
	// The SDK sends disallowedTools in initialize and starts the CLI with
	// --await-initialize.
	{name: "disallowed-tools-initialize", runs: []ccRun{{
		turns: []llmtest.Turn{ccCall("toolu_g4", "Bash", map[string]any{"command": "echo x > ran.txt", "description": "Write ran.txt"}), ccText("refused")},
		o:     driverOptions{Prompt: "Run it", Options: map[string]any{"disallowedTools": []string{"Bash"}, "disallowedToolsDelivery": "initialize"}},
	}}},
	{name: "system-prompt", system: true, runs: []ccRun{{
		turns: []llmtest.Turn{ccText("ok")},
		o:     driverOptions{Options: map[string]any{"systemPrompt": "You are the test bot."}},
	}}},
	{name: "sessions", runs: []ccRun{
		{turns: []llmtest.Turn{ccText("first")}, o: driverOptions{Prompt: "one", Options: map[string]any{"sessionId": "6f1c2a9e-3b4d-4e5f-8a7b-9c0d1e2f3a4b"}}},
		{turns: []llmtest.Turn{ccText("forked")}, o: driverOptions{Prompt: "two", Options: map[string]any{"resume": "6f1c2a9e-3b4d-4e5f-8a7b-9c0d1e2f3a4b", "forkSession": true}}},
		{turns: []llmtest.Turn{ccText("continued")}, o: driverOptions{Prompt: "three", Options: map[string]any{"continue": true}}},
		{turns: []llmtest.Turn{ccText("resumed")}, o: driverOptions{Prompt: "four", Options: map[string]any{"resume": "6f1c2a9e-3b4d-4e5f-8a7b-9c0d1e2f3a4b"}}},
	}, lenient: map[string]string{
		"result.modelUsage.claude-test.inputTokens":  "Claude Code's modelUsage adds up the conversation's earlier processes too (a resumed or forked session's); arbor's the turns of this process",
		"result.modelUsage.claude-test.outputTokens": "as inputTokens",
	}},
	{name: "plan", runs: []ccRun{{
		turns: []llmtest.Turn{ccCall("toolu_g5", "Write", map[string]any{"file_path": "ran.txt", "content": "x"}), ccText("planned")},
		o:     driverOptions{Prompt: "Write it", Options: map[string]any{"permissionMode": "plan"}},
	}}, lenient: map[string]string{
		"result.permission_denials": "Claude Code also lists the calls its mode and rules refused (here plan mode's Write, its path made absolute); arbor lists those the client or a hook refused",
	}},
	{name: "partial-messages", runs: []ccRun{{
		turns: []llmtest.Turn{ccText("Hello streamed")},
		o:     driverOptions{Options: map[string]any{"includePartialMessages": true}},
	}}},
	{name: "tool-failed", runs: []ccRun{{
		turns: []llmtest.Turn{ccCall("toolu_g6", "Read", map[string]any{"file_path": "missing.txt"}), ccText("could not read it")},
		o:     driverOptions{Prompt: "Read it"},
	}}},
	{name: "deny-interrupt", runs: []ccRun{{
		turns: []llmtest.Turn{ccCall("toolu_g7", "Bash", map[string]any{"command": "echo x > ran.txt", "description": "Write ran.txt"}), ccText("must not be asked")},
		o:     driverOptions{Prompt: "Run it", CanUseTool: "deny-interrupt"},
	}}, lenient: map[string]string{
		"result.num_turns": "Claude Code counts the denied call and the interruption as turns (3); arbor counts model calls (1)",
	}},
	{name: "missing-key", env: map[string]string{"ANTHROPIC_API_KEY": "", "ANTHROPIC_BASE_URL": ""}, runs: []ccRun{{turns: []llmtest.Turn{ccText("never asked")}}},
		lenient: map[string]string{
			"assistant.message.content": "arbor's text names the variable to set; Claude Code's says \"Not logged in · Please run /login\"",
			"result.result":             "as the assistant's text",
			"error.message":             "as the assistant's text",
		}},
	// "/compact" in a resumed session: the conversation is compacted (one
	// model request, the summary; the SDK's PreCompact and SessionStart
	// callbacks are asked, with the trigger, the instructions and the
	// source) and the turn ends with no model turn; then "/compact" in a
	// new session, which has nothing to compact.
	{name: "compact", runs: []ccRun{
		{turns: []llmtest.Turn{ccText("first")}, o: driverOptions{Prompt: "one", Options: map[string]any{"sessionId": "7a2b3c4d-5e6f-4a8b-9c0d-1e2f3a4b5c6d"}}},
		{turns: []llmtest.Turn{ccText("The user said one; the assistant answered first.")},
			o: driverOptions{Prompt: "/compact keep the numbers", RecordHooks: []string{"PreCompact", "SessionStart"},
				Options: map[string]any{"resume": "7a2b3c4d-5e6f-4a8b-9c0d-1e2f3a4b5c6d"}}},
		{o: driverOptions{Prompt: "/compact"}},
	}, lenient: map[string]string{
		"result.usage.input_tokens":                    "the summary request: Claude Code's carries its own system prompt and the tools, arbor's the conversation alone",
		"result.usage.output_tokens":                   "as input_tokens",
		"result.modelUsage.claude-test.inputTokens":    "as usage.input_tokens; Claude Code's also adds up the earlier process's turns",
		"result.modelUsage.claude-test.outputTokens":   "as inputTokens",
		"requests of run 1":                            "Claude Code sends its summary request twice here, both with the conversation (4 messages); arbor once, with the conversation rendered in one message",
		"SessionStart callbacks at startup and resume": "Claude Code 2.1.332 asks the SDK's SessionStart callbacks only after a compaction (it runs its startup hooks before initialize registers them); arbor also asks them as the session starts or resumes, as the SDK's SessionStartHookInput sources promise",
	}},
	{name: "eof-pending", raw: true, runs: []ccRun{{
		turns: []llmtest.Turn{ccCall("toolu_g8", "Bash", map[string]any{"command": "echo x > ran.txt", "description": "Write ran.txt"}), ccText("gave up")},
	}}},
}

// TestClaudeCodeGoldens runs each flow of ccFlows against arbor's built
// binary (through the real SDK, like a program built on it) and compares
// what the SDK yields with the real Claude Code CLI's transcript of the
// same flow on the same script, recorded in testdata/claude-code-golden,
// field by field where the SDK reads them (goldenRules). With
// ARBOR_RECORD_CLAUDE_CODE=1 the real CLI (pinned in testdata/claude-code)
// is run first and the golden rewritten.
func TestClaudeCodeGoldens(t *testing.T) {
	t.Parallel()
	h := setupSDK(t)
	var real *sdkHarness
	if os.Getenv(recordEnv) == "1" {
		real = &sdkHarness{bin: realClaudeCode(t), driverDir: h.driverDir}
	}
	for _, f := range ccFlows {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(goldenDir, f.name+".jsonl")
			if real != nil {
				writeGolden(t, path, f.play(t, real, realCLIEnv()))
			}
			golden := readGolden(t, path)
			got := f.play(t, h, nil)
			compareGolden(t, golden, got, f.lenient)
			if t.Failed() {
				t.Logf("arbor's transcript, normalised:\n%s", formatGolden(got))
			}
		})
	}
}

// realCLIEnv is what the real CLI needs besides the harness's
// environment: the scripted model by name, and no traffic but the model's.
func realCLIEnv() map[string]string {
	return map[string]string{"ANTHROPIC_MODEL": "claude-test", "ENABLE_TOOL_SEARCH": "false",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1", "ARBOR_MODEL": ""}
}

// play runs the flow against h's CLI and returns its normalised
// transcript.
func (f ccFlow) play(t *testing.T, h *sdkHarness, env map[string]string) []goldenLine {
	t.Helper()
	home := t.TempDir()
	n := newNormaliser(home)
	var out []goldenLine
	for i, r := range f.runs {
		srv := llmtest.NewServer(r.turns...)
		runEnv := map[string]string{}
		for k, v := range env {
			runEnv[k] = v
		}
		for k, v := range f.env {
			runEnv[k] = v
		}
		var lines []string
		if f.raw {
			lines = rawEOF(t, h.bin, home, srv, runEnv)
		} else {
			run := h.runIn(t, home, "options", srv, nil, runEnv, r.o)
			lines = strings.Split(strings.TrimSpace(run.stdout), "\n")
		}
		for _, l := range lines {
			if strings.TrimSpace(l) == "" {
				continue
			}
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("run %d printed a line that is not JSON: %s", i, l)
			}
			g := goldenLine{Run: i}
			switch {
			case f.raw:
				g.Stdout = n.value("", m).(map[string]any)
			case m["driver"] != nil:
				g.Driver = n.value("", m).(map[string]any)
			default:
				g.SDK = n.value("", m).(map[string]any)
			}
			out = append(out, g)
		}
		for _, req := range srv.Requests() {
			out = append(out, goldenLine{Run: i, Request: n.request(req, f.system)})
		}
	}
	return out
}

// goldenLine is one line of a golden transcript: a message query()
// yielded (sdk), a driver record (driver), a line the CLI wrote when run
// without the SDK (stdout), or what the model server received (request).
type goldenLine struct {
	Run     int            `json:"run"`
	SDK     map[string]any `json:"sdk,omitempty"`
	Driver  map[string]any `json:"driver,omitempty"`
	Stdout  map[string]any `json:"stdout,omitempty"`
	Request *goldenRequest `json:"request,omitempty"`
}

type goldenRequest struct {
	Messages    int                `json:"messages"`
	System      string             `json:"system,omitempty"`
	ToolResults []goldenToolResult `json:"tool_results,omitempty"`
}

type goldenToolResult struct {
	ID      string `json:"tool_use_id"`
	IsError bool   `json:"is_error"`
}

func writeGolden(t *testing.T, path string, lines []goldenLine) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(formatGolden(lines)), 0o644); err != nil {
		t.Fatal(err)
	}
}

func formatGolden(lines []goldenLine) string {
	var b bytes.Buffer
	for _, l := range lines {
		j, err := json.Marshal(l)
		if err != nil {
			panic(err)
		}
		b.Write(j)
		b.WriteByte('\n')
	}
	return b.String()
}

func readGolden(t *testing.T, path string) []goldenLine {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("golden %s: %v (record it with %s=1)", path, err, recordEnv)
	}
	var out []goldenLine
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64*1024), 16<<20)
	for sc.Scan() {
		var l goldenLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("golden %s: %v", path, err)
		}
		out = append(out, l)
	}
	return out
}

// lastToolResults are the tool results of a request's last message.
func lastToolResults(req llmtest.Request) []goldenToolResult {
	if len(req.Messages) == 0 {
		return nil
	}
	var out []goldenToolResult
	for _, p := range req.Messages[len(req.Messages)-1].Parts {
		if p.Type == llm.PartToolResult && p.ToolResult != nil {
			out = append(out, goldenToolResult{ID: p.ToolResult.CallID, IsError: p.ToolResult.IsError})
		}
	}
	return out
}

func (g goldenLine) String() string {
	b, _ := json.Marshal(g)
	return fmt.Sprint(string(b))
}
