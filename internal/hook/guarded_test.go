package hook_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/hook"
	"github.com/arbor-run/arbor/internal/permission"
	"github.com/arbor-run/arbor/internal/tool"
)

// asked is an approver that records what it was asked and answers no.
type asked struct{ reasons []string }

func (a *asked) Approve(_ context.Context, req tool.ApprovalRequest) (tool.Approval, error) {
	a.reasons = append(a.reasons, req.Reason)
	return tool.Approval{Allow: false, Message: "not now"}, nil
}

// TestHookAskAsksEvenInTrustMode: a PreToolUse hook that answers
// permissionDecision "ask" (Claude Code's contract) puts the call to a
// person even when the mode (trust) or an allow rule would let it run;
// without that hook the same call runs unasked.
func TestHookAskAsksEvenInTrustMode(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	askHook := script(t, dir, "ask.sh", `cat >/dev/null
echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"pushes need a look"}}'
`)
	var decl hook.Declared
	decl.Source = "/p/.claude/settings.json"
	if err := json.Unmarshal([]byte(`{"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "`+askHook+`"}]}]}`), &decl.Hooks); err != nil {
		t.Fatal(err)
	}
	set, problems := hook.FromSettings([]hook.Declared{decl}, hook.CommandOptions{Dir: dir})
	if len(problems) != 0 {
		t.Fatal(problems)
	}
	allow, err := permission.ParseRule("shell(git push *)", permission.Allow, permission.ScopeProject)
	if err != nil {
		t.Fatal(err)
	}
	engine, err := permission.New(permission.Options{Mode: permission.ModeTrust, Workspace: dir, Extra: []permission.Rule{allow}})
	if err != nil {
		t.Fatal(err)
	}
	call := tool.Call{ID: "c1", Input: json.RawMessage(`{"command":"git push origin main"}`)}

	approver := &asked{}
	var r hook.Runner
	r.Set(set)
	res := (&hook.Tool{Tool: tool.Guard(shellLike(), engine, approver), Hooks: &r}).Run(t.Context(), call)
	if !res.IsError || !strings.Contains(res.Content, "the user denied this call: not now") {
		t.Fatalf("result %+v; want the call put to the approver, who said no", res)
	}
	if len(approver.reasons) != 1 || !strings.Contains(approver.reasons[0], "pushes need a look") {
		t.Fatalf("the approver was asked %q; want once, with the hook's reason", approver.reasons)
	}

	unhooked := &asked{}
	if res := tool.Guard(shellLike(), engine, unhooked).Run(t.Context(), call); res.IsError || len(unhooked.reasons) != 0 {
		t.Fatalf("without the hook: result %+v, asked %q; want it run unasked", res, unhooked.reasons)
	}
}

// TestPostToolUseAfterSuccessFailureAfterFailure: as in Claude Code, a
// PostToolUse hook runs after a call that ran and succeeded, a
// PostToolUseFailure hook after one that ran and failed (with its error),
// and neither after one the permission check or the person refused.
func TestPostToolUseAfterSuccessFailureAfterFailure(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	post, failed := filepath.Join(dir, "post.log"), filepath.Join(dir, "failed.log")
	var decl hook.Declared
	decl.Source = "/p/.claude/settings.json"
	if err := json.Unmarshal([]byte(`{
	  "PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "cat >> `+post+`; echo >> `+post+`"}]}],
	  "PostToolUseFailure": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "cat >> `+failed+`; echo >> `+failed+`; echo 'check the build log' >&2; exit 2"}]}]}`), &decl.Hooks); err != nil {
		t.Fatal(err)
	}
	set, problems := hook.FromSettings([]hook.Declared{decl}, hook.CommandOptions{Dir: dir})
	if len(problems) != 0 {
		t.Fatal(problems)
	}
	deny, err := permission.ParseRule("shell(rm *)", permission.Deny, permission.ScopeProject)
	if err != nil {
		t.Fatal(err)
	}
	ask, err := permission.ParseRule("shell(git push *)", permission.Ask, permission.ScopeProject)
	if err != nil {
		t.Fatal(err)
	}
	engine, err := permission.New(permission.Options{Mode: permission.ModeTrust, Workspace: dir, Extra: []permission.Rule{deny, ask}})
	if err != nil {
		t.Fatal(err)
	}
	var r hook.Runner
	r.Set(set)
	h := &hook.Tool{Tool: tool.Guard(shellLike(), engine, &asked{}), Hooks: &r}
	results := map[string]tool.Result{}
	for _, cmd := range []string{"rm -rf build", "git push origin", "fail", "ls"} {
		results[cmd] = h.Run(t.Context(), tool.Call{ID: cmd, Input: json.RawMessage(`{"command":"` + cmd + `"}`)})
	}
	lines := func(path string) []string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(strings.TrimSpace(string(b)), "\n")
	}
	if l := lines(post); len(l) != 1 || !strings.Contains(l[0], `"command":"ls"`) || !strings.Contains(l[0], `"tool_response":"ran ls"`) {
		t.Fatalf("PostToolUse ran for %q; want the successful ls only", l)
	}
	l := lines(failed)
	if len(l) != 1 {
		t.Fatalf("PostToolUseFailure ran for %q; want the failed call only", l)
	}
	var in struct {
		Event       string  `json:"hook_event_name"`
		ToolName    string  `json:"tool_name"`
		ToolUseID   string  `json:"tool_use_id"`
		Error       string  `json:"error"`
		IsInterrupt *bool   `json:"is_interrupt"`
		Response    *string `json:"tool_response"`
	}
	if err := json.Unmarshal([]byte(l[0]), &in); err != nil {
		t.Fatal(err)
	}
	if in.Event != "PostToolUseFailure" || in.ToolName != "Bash" || in.ToolUseID != "fail" || in.Error != "ran fail" ||
		in.IsInterrupt == nil || *in.IsInterrupt || in.Response != nil {
		t.Fatalf("PostToolUseFailure read %s", l[0])
	}
	if res := results["fail"]; !res.IsError || !strings.Contains(res.Content, "PostToolUseFailure hook feedback: check the build log") {
		t.Fatalf("the failed call's result %+v; want the hook's feedback after the error", res)
	}
	for _, cmd := range []string{"rm -rf build", "git push origin"} {
		if res := results[cmd]; !res.IsError || !res.Refused {
			t.Fatalf("%s: result %+v; want refused", cmd, res)
		}
	}
}

// commandArgs are a shell-like tool's: the permission check sees the
// command.
type commandArgs struct {
	Command string `json:"command"`
}

func (a commandArgs) Target() tool.Target { return tool.Target{Command: a.Command} }

// shellLike is a tool called shell whose calls the permission check sees
// as commands; the command "fail" fails.
func shellLike() tool.Tool {
	return tool.New("shell", "fails on fail", tool.KindExecute, func(_ context.Context, _ tool.Call, a commandArgs) tool.Result {
		return tool.Result{Content: "ran " + a.Command, IsError: a.Command == "fail"}
	})
}
