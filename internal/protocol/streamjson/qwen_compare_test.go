//go:build unix

package streamjson_test

import (
	"fmt"
	"testing"
)

// Where the Qwen Code SDK's types read them (its index.d.ts, 0.1.14): for
// each kind of message, the fields compared with the real qwen CLI's
// ("=path" equal, "path" the same JSON type; see compareSeq). Not
// compared: the qwen CLI's goal_state stream events (its /goal feature),
// init's tools, slash commands and version (they describe qwen itself),
// tool results' text, and the model requests qwen makes besides the
// turn's (titles, next-speaker checks).
var (
	qwenInitRule = []string{"=type", "=subtype", "=session_id", "=model", "=permission_mode", "=mcp_servers", "cwd", "tools",
		"slash_commands", "qwen_code_version", "agents", "uuid"}
	qwenAssistantRule = []string{"=type", "=session_id", "=parent_tool_use_id", "uuid", "=message.type", "=message.role", "=message.model",
		"=message.content", "=message.stop_reason", "message.id", "=message.usage.input_tokens", "=message.usage.output_tokens",
		"=message.usage.total_tokens"}
	qwenUserRule = []string{"=type", "=session_id", "=parent_tool_use_id", "uuid", "=message.role", "=message.content.[].type",
		"=message.content.[].tool_use_id", "=message.content.[].is_error", "=message.content.[].text", "message.content.[].content"}
	qwenResultRule = []string{"=type", "=subtype", "=is_error", "=result", "=num_turns", "=session_id", "=permission_denials",
		"=usage.input_tokens", "=usage.output_tokens", "=usage.total_tokens", "duration_ms", "duration_api_ms", "uuid",
		"error", "error.message"}
	qwenStreamRule = []string{"=type", "=session_id", "=parent_tool_use_id", "uuid", "=event.type", "=event.index", "=event.delta.type",
		"=event.delta.text", "=event.delta.partial_json", "=event.content_block.type", "=event.content_block.id",
		"=event.content_block.name", "=event.message.model", "=event.message.role"}

	qwenSDKRules = map[string][]string{"system/init": qwenInitRule, "assistant": qwenAssistantRule, "user": qwenUserRule,
		"result": qwenResultRule, "stream_event": qwenStreamRule}
	// The driver's records: the session id q.getSessionId() returned,
	// what canUseTool was called with, and each control method's answer
	// as the SDK returned it to the program.
	qwenDriverRules = map[string][]string{
		"session":                      {"=session_id"},
		"can_use_tool":                 {"=tool_name", "=input"},
		"interrupted":                  {},
		"done":                         {},
		"error":                        {"message"},
		"control/supported_commands":   {"=reply.subtype", "reply.commands"},
		"control/mcp_server_status":    {"=reply.subtype", "=reply.status"},
		"control/get_context_usage":    {"=reply.subtype", "=reply.modelName", "reply.totalTokens", "reply.contextWindowSize", "reply.isEstimated", "reply.showDetails", "reply.breakdown", "reply.builtinTools", "reply.mcpTools", "reply.memoryFiles", "reply.skills"},
		"control/set_effort":           {"reply.applied", "reply.override"},
		"control/get_available_models": {"=reply.subtype", "reply.models"},
		"control/get_usage_info":       {"=reply.subtype", "=reply.range", "reply.generatedAt", "reply.summary", "reply.summary.inputTokens", "reply.summary.outputTokens", "reply.summary.totalTokens", "reply.daily", "reply.models", "reply.heatmap", "reply.skills"},
		"control/set_permission_mode":  {"=reply"},
		"control/set_model":            {"=reply"},
		"control/continue_last_turn":   {"=reply.subtype", "=reply.accepted", "=reply.interruption"},
	}
)

// qwenKey names an SDK message's kind as sdkKey does; qwen's goal_state
// events get no rule.
func qwenKey(m map[string]any) (kind, rule string) {
	kind, rule = sdkKey(m)
	if kind == "stream_event/goal_state" {
		return kind, ""
	}
	return kind, rule
}

func qwenDriverKey(m map[string]any) (kind, rule string) {
	d, _ := m["driver"].(string)
	if d == "control" {
		method, _ := m["method"].(string)
		return d + "/" + method, d + "/" + method
	}
	return d, d
}

// compareQwenGolden compares arbor's transcript with the real qwen CLI's
// run by run: the SDK's messages, its stream events, the driver's
// records, and the tool results the model was sent.
func compareQwenGolden(t *testing.T, golden, got []goldenLine, lenient map[string]string) {
	t.Helper()
	runs := 0
	for _, l := range golden {
		runs = max(runs, l.Run+1)
	}
	for run := range runs {
		pick := func(ls []goldenLine, f func(goldenLine) map[string]any) []map[string]any {
			var out []map[string]any
			for _, l := range ls {
				if m := f(l); l.Run == run && m != nil {
					out = append(out, m)
				}
			}
			return out
		}
		sdk := func(l goldenLine) map[string]any { return l.SDK }
		drv := func(l goldenLine) map[string]any { return l.Driver }
		streams, messages := splitStream(pick(golden, sdk))
		gotStreams, gotMessages := splitStream(pick(got, sdk))
		compareSeq(t, fmt.Sprintf("run %d, SDK message", run), messages, gotMessages, qwenKey, qwenSDKRules, lenient)
		compareSeq(t, fmt.Sprintf("run %d, stream event", run), streams, gotStreams, qwenKey, qwenSDKRules, lenient)
		compareSeq(t, fmt.Sprintf("run %d, driver record", run), pick(golden, drv), pick(got, drv), qwenDriverKey, qwenDriverRules, lenient)

		results := func(ls []goldenLine) []string {
			var out []string
			for _, l := range ls {
				if l.Run == run && l.Request != nil && len(l.Request.ToolResults) > 0 {
					out = append(out, fmt.Sprint(l.Request.ToolResults))
				}
			}
			return out
		}
		if w, g := results(golden), results(got); fmt.Sprint(w) != fmt.Sprint(g) {
			t.Errorf("run %d: the model was sent tool results %v by arbor, %v by the real CLI", run, g, w)
		}
	}
}
