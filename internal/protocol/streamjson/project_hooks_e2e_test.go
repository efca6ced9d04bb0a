//go:build unix

package streamjson_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// hookFlows are the project-files flows of what hooks show the person
// (TestProjectFilesLikeClaudeCode runs them with projectFlows).
var hookFlows = []projectFlow{
	// A hook's systemMessage is shown to the person: a system/
	// informational line "<Event> says: …" ("<Event>:<Tool> says: …"
	// for a tool's hooks).
	{name: "hook-system-message", mode: "bypassPermissions", command: "echo hi",
		files: map[string]string{
			".claude/hooks/say.sh":  "#!/bin/sh\ncat >/dev/null\necho \"{\\\"systemMessage\\\": \\\"SYSMSG-$1\\\"}\"\n",
			".claude/settings.json": sayHooks("UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "SessionStart"),
		},
		check: func(t *testing.T, o projectOutcome) {
			want := []string{"UserPromptSubmit says: SYSMSG-UserPromptSubmit", "PreToolUse:Bash says: SYSMSG-PreToolUse",
				"PostToolUse:Bash says: SYSMSG-PostToolUse", "Stop says: SYSMSG-Stop"}
			if got := informational(o.Stdout); !slices.Equal(got, want) {
				t.Errorf("system/informational lines (level notice) %q, want %q", got, want)
			}
		}},
	// SessionStart hooks: a system/hook_started line and a
	// system/hook_response line each, with their output and outcome.
	{name: "hook-response",
		files: map[string]string{
			".claude/hooks/say.sh": "#!/bin/sh\ncat >/dev/null\necho \"{\\\"systemMessage\\\": \\\"SYSMSG-$1\\\"}\"\n",
			".claude/settings.json": `{"hooks": {"SessionStart": [{"hooks": [
			  {"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/say.sh SessionStart"},
			  {"type": "command", "command": "cat >/dev/null; echo FAIL-OUT; echo FAIL-ERR >&2; exit 1"},
			  {"type": "command", "command": "cat >/dev/null; echo BLOCK-ERR >&2; exit 2"},
			  {"type": "command", "command": "cat >/dev/null; echo '{\"suppressOutput\": true}'"},
			  {"type": "command", "command": "cat >/dev/null; echo PLAIN-CONTEXT"}]}]}}`,
		},
		check: func(t *testing.T, o projectOutcome) {
			want := []string{
				`"BLOCK-ERR\n" "" "BLOCK-ERR\n" 2 error`,
				`"FAIL-OUT\nFAIL-ERR\n" "FAIL-OUT\n" "FAIL-ERR\n" 1 error`,
				`"PLAIN-CONTEXT\n" "PLAIN-CONTEXT\n" "" 0 success`,
				`"{\"suppressOutput\": true}\n" "{\"suppressOutput\": true}\n" "" 0 success`,
				`"{\"systemMessage\": \"SYSMSG-SessionStart\"}\n" "{\"systemMessage\": \"SYSMSG-SessionStart\"}\n" "" 0 success`,
			}
			if got := hookResponses(t, o.Stdout); !slices.Equal(got, want) {
				t.Errorf("hook_response lines\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		}},
	// After "/compact" the SessionStart hooks run with source compact:
	// their hook_started and hook_response lines come during the
	// compaction, and what they say after its status and before its
	// compact_boundary line.
	{name: "hook-compact", then: "/compact",
		files: map[string]string{
			".claude/hooks/say.sh":  "#!/bin/sh\ncat >/dev/null\necho \"{\\\"systemMessage\\\": \\\"SYSMSG-$1\\\"}\"\n",
			".claude/settings.json": sayHooks("SessionStart"),
		},
		check: func(t *testing.T, o projectOutcome) {
			var seq []string
			for _, l := range o.Stdout {
				var m struct {
					Type, Subtype, Content string
					Status                 *string
					CompactResult          string `json:"compact_result"`
					HookName               string `json:"hook_name"`
				}
				if json.Unmarshal([]byte(l), &m) != nil || m.Type != "system" {
					continue
				}
				switch {
				case m.Subtype == "status" && m.Status != nil:
					seq = append(seq, "status "+*m.Status)
				case m.Subtype == "status" && m.CompactResult != "":
					seq = append(seq, "status "+m.CompactResult)
				case m.Subtype == "hook_response":
					seq = append(seq, "hook_response "+m.HookName)
				case m.Subtype == "informational":
					seq = append(seq, "informational "+m.Content)
				case m.Subtype == "compact_boundary":
					seq = append(seq, "compact_boundary")
				}
			}
			want := []string{"hook_response SessionStart:startup", "status compacting", "hook_response SessionStart:compact", "status success",
				"informational SessionStart:compact says: SYSMSG-SessionStart", "compact_boundary"}
			if !slices.Equal(seq, want) {
				t.Errorf("the compaction's system lines\n%s\nwant\n%s", strings.Join(seq, "\n"), strings.Join(want, "\n"))
			}
		}},
	// /compact with PreCompact hooks: what each command hook did is the
	// command's output, after "Compacted " (a line each: its stdout when
	// it succeeded, its stderr when it failed), and what one says for the
	// person is no system/informational line.
	{name: "hook-precompact", then: "/compact",
		files: map[string]string{
			".claude/hooks/say.sh": "#!/bin/sh\ncat >/dev/null\necho \"{\\\"systemMessage\\\": \\\"SYSMSG-$1\\\"}\"\n",
			".claude/settings.json": `{"hooks": {"PreCompact": [{"hooks": [
			  {"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/say.sh PreCompact"},
			  {"type": "command", "command": "cat >/dev/null; echo PLAIN-OUT"},
			  {"type": "command", "command": "cat >/dev/null; echo FAIL-OUT; echo FAIL-ERR >&2; exit 1"},
			  {"type": "command", "command": "cat >/dev/null"}]}]}}`,
		},
		check: func(t *testing.T, o projectOutcome) {
			want := []string{"status compacting", "status success", "compact_boundary", "replay <local-command-stdout>Compacted " +
				`PreCompact ["$CLAUDE_PROJECT_DIR"/.claude/hooks/say.sh PreCompact] completed successfully: {"systemMessage": "SYSMSG-PreCompact"}` + "\n" +
				"PreCompact [cat >/dev/null; echo PLAIN-OUT] completed successfully: PLAIN-OUT\n" +
				"PreCompact [cat >/dev/null; echo FAIL-OUT; echo FAIL-ERR >&2; exit 1] failed: FAIL-ERR\n" +
				"PreCompact [cat >/dev/null] completed successfully</local-command-stdout>",
				"result success false  compact"}
			if got := compactionLines(t, o.Stdout); !slices.Equal(got, want) {
				t.Errorf("the compaction's lines\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		}},
	// A PreCompact hook that blocks (exit 2) refuses the compaction: its
	// status says it was skipped and why, the command's output says it,
	// and the turn succeeds; the conversation is not compacted.
	{name: "hook-precompact-block", then: "/compact",
		files: map[string]string{
			".claude/hooks/say.sh": "#!/bin/sh\ncat >/dev/null\necho \"{\\\"systemMessage\\\": \\\"SYSMSG-$1\\\"}\"\n",
			".claude/settings.json": `{"hooks": {"PreCompact": [{"hooks": [
			  {"type": "command", "command": "\"$CLAUDE_PROJECT_DIR\"/.claude/hooks/say.sh PreCompact"},
			  {"type": "command", "command": "cat >/dev/null; echo BLOCK-OUT; echo BLOCK-ERR >&2; exit 2"}]}]}}`,
		},
		check: func(t *testing.T, o projectOutcome) {
			const why = "Compaction blocked by PreCompact hook: [cat >/dev/null; echo BLOCK-OUT; echo BLOCK-ERR >&2; exit 2]: BLOCK-ERR"
			want := []string{"status compacting", "status failed skipped: " + why,
				"local command <local-command-stderr>" + why + "</local-command-stderr> failed: " + why,
				"result success false " + why + " compact"}
			if got := compactionLines(t, o.Stdout); !slices.Equal(got, want) {
				t.Errorf("the compaction's lines\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		}},
	// "/rename <name>" names the session: a session_title_changed line,
	// the turn's init, the answer as a local command's, and a result with
	// it; no model turn.
	{name: "rename", then: "/rename login page", files: map[string]string{},
		check: func(t *testing.T, o projectOutcome) {
			want := []string{"session_title_changed login page", "init",
				"local command <local-command-stdout>Session renamed to: login page</local-command-stdout> rename login page : Session renamed to: login page",
				"result success false Session renamed to: login page rename"}
			if got := localCommandLines(t, o.Stdout); !slices.Equal(got, want) {
				t.Errorf("/rename's lines\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		}},
	// "/rename" alone: Claude Code asks its model for a name (here it
	// finds none); arbor answers with the usage. Both in the same lines.
	{name: "rename-without-name", then: "/rename", files: map[string]string{},
		check: func(t *testing.T, o projectOutcome) {
			got := localCommandLines(t, o.Stdout)
			if len(got) != 3 || got[0] != "init" || !strings.HasPrefix(got[1], "local command <local-command-stdout>") ||
				!strings.Contains(got[1], "Usage: /rename <name></local-command-stdout> rename  : ") ||
				!strings.HasPrefix(got[2], "result success false ") || !strings.HasSuffix(got[2], "Usage: /rename <name> rename") {
				t.Errorf("/rename's lines\n%s\nwant an init, the usage as the command's answer, and a result with it", strings.Join(got, "\n"))
			}
		}},
}

// localCommandLines are the lines a local command (the second prompt)
// writes after the first prompt's result: session_title_changed, init,
// a local command's answer (its source, command, arguments, outcome and
// text) and the result (subtype, is_error, result, local_command).
func localCommandLines(t *testing.T, stdout []string) []string {
	t.Helper()
	var out []string
	results := 0
	for _, l := range stdout {
		var m struct {
			Type, Subtype, Title, Result string
			IsError                      bool                           `json:"is_error"`
			LocalCommand                 string                         `json:"local_command"`
			Source                       string                         `json:"local_command_source"`
			Run                          struct{ Command, Args string } `json:"local_command_run"`
			Outcome                      *struct{ Kind string }         `json:"local_command_outcome"`
			Message                      struct{ Content json.RawMessage }
		}
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		if results == 0 {
			if m.Type == "result" {
				results++
			}
			continue
		}
		switch {
		case m.Subtype == "session_title_changed":
			out = append(out, "session_title_changed "+m.Title)
		case m.Subtype == "init":
			out = append(out, "init")
		case m.Type == "assistant":
			var blocks []struct{ Text string }
			json.Unmarshal(m.Message.Content, &blocks)
			text, outcome := "", ""
			if len(blocks) > 0 {
				text = blocks[0].Text
			}
			if m.Outcome != nil {
				outcome = m.Outcome.Kind
			}
			out = append(out, fmt.Sprintf("local command %s %s %s %s: %s", m.Source, m.Run.Command, m.Run.Args, outcome, text))
		case m.Type == "result":
			out = append(out, fmt.Sprintf("result %s %v %s %s", m.Subtype, m.IsError, m.Result, m.LocalCommand))
		}
	}
	return out
}

// compactionLines are the lines a /compact writes, from its status on, as
// one string each: its statuses, compact_boundary, what hooks said, the
// command's output (a replay line, or a local command's answer) and the
// result's subtype, is_error, result and local_command.
func compactionLines(t *testing.T, stdout []string) []string {
	t.Helper()
	var out []string
	for _, l := range stdout {
		var m struct {
			Type, Subtype, Content, Result string
			Status                         *string
			CompactResult                  string                `json:"compact_result"`
			CompactError                   string                `json:"compact_error"`
			IsReplay                       bool                  `json:"isReplay"`
			IsError                        bool                  `json:"is_error"`
			LocalCommand                   string                `json:"local_command"`
			Source                         string                `json:"local_command_source"`
			Outcome                        struct{ Kind string } `json:"local_command_outcome"`
			Message                        struct {
				Content json.RawMessage
			}
		}
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		switch {
		case m.Subtype == "status" && m.Status != nil:
			out = append(out, "status "+*m.Status)
		case m.Subtype == "status":
			out = append(out, strings.TrimSpace("status "+m.CompactResult+" "+m.CompactError))
		case len(out) == 0:
			continue // before the compaction
		case m.Subtype == "compact_boundary":
			out = append(out, "compact_boundary")
		case m.Subtype == "informational":
			out = append(out, "informational "+m.Content)
		case m.Type == "user" && m.IsReplay:
			var text string
			json.Unmarshal(m.Message.Content, &text)
			out = append(out, "replay "+text)
		case m.Type == "assistant" && m.Source != "":
			var blocks []struct{ Text string }
			json.Unmarshal(m.Message.Content, &blocks)
			text := ""
			if len(blocks) > 0 {
				text = blocks[0].Text
			}
			out = append(out, fmt.Sprintf("local command %s %s: %s", m.Source, m.Outcome.Kind, text))
		case m.Type == "result":
			out = append(out, fmt.Sprintf("result %s %v %s %s", m.Subtype, m.IsError, m.Result, m.LocalCommand))
		}
	}
	return out
}

// sayHooks is a settings file whose hooks for events run say.sh with
// the event's name (PreToolUse and PostToolUse for Bash).
func sayHooks(events ...string) string {
	hooks := map[string]any{}
	for _, e := range events {
		m := map[string]any{"hooks": []any{map[string]any{"type": "command", "command": `"$CLAUDE_PROJECT_DIR"/.claude/hooks/say.sh ` + e}}}
		if strings.HasSuffix(e, "ToolUse") {
			m["matcher"] = "Bash"
		}
		hooks[e] = []any{m}
	}
	b, _ := json.Marshal(map[string]any{"hooks": hooks})
	return string(b)
}

// informational is the contents of the stdout's system/informational
// lines of level notice.
func informational(stdout []string) []string {
	var out []string
	for _, l := range stdout {
		var m struct{ Type, Subtype, Content, Level string }
		if json.Unmarshal([]byte(l), &m) == nil && m.Type == "system" && m.Subtype == "informational" && m.Level == "notice" {
			out = append(out, m.Content)
		}
	}
	return out
}

// hookResponses checks the stdout's hook_started and hook_response
// lines (each response after its hook's start, all before init, of the
// session and of SessionStart:startup) and returns the responses as
// "output stdout stderr exit_code outcome" (the texts quoted), sorted.
func hookResponses(t *testing.T, stdout []string) []string {
	t.Helper()
	started := map[string]bool{}
	var out []string
	session := initLine(t, stdout)["session_id"]
	for _, l := range stdout {
		var m struct {
			Type, Subtype, UUID                      string
			HookID                                   string `json:"hook_id"`
			HookName                                 string `json:"hook_name"`
			HookEvent                                string `json:"hook_event"`
			Output, Stdout, Stderr, Outcome, Session string
			SessionID                                string `json:"session_id"`
			ExitCode                                 *int   `json:"exit_code"`
		}
		if json.Unmarshal([]byte(l), &m) != nil || m.Type != "system" {
			continue
		}
		if m.Subtype == "init" {
			break
		}
		if m.Subtype != "hook_started" && m.Subtype != "hook_response" {
			continue
		}
		if m.HookName != "SessionStart:startup" || m.HookEvent != "SessionStart" || m.HookID == "" || m.UUID == "" || m.SessionID != session {
			t.Errorf("line %s: want SessionStart:startup's, with a hook_id, a uuid and the session's id", l)
		}
		if m.Subtype == "hook_started" {
			started[m.HookID] = true
			continue
		}
		if !started[m.HookID] || m.ExitCode == nil {
			t.Errorf("line %s: no hook_started before it, or no exit_code", l)
			continue
		}
		out = append(out, fmt.Sprintf("%q %q %q %d %s", m.Output, m.Stdout, m.Stderr, *m.ExitCode, m.Outcome))
	}
	slices.Sort(out)
	return out
}
