package hook_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/hook"
	"github.com/arbor-run/arbor/internal/tool"
)

// TestSystemMessageToThePerson runs real command hooks that answer
// {"systemMessage": …} around a call and checks the call's result carries
// their words for the person as Claude Code shows them ("PreToolUse:Bash
// says: …", the tool by Claude Code's name), the PreToolUse ones before
// the call and the PostToolUse ones after it, and that the model's
// content holds none of them.
func TestSystemMessageToThePerson(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	say := script(t, dir, "say.sh", "cat >/dev/null; echo \"{\\\"systemMessage\\\": \\\"$1 checked\\\"}\"\n")
	quiet := script(t, dir, "quiet.sh", "cat >/dev/null; echo '{}'\n")
	cmd := func(c string) hook.Handler { return &hook.Command{Command: c, Dir: dir, ClaudeCode: true} }
	var r hook.Runner
	r.Set(map[hook.Event][]hook.Matcher{
		hook.PreToolUse:  {matcher(t, "Bash", cmd(say+" pre"), cmd(quiet))},
		hook.PostToolUse: {matcher(t, "", cmd(say+" post"))},
	})
	res := (&hook.Tool{Tool: echo(), Hooks: &r}).Run(t.Context(), tool.Call{ID: "c1", Input: json.RawMessage(`{"command":"ls"}`)})
	want := []tool.Notice{{Text: "PreToolUse:Bash says: pre checked"}, {Text: "PostToolUse:Bash says: post checked", After: true}}
	if res.IsError || res.Content != "ran ls" || !slices.Equal(res.Notices, want) {
		t.Fatalf("result %+v; want the output alone and the notices %+v", res, want)
	}

	v, err := r.Run(t.Context(), hook.Stop, "", hook.Input{})
	if err != nil || len(v.Messages) != 0 {
		t.Fatalf("Stop with no hooks: %+v, %v", v, err)
	}
	r.Set(map[hook.Event][]hook.Matcher{hook.Stop: {matcher(t, "", cmd(say+" stop"), cmd(quiet))}})
	v, err = hook.Chain{&r, &r}.Run(t.Context(), hook.Stop, "", hook.Input{})
	if want := []string{"Stop says: stop checked", "Stop says: stop checked"}; err != nil || !slices.Equal(v.Messages, want) {
		t.Fatalf("Stop's verdict %+v, %v; want the messages %q", v, err, want)
	}
}

// TestWatch: a Run whose context carries a Watch tells it of each
// SessionStart command hook it calls, before and after, with what the command printed
// and how it ended (stream-json's hook_started and hook_response lines);
// other handlers (an SDK callback) are not told of.
func TestWatch(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cmd := func(c string) hook.Handler { return &hook.Command{Command: c, Dir: dir} }
	var r hook.Runner
	r.Set(map[hook.Event][]hook.Matcher{hook.SessionStart: {matcher(t, "startup",
		cmd(`cat >/dev/null; echo '{"systemMessage": "hi"}'`), &recorder{},
		cmd("cat >/dev/null; echo FAIL-OUT; echo FAIL-ERR >&2; exit 1"),
		cmd("cat >/dev/null; echo BLOCK-ERR >&2; exit 2"),
		&hook.Command{Command: "exec sleep 30", Dir: dir, Timeout: 100 * time.Millisecond})}})
	var seen []string
	ctx := hook.WithWatch(t.Context(), func(e hook.Event, target string) func(hook.Ran) {
		seen = append(seen, "started "+string(e)+":"+target)
		return func(r hook.Ran) {
			code := "none"
			if r.Exited {
				code = strconv.Itoa(r.ExitCode)
			}
			seen = append(seen, fmt.Sprintf("%s %s %q %q", r.Outcome, code, r.Stdout, r.Stderr))
		}
	})
	v, err := r.Run(ctx, hook.SessionStart, "startup", hook.Input{})
	if err != nil || len(v.Messages) != 1 {
		t.Fatalf("verdict %+v, %v", v, err)
	}
	want := []string{
		"started SessionStart:startup", `success 0 "{\"systemMessage\": \"hi\"}\n" ""`,
		"started SessionStart:startup", `error 1 "FAIL-OUT\n" "FAIL-ERR\n"`,
		"started SessionStart:startup", `error 2 "" "BLOCK-ERR\n"`,
		"started SessionStart:startup", `cancelled none "" ""`,
	}
	if !slices.Equal(seen, want) {
		t.Fatalf("the watch saw\n%q\nwant\n%q", seen, want)
	}
	// A tool's hooks are not watched (Claude Code reports none).
	r.Set(map[hook.Event][]hook.Matcher{hook.PreToolUse: {matcher(t, "", cmd("cat >/dev/null"))}})
	if _, err := r.Run(ctx, hook.PreToolUse, "shell", hook.Input{}); err != nil || len(seen) != len(want) {
		t.Fatalf("a PreToolUse hook was watched (%v): %q", err, seen[len(want):])
	}
}

// TestRunnerRedacts: a runner with Secrets redacts them from every text its
// hooks give back, the reasons, context, messages and notes of the
// verdict and what a Watch reads, before anyone else reads them.
func TestRunnerRedacts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cmd := func(c string) hook.Handler { return &hook.Command{Command: c, Dir: dir} }
	r := hook.Runner{Secrets: func() []string { return []string{"SECRET"} }}
	r.Set(map[hook.Event][]hook.Matcher{hook.UserPromptSubmit: {matcher(t, "",
		cmd(`cat >/dev/null; echo '{"systemMessage": "saw SECRET", "reason": "SECRET reason", "hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "ctx SECRET"}}'`),
		cmd("cat >/dev/null; echo 'broken SECRET' >&2; exit 1"),
		cmd("cat >/dev/null; echo 'SECRET is refused' >&2; exit 2"))}})
	var ran []string
	ctx := hook.WithWatch(t.Context(), func(hook.Event, string) func(hook.Ran) {
		return func(r hook.Ran) { ran = append(ran, r.Stdout+r.Stderr) }
	})
	v, err := r.Run(ctx, hook.UserPromptSubmit, "", hook.Input{})
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprintf("%q %q %q %q %q", v.Reason, v.Context, v.Messages, v.Notes, ran)
	if strings.Contains(got, "SECRET") || !strings.Contains(v.Reason, "[REDACTED] is refused") || !strings.Contains(v.Context, "ctx [REDACTED]") ||
		len(v.Messages) != 1 || !strings.Contains(v.Messages[0], "saw [REDACTED]") || len(v.Notes) != 1 || !strings.Contains(v.Notes[0], "broken [REDACTED]") {
		t.Fatalf("verdict and watched output: %s", got)
	}
}

// TestBlockedByAndWatchedPreCompact: a verdict names the command hook that
// blocked first, through a chain too, and a Watch is told of PreCompact
// command hooks with their command line (Claude Code's /compact output).
func TestBlockedByAndWatchedPreCompact(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cmd := func(c string) hook.Handler { return &hook.Command{Command: c, Dir: dir} }
	r := &hook.Runner{}
	r.Set(map[hook.Event][]hook.Matcher{hook.PreCompact: {matcher(t, "",
		cmd("cat >/dev/null; echo fine"),
		cmd("cat >/dev/null; echo first >&2; exit 2"),
		cmd("cat >/dev/null; echo second >&2; exit 2"))}})
	var ran []string
	ctx := hook.WithWatch(t.Context(), func(e hook.Event, _ string) func(hook.Ran) {
		return func(r hook.Ran) { ran = append(ran, fmt.Sprintf("%s %s %s", e, r.Command, r.Outcome)) }
	})
	for _, run := range []func() (hook.Verdict, error){
		func() (hook.Verdict, error) { return r.Run(ctx, hook.PreCompact, "manual", hook.Input{}) },
		func() (hook.Verdict, error) {
			return hook.Chain{nil, r}.Run(ctx, hook.PreCompact, "manual", hook.Input{})
		},
	} {
		ran = nil
		v, err := run()
		if err != nil {
			t.Fatal(err)
		}
		if want := "cat >/dev/null; echo first >&2; exit 2"; !v.Block || v.BlockedBy != want {
			t.Fatalf("verdict blocked %v by %q; want by %q", v.Block, v.BlockedBy, want)
		}
		want := []string{"PreCompact cat >/dev/null; echo fine success", "PreCompact cat >/dev/null; echo first >&2; exit 2 error",
			"PreCompact cat >/dev/null; echo second >&2; exit 2 error"}
		if !slices.Equal(ran, want) {
			t.Fatalf("watched %q; want %q", ran, want)
		}
	}
}
