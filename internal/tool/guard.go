package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/arbor-run/arbor/internal/permission"
)

// Policy decides calls and remembers rules the user approved;
// *permission.Engine implements it.
type Policy interface {
	Decide(permission.Request) permission.Decision
	AddRule(permission.Rule) error
}

// noApprover is what the model sees when a call needs approval and nobody
// can give it.
const noApprover = "approval needed but no one can approve it: run with --yes, or choose --mode trust/auto-edit"

// Guard wraps t with the permission decorator: every call is decided by p
// before it runs, and calls p asks about are put to a (nil: nobody, so they
// are refused). Guarding a guarded tool returns it unchanged, so the check
// runs exactly once per call. Guard panics when p is nil.
func Guard(t Tool, p Policy, a Approver) Tool {
	if p == nil {
		panic("tool.Guard: nil Policy")
	}
	if _, ok := t.(guardedTool); ok {
		return t
	}
	return &guarded{inner: t, policy: p, approver: a}
}

// GuardAll guards every tool of ts.
func GuardAll(ts []Tool, p Policy, a Approver) []Tool {
	out := make([]Tool, len(ts))
	for i, t := range ts {
		out[i] = Guard(t, p, a)
	}
	return out
}

// guardedTool marks tools that already carry the decorator.
type guardedTool interface{ permissionGuarded() }

type guarded struct {
	inner    Tool
	policy   Policy
	approver Approver // nil: nobody can approve
}

func (g *guarded) permissionGuarded() {}

func (g *guarded) Info() Info { return g.inner.Info() }

func (g *guarded) Name() string { return Name(g.inner) }

func (g *guarded) Target(input json.RawMessage) (Target, error) { return g.inner.Target(input) }

// Run decides the call, asks when told to, and runs the inner tool only
// when the call is allowed or approved.
func (g *guarded) Run(ctx context.Context, call Call) Result {
	info := g.inner.Info()
	target, err := g.inner.Target(call.Input)
	if err != nil {
		return invalidArgs(info.Name, err)
	}
	d := g.policy.Decide(request(info, target))
	if why, ok := ctx.Value(askKey{}).(string); ok {
		// Asked for by a hook of this call, not of the calls it makes
		// (a child agent's): a rule or mode that allows is not enough.
		ctx = context.WithValue(ctx, askKey{}, nil)
		if d.Action == permission.Allow {
			d = permission.Decision{Action: permission.Ask, Reason: why}
		}
	}
	switch d.Action {
	case permission.Allow:
		return g.inner.Run(ctx, call)
	case permission.Ask:
		return g.ask(ctx, call, info, target, d)
	case permission.Deny:
		return refused("permission denied: %s", d.Reason)
	}
	return refused("permission denied: the policy gave no verdict (%q) for %s", d.Action, info.Name)
}

// askKey holds, in a call's context, why a hook asked for the call to be
// approved (WithAsk).
type askKey struct{}

// WithAsk makes the next guarded call run with ctx ask for approval, with
// reason why, even where a rule or the mode would allow it: a PreToolUse
// hook answered "ask" (Claude Code's permissionDecision). A deny still
// denies; the calls the guarded tool makes in turn are not affected.
func WithAsk(ctx context.Context, why string) context.Context {
	return context.WithValue(ctx, askKey{}, why)
}

func (g *guarded) ask(ctx context.Context, call Call, info Info, target Target, d permission.Decision) Result {
	if g.approver == nil {
		return refused("%s (%s)", noApprover, d.Reason)
	}
	ap, err := g.approver.Approve(ctx, ApprovalRequest{
		CallID:        call.ID,
		Tool:          info.Name,
		Kind:          info.Kind,
		Input:         call.Input,
		Target:        target,
		Reason:        d.Reason,
		SuggestedRule: d.SuggestedRule,
	})
	switch {
	case errors.Is(err, ErrNoApprover):
		return refused("%s (%s)", noApprover, d.Reason)
	case err != nil && (ctx.Err() != nil || errors.Is(err, context.Canceled)):
		return refused("cancelled")
	case err != nil:
		return refused("approval for %s failed: %v", info.Name, err)
	case !ap.Allow:
		if ap.Message != "" {
			return refused("the user denied this call: %s", ap.Message)
		}
		return refused("the user denied this call")
	}

	var note string
	if ap.RememberScope != "" {
		if err := g.remember(info.Name, ap, d.SuggestedRule); err != nil {
			note = fmt.Sprintf("\n\n(the approval was not remembered: %v)", err)
		}
	}
	if ap.UpdatedInput != nil {
		updated, err := g.inner.Target(ap.UpdatedInput)
		if err != nil {
			return refused("invalid arguments for %s (as edited by the approver): %v%s", info.Name, err, note)
		}
		if d := g.policy.Decide(request(info, updated)); d.Action == permission.Deny {
			return refused("permission denied: %s%s", d.Reason, note)
		}
		call.Input = ap.UpdatedInput
	}
	res := g.inner.Run(ctx, call)
	res.Content += note
	return res
}

// remember saves the rule the approver asked for: its pattern, else the
// suggested rule, else every call of the tool.
func (g *guarded) remember(tool string, ap Approval, suggested string) error {
	scope, err := permission.ParseScope(ap.RememberScope)
	if err != nil {
		return err
	}
	spec := strings.TrimSpace(ap.RulePattern)
	switch {
	case spec == "":
		spec = suggested
		if spec == "" {
			spec = tool
		}
	case !strings.Contains(spec, "(") && toolNameKey(spec) != toolNameKey(tool):
		// A bare pattern ("git status*") is about this tool.
		spec = tool + "(" + spec + ")"
	}
	rule, err := permission.ParseRule(spec, permission.Allow, scope)
	if err != nil {
		return err
	}
	return g.policy.AddRule(rule)
}

// refused is the error result of a call the check or the person refused.
func refused(format string, args ...any) Result {
	r := Errorf(format, args...)
	r.Refused = true
	return r
}

// request describes a call to the policy.
func request(info Info, t Target) permission.Request {
	return permission.Request{Tool: info.Name, Class: classOf(info.Kind), Command: t.Command, Paths: t.Paths, Sandboxed: t.Sandboxed,
		Host: t.Host, Private: t.Private}
}

// classOf maps a tool's kind to a permission class; an unknown kind is
// treated as the most dangerous one.
func classOf(k Kind) permission.Class {
	switch k {
	case KindRead:
		return permission.ClassRead
	case KindWrite:
		return permission.ClassWrite
	case KindInteract:
		return permission.ClassNone
	case KindNetwork:
		return permission.ClassNetwork
	}
	return permission.ClassExecute
}

// invalidArgs reports undecodable arguments once: the typed adapter's
// *ArgsError already names the tool.
func invalidArgs(name string, err error) Result {
	if errors.Is(err, ErrInvalidArgs) {
		return Result{Content: err.Error(), IsError: true}
	}
	return Errorf("invalid arguments for %s: %v", name, err)
}
