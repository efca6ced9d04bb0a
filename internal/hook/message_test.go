package hook_test

import (
	"encoding/json"
	"slices"
	"testing"

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
