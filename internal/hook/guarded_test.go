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

// TestPostToolUseOnlyAfterSuccess: as in Claude Code, a PostToolUse hook
// runs after a call that ran and succeeded, not after one the permission
// check refused nor one that failed.
func TestPostToolUseOnlyAfterSuccess(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log := filepath.Join(dir, "post.log")
	var decl hook.Declared
	decl.Source = "/p/.claude/settings.json"
	if err := json.Unmarshal([]byte(`{"PostToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "cat >> `+log+`; echo >> `+log+`"}]}]}`), &decl.Hooks); err != nil {
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
	engine, err := permission.New(permission.Options{Mode: permission.ModeTrust, Workspace: dir, Extra: []permission.Rule{deny}})
	if err != nil {
		t.Fatal(err)
	}
	var r hook.Runner
	r.Set(set)
	h := &hook.Tool{Tool: tool.Guard(shellLike(), engine, &asked{}), Hooks: &r}
	for _, cmd := range []string{"rm -rf build", "fail", "ls"} {
		h.Run(t.Context(), tool.Call{ID: cmd, Input: json.RawMessage(`{"command":"` + cmd + `"}`)})
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(string(b)), "\n"); len(lines) != 1 || !strings.Contains(lines[0], `"command":"ls"`) {
		t.Fatalf("PostToolUse ran for %q; want the successful ls only", lines)
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
