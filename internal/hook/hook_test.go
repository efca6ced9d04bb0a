package hook_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/hook"
	"github.com/arbor-run/arbor/internal/tool"
)

// recorder is a handler that records its inputs and answers out.
type recorder struct {
	out  hook.Output
	err  error
	seen []hook.Input
}

func (r *recorder) Call(_ context.Context, in hook.Input) (hook.Output, error) {
	r.seen = append(r.seen, in)
	return r.out, r.err
}

func matcher(t *testing.T, pattern string, hs ...hook.Handler) hook.Matcher {
	t.Helper()
	m, err := hook.NewMatcher(pattern, hs...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestMatcher(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		pattern, target string
		want            bool
	}{
		{"", "shell", true},
		{"*", "shell", true},
		{"Bash", "shell", true},       // Claude Code's name of arbor's tool
		{"shell", "shell", true},      // arbor's own
		{"Bash|Write", "edit", false}, // whole-name match only
		{"Ba", "shell", false},
		{"startup", "startup", true},
		{"resume", "", true}, // no target: every matcher
		// Claude Code's rules: names only are exact names, '|' or ','
		// between them; anything else is a regex matched anywhere.
		{"Read, Bash", "shell", true},
		{"mcp__github", "mcp__github__create_issue", false},
		{"mcp__.*__create", "mcp__github__create_issue", true},
		{"Notebook.*", "NotebookEdit", true},
		{"(Edit|Write)", "todo_write", true}, // TodoWrite holds Write
		{"^Bash$", "shell", true},
		{"^Edit$", "todo_write", false},
	} {
		if got := matcher(t, c.pattern).Matches(c.target); got != c.want {
			t.Errorf("NewMatcher(%q).Matches(%q) = %v, want %v", c.pattern, c.target, got, c.want)
		}
	}
	if _, err := hook.NewMatcher("(", nil); err == nil {
		t.Error("NewMatcher(\"(\") took a bad expression")
	}
}

func TestRunnerSumsVerdicts(t *testing.T) {
	t.Parallel()
	var first, second, other recorder
	first.out.HookSpecificOutput.UpdatedInput = json.RawMessage(`{"command":"ls -a"}`)
	first.out.HookSpecificOutput.AdditionalContext = "one"
	second.out.Decision, second.out.Reason = "block", "not today"
	second.out.HookSpecificOutput.AdditionalContext = "two"
	r := &hook.Runner{Base: func(in *hook.Input) { in.SessionID, in.Cwd = "s1", "/w" }}
	r.Set(map[hook.Event][]hook.Matcher{
		hook.PreToolUse: {matcher(t, "Bash", &first, &second), matcher(t, "Write", &other)},
	})
	if !r.Has(hook.PreToolUse) || r.Has(hook.Stop) {
		t.Fatal("Has does not match the set")
	}
	v, err := r.Run(t.Context(), hook.PreToolUse, "shell", hook.Input{ToolName: "shell", ToolInput: json.RawMessage(`{"command":"ls"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if !v.Block || v.Stop || v.Reason != "not today" || v.Context != "one\ntwo" || string(v.Input) != `{"command":"ls -a"}` {
		t.Fatalf("verdict %+v", v)
	}
	if len(other.seen) != 0 {
		t.Fatal("a matcher for Write ran for shell")
	}
	if got := second.seen[0]; string(got.ToolInput) != `{"command":"ls -a"}` || got.HookEventName != "PreToolUse" || got.SessionID != "s1" || got.Cwd != "/w" {
		t.Fatalf("the second hook saw %+v; want the first one's input and the base fields", got)
	}
}

func TestRunnerHandlerFails(t *testing.T) {
	t.Parallel()
	bad := &recorder{err: errors.New("callback gone")}
	after := &recorder{}
	var r hook.Runner
	r.Set(map[hook.Event][]hook.Matcher{hook.Stop: {matcher(t, "", bad, after)}})
	if _, err := r.Run(t.Context(), hook.Stop, "", hook.Input{}); err == nil || !strings.Contains(err.Error(), "callback gone") {
		t.Fatalf("err = %v, want the handler's", err)
	}
	if len(after.seen) != 0 {
		t.Fatal("a hook ran after one failed")
	}
}

// echo is a tool that returns its input.
func echo() tool.Tool {
	type args struct {
		Command string `json:"command"`
	}
	return tool.New("shell", "echo", tool.KindExecute, func(_ context.Context, _ tool.Call, a args) tool.Result {
		return tool.Result{Content: "ran " + a.Command}
	})
}

func TestToolWrapper(t *testing.T) {
	t.Parallel()
	t.Run("deny", func(t *testing.T) {
		t.Parallel()
		deny := &recorder{}
		deny.out.HookSpecificOutput.PermissionDecision = "deny"
		f := false
		deny.out.Continue = &f
		var r hook.Runner
		r.Set(map[hook.Event][]hook.Matcher{hook.PreToolUse: {matcher(t, "Bash", deny)}})
		var denied []string
		var stopped []hook.Stopped
		w := &hook.Tool{Tool: echo(), Hooks: &r, Denied: func(name string, _ tool.Call) { denied = append(denied, name) },
			Stop: func(s hook.Stopped) { stopped = append(stopped, s) }}
		res := w.Run(t.Context(), tool.Call{ID: "c1", Input: json.RawMessage(`{"command":"rm -rf /"}`)})
		if !res.IsError || !strings.Contains(res.Content, "denied this call: no reason given") {
			t.Fatalf("result %+v; want the denial", res)
		}
		if len(denied) != 1 || len(stopped) != 1 || stopped[0].Event != hook.PreToolUse {
			t.Fatalf("denied %v, stopped %v; want one of each", denied, stopped)
		}
		if deny.seen[0].ToolUseID != "c1" {
			t.Fatalf("the hook saw %+v; want the call id", deny.seen[0])
		}
	})
	t.Run("rewrite-and-post", func(t *testing.T) {
		t.Parallel()
		pre, post := &recorder{}, &recorder{}
		pre.out.HookSpecificOutput.UpdatedInput = json.RawMessage(`{"command":"ls"}`)
		post.out.HookSpecificOutput.AdditionalContext = "checked"
		var r hook.Runner
		r.Set(map[hook.Event][]hook.Matcher{hook.PreToolUse: {matcher(t, "", pre)}, hook.PostToolUse: {matcher(t, "shell", post)}})
		res := (&hook.Tool{Tool: echo(), Hooks: &r}).Run(t.Context(), tool.Call{ID: "c2", Input: json.RawMessage(`{"command":"rm"}`)})
		if res.IsError || res.Content != "ran ls\n\nchecked" {
			t.Fatalf("result %+v; want the rewritten call's output and the PostToolUse context", res)
		}
		if got := post.seen[0]; string(got.ToolResponse) != `"ran ls"` || string(got.ToolInput) != `{"command":"ls"}` {
			t.Fatalf("PostToolUse saw %+v", got)
		}
	})
}

func TestStopped(t *testing.T) {
	t.Parallel()
	if got := (hook.Stopped{Event: hook.Stop}).Error(); got != "a Stop hook stopped the turn (continue: false)" {
		t.Fatal(got)
	}
	if got := (hook.Stopped{Event: hook.PostToolUse, Reason: "done"}).Error(); got != "a PostToolUse hook stopped the turn: done" {
		t.Fatal(got)
	}
	if !hook.Supported(hook.SessionStart) || hook.Supported("Notification") {
		t.Fatal("Supported")
	}
}
