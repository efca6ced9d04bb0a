//go:build unix

package streamjson_test

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/testutil"
)

// A golden transcript is normalised so that it holds no value that
// changes from one run to the next: ids, uuids, timestamps, durations,
// costs, paths and versions are replaced by placeholders. Session ids are
// numbered in the order they first appear (<session-1>, …), so that the
// flows that resume, fork or continue a session keep which is which.
type normaliser struct {
	home     string
	sessions map[string]string
}

func newNormaliser(home string) *normaliser {
	return &normaliser{home: home, sessions: map[string]string{}}
}

var uuidRE = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// volatileNumbers are replaced by 0: they differ between any two runs.
var volatileNumbers = map[string]bool{
	"duration_ms": true, "duration_api_ms": true, "total_cost_usd": true, "costUSD": true, "pid": true,
	"resetsAt": true, "ttft_ms": true, "ttftMs": true,
}

func (n *normaliser) value(key string, v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[k] = n.value(k, x)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = n.value(key, x)
		}
		return out
	case string:
		return n.str(key, v)
	case float64:
		if volatileNumbers[key] || strings.HasSuffix(key, "_ms") || strings.HasSuffix(key, "Ms") {
			return 0.0
		}
	}
	return v
}

func (n *normaliser) str(key, s string) string {
	switch key {
	case "session_id", "sessionId":
		if s == "" {
			return s
		}
		p, ok := n.sessions[s]
		if !ok {
			p = fmt.Sprintf("<session-%d>", len(n.sessions)+1)
			n.sessions[s] = p
		}
		return p
	case "uuid":
		return "<uuid>"
	case "claude_code_version", "version":
		return "<version>"
	case "timestamp":
		return "<time>"
	case "messaging_socket_path":
		return "<socket>"
	}
	if key == "id" && strings.HasPrefix(s, "msg_") {
		return "<msg-id>"
	}
	s = strings.ReplaceAll(s, n.home, "<home>")
	// Claude Code names a project's directory after its path.
	s = strings.ReplaceAll(s, strings.ReplaceAll(n.home, "/", "-"), "<home>")
	return uuidRE.ReplaceAllString(s, "<uuid>")
}

func (n *normaliser) request(req llmtest.Request, system bool) *goldenRequest {
	g := &goldenRequest{Messages: len(req.Messages), ToolResults: lastToolResults(req)}
	if system {
		g.System = n.str("", req.System)
	}
	return g
}

// Where the SDK reads them: for each kind of message, the fields compared.
// "=path" must be equal to the golden's; "path" must have the golden's
// JSON type. A field the golden lacks is not compared; one it has that
// arbor lacks is a failure. "[]" in a path is every element of an array
// (the arrays must be as long). Messages of kinds not listed (the real
// CLI's system/status, rate_limit_event, control_response, …) and fields
// not listed (init's tools and the real CLI's extra fields such as
// fast_mode_state, plugins, skills, agents; usage's service_tier and
// server_tool_use; a tool result's text; error texts) are deliberately not
// compared: they describe Claude Code itself, not the protocol.
var (
	initRule      = []string{"=type", "=subtype", "=session_id", "=model", "=permissionMode", "=apiKeySource", "=mcp_servers", "=output_style", "=sandbox_enabled", "cwd", "tools", "slash_commands", "uuid"}
	assistantRule = []string{"=type", "=session_id", "=parent_tool_use_id", "uuid", "=message.type", "=message.role", "=message.model",
		"=message.content", "=message.stop_reason", "message.id", "message.usage", "message.usage.input_tokens", "message.usage.output_tokens"}
	userRule = []string{"=type", "=session_id", "=parent_tool_use_id", "uuid", "=message.role", "=isReplay", "=isSynthetic", "message.content", "=message.content.[].type",
		"=message.content.[].tool_use_id", "=message.content.[].is_error", "=message.content.[].text", "message.content.[].content"}
	resultRule = []string{"=type", "=subtype", "=is_error", "=result", "=num_turns", "=session_id", "=permission_denials", "=stop_reason", "=local_command",
		"=usage.input_tokens", "=usage.output_tokens", "errors", "duration_ms", "duration_api_ms", "total_cost_usd", "modelUsage",
		"=modelUsage.claude-test.inputTokens", "=modelUsage.claude-test.outputTokens", "uuid"}
	streamRule = []string{"=type", "=session_id", "=parent_tool_use_id", "uuid", "=event.type", "=event.index", "=event.delta.type",
		"=event.delta.text", "=event.delta.partial_json", "=event.delta.stop_reason", "=event.content_block.type",
		"=event.content_block.id", "=event.content_block.name", "=event.message.model", "=event.message.role"}

	// A compaction's lines (other status lines, such as Claude Code's
	// "requesting", are not compared).
	compactStatusRule = []string{"=type", "=subtype", "=status", "=compact_result", "=session_id", "uuid"}
	boundaryRule      = []string{"=type", "=subtype", "=session_id", "uuid", "=compact_metadata.trigger", "compact_metadata.pre_tokens",
		"compact_metadata.post_tokens"}

	sdkRules = map[string][]string{"system/init": initRule, "assistant": assistantRule, "user": userRule, "result": resultRule, "stream_event": streamRule,
		"system/status/compact": compactStatusRule, "system/compact_boundary": boundaryRule}
	// The driver's records: what canUseTool and the hooks were called
	// with, and how the query ended.
	driverRules = map[string][]string{
		"can_use_tool": {"=tool_name", "=input", "=tool_use_id"},
		"hook":         {"=message", "=tool_name", "=tool_use_id", "=source", "=trigger", "=custom_instructions"},
		"done":         {},
		"error":        {"message"},
	}
	stdoutRules = map[string][]string{"system/init": initRule, "assistant": assistantRule, "user": userRule, "result": resultRule,
		"control_request/can_use_tool": {"=request.subtype", "=request.tool_name", "=request.input", "=request.tool_use_id", "request_id"}}
)

// sdkKey names an SDK message's kind: its type, system/<subtype>, or
// stream_event (with the event's type, to show sequences).
func sdkKey(m map[string]any) (kind, rule string) {
	typ, _ := m["type"].(string)
	switch typ {
	case "system":
		sub, _ := m["subtype"].(string)
		if sub == "status" && (m["status"] == "compacting" || m["compact_result"] != nil) {
			return fmt.Sprintf("system/status:%v", m["status"]), "system/status/compact"
		}
		return "system/" + sub, "system/" + sub
	case "stream_event":
		ev, _ := m["event"].(map[string]any)
		et, _ := ev["type"].(string)
		return "stream_event/" + et, "stream_event"
	case "control_request":
		req, _ := m["request"].(map[string]any)
		sub, _ := req["subtype"].(string)
		return "control_request/" + sub, "control_request/" + sub
	}
	return typ, typ
}

func driverKey(m map[string]any) (kind, rule string) {
	d, _ := m["driver"].(string)
	return d, d
}

// compareGolden compares arbor's transcript with the golden run by run.
func compareGolden(t *testing.T, golden, got []goldenLine, lenient map[string]string) {
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
		raw := func(l goldenLine) map[string]any { return l.Stdout }
		// Stream events and whole messages are compared as two
		// sequences: Claude Code writes a content block's assistant
		// message when the block ends, arbor after message_stop.
		streams, messages := splitStream(pick(golden, sdk))
		gotStreams, gotMessages := splitStream(pick(got, sdk))
		compareSeq(t, fmt.Sprintf("run %d, SDK message", run), messages, gotMessages, sdkKey, sdkRules, lenient)
		compareSeq(t, fmt.Sprintf("run %d, stream event", run), streams, gotStreams, sdkKey, sdkRules, lenient)
		gotDrv := pick(got, drv)
		if _, ok := lenient["SessionStart callbacks at startup and resume"]; ok {
			gotDrv = slices.DeleteFunc(gotDrv, func(m map[string]any) bool {
				return m["driver"] == "hook" && m["message"] == "SessionStart" && (m["source"] == "startup" || m["source"] == "resume")
			})
		}
		compareSeq(t, fmt.Sprintf("run %d, driver record", run), pick(golden, drv), gotDrv, driverKey, driverRules, lenient)
		compareSeq(t, fmt.Sprintf("run %d, stdout line", run), pick(golden, raw), pick(got, raw), sdkKey, stdoutRules, lenient)

		var wantReqs, gotReqs []*goldenRequest
		for _, l := range golden {
			if l.Run == run && l.Request != nil {
				wantReqs = append(wantReqs, l.Request)
			}
		}
		for _, l := range got {
			if l.Run == run && l.Request != nil {
				gotReqs = append(gotReqs, l.Request)
			}
		}
		if why, ok := lenient[fmt.Sprintf("requests of run %d", run)]; ok && why != "" {
			continue
		}
		if len(wantReqs) != len(gotReqs) {
			t.Errorf("run %d: the model got %d requests from arbor, %d from the real CLI", run, len(gotReqs), len(wantReqs))
			continue
		}
		for i, w := range wantReqs {
			g := gotReqs[i]
			// The number of messages is not compared: Claude Code adds
			// its own context message before the first prompt.
			if fmt.Sprint(w.ToolResults) != fmt.Sprint(g.ToolResults) {
				t.Errorf("run %d, model request %d: arbor's ends in tool results %v, the real CLI's in %v", run, i, g.ToolResults, w.ToolResults)
			}
			// Claude Code puts its billing header and identity line before
			// the client's prompt; arbor sends the client's alone.
			if w.System != "" && (g.System == "" || !strings.HasSuffix(w.System, "\n"+g.System)) {
				t.Errorf("run %d, model request %d: arbor's system prompt %q, the real CLI's %q (which must end with arbor's)", run, i, g.System, w.System)
			}
		}
	}
}

// compareSeq compares the messages of the kinds rules lists: the same
// kinds in the same order, then each pair by its rule.
func compareSeq(t *testing.T, what string, want, got []map[string]any, key func(map[string]any) (string, string), rules map[string][]string, lenient map[string]string) {
	t.Helper()
	filter := func(ms []map[string]any) (kinds []string, kept []map[string]any) {
		for _, m := range ms {
			k, r := key(m)
			if _, ok := rules[r]; ok {
				kinds, kept = append(kinds, k), append(kept, m)
			}
		}
		return kinds, kept
	}
	wk, wm := filter(want)
	gk, gm := filter(got)
	if strings.Join(wk, " ") != strings.Join(gk, " ") {
		t.Errorf("%ss: arbor sent\n  %s\nthe real CLI\n  %s", what, strings.Join(gk, " "), strings.Join(wk, " "))
		return
	}
	for i := range wm {
		_, r := key(wm[i])
		for _, field := range rules[r] {
			equal := strings.HasPrefix(field, "=")
			field = strings.TrimPrefix(field, "=")
			if _, ok := lenient[r+"."+field]; ok {
				equal = false
			}
			path := strings.Split(field, ".")
			compareAt(t, fmt.Sprintf("%s %d (%s)", what, i, wk[i]), wm[i], gm[i], path, equal)
		}
	}
}

func compareAt(t *testing.T, what string, want, got any, path []string, equal bool) {
	t.Helper()
	if len(path) == 0 {
		w, _ := json.Marshal(want)
		g, _ := json.Marshal(got)
		switch {
		case testutil.JSONType(want) != testutil.JSONType(got):
			t.Errorf("%s: arbor sends a %s (%s), the real CLI a %s (%s)", what, testutil.JSONType(got), g, testutil.JSONType(want), w)
		case equal && string(w) != string(g):
			t.Errorf("%s: arbor sends %s, the real CLI %s", what, g, w)
		}
		return
	}
	if path[0] == "[]" {
		wa, ok := want.([]any)
		if !ok {
			return
		}
		ga, ok := got.([]any)
		if !ok || len(ga) != len(wa) {
			t.Errorf("%s: arbor sends %v, the real CLI %d elements", what, got, len(wa))
			return
		}
		for i := range wa {
			compareAt(t, fmt.Sprintf("%s[%d]", what, i), wa[i], ga[i], path[1:], equal)
		}
		return
	}
	wm, ok := want.(map[string]any)
	if !ok {
		return
	}
	wv, ok := wm[path[0]]
	if !ok {
		return
	}
	gm, _ := got.(map[string]any)
	gv, ok := gm[path[0]]
	if !ok {
		t.Errorf("%s: arbor has no %q (the real CLI sends %v)", what, path[0], wv)
		return
	}
	compareAt(t, what+"."+path[0], wv, gv, path[1:], equal)
}

// splitStream separates stream events from the other messages.
func splitStream(ms []map[string]any) (streams, others []map[string]any) {
	for _, m := range ms {
		if m["type"] == "stream_event" {
			streams = append(streams, m)
		} else {
			others = append(others, m)
		}
	}
	return streams, others
}
