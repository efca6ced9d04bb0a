package hook

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/arbor-run/arbor/internal/tool"
)

// Runner runs the hooks of a session. Its zero value has no hooks.
type Runner struct {
	// Base fills the common fields of every input (session id, cwd,
	// permission mode) just before a handler is called.
	Base func(*Input)
	// Secrets, when set, gives the values redacted from every text a
	// handler gives back (its reasons, context, messages and notes, and a
	// command's stdout and stderr for a Watch) before anything else reads
	// it: what a hook prints reaches the model, the client's stream and
	// the logs, and must not carry the configuration's secrets. It is
	// asked once for each handler's output.
	Secrets func() []string

	mu  sync.Mutex // guards set
	set map[Event][]Matcher
}

// Set replaces the hooks.
func (r *Runner) Set(set map[Event][]Matcher) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.set = set
}

// Has reports whether there are hooks for e.
func (r *Runner) Has(e Event) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.set[e]) > 0
}

// Run calls the handlers of e whose matcher selects target, in order,
// and sums up their answers; an updated tool input is what the next
// handler sees. A handler that fails is an error: the caller refuses
// what it guarded.
func (r *Runner) Run(ctx context.Context, e Event, target string, in Input) (Verdict, error) {
	r.mu.Lock()
	ms := r.set[e]
	r.mu.Unlock()
	var v Verdict
	for _, m := range ms {
		if !m.Matches(target) {
			continue
		}
		for _, h := range m.Handlers {
			in.HookEventName = string(e)
			if r.Base != nil {
				r.Base(&in)
			}
			done := watching(ctx, h, e, target)
			out, err := h.Call(ctx, in)
			if r.Secrets != nil {
				out.redact(r.Secrets())
			}
			if done != nil {
				report(done, out, err)
			}
			if err != nil {
				return Verdict{}, err
			}
			hs := out.HookSpecificOutput
			v.Notes = append(v.Notes, out.Notes...)
			if out.SystemMessage != "" {
				v.Messages = append(v.Messages, said(e, target, out.SystemMessage))
			}
			if out.Decision == "block" || hs.PermissionDecision == "deny" {
				if !v.Block {
					v.BlockedBy = handlerName(h)
				}
				v.Block = true
			}
			if hs.PermissionDecision == "ask" {
				v.Ask = true
			}
			if out.stops() {
				v.Stop = true
			}
			v.Reason = join("; ", v.Reason, hs.PermissionDecisionReason, out.Reason, out.StopReason)
			v.Context = join("\n", v.Context, hs.AdditionalContext)
			if len(hs.UpdatedInput) > 0 && string(hs.UpdatedInput) != "null" {
				v.Input = hs.UpdatedInput
				in.ToolInput = hs.UpdatedInput
			}
		}
	}
	return v, nil
}

// handlerName names h in a message: a command hook by its command line.
func handlerName(h Handler) string {
	if c, ok := h.(*Command); ok {
		return c.Command
	}
	return "a callback"
}

// Tool runs a tool's PreToolUse hooks before it (before the permission
// check too, when it wraps the checked tool) and its PostToolUse hooks
// after it, when it succeeded.
type Tool struct {
	tool.Tool
	Hooks *Runner
	// Denied is told of a call the hooks refused (for the protocol's
	// permission denials); Stop ends the turn when a hook answered
	// continue: false. Either may be nil: without Stop, the call's result
	// ends the turn (tool.Result.Stop).
	Denied func(name string, call tool.Call)
	Stop   func(Stopped)
}

var _ tool.Namer = (*Tool)(nil)

// Name implements tool.Namer: the wrapped tool's name, without its schema.
func (h *Tool) Name() string { return tool.Name(h.Tool) }

// Run implements tool.Tool.
func (h *Tool) Run(ctx context.Context, call tool.Call) tool.Result {
	name := tool.Name(h)
	v, err := h.Hooks.Run(ctx, PreToolUse, name, Input{ToolName: name, ToolInput: call.Input, ToolUseID: call.ID})
	if err != nil {
		h.denied(name, call)
		return tool.Errorf("the PreToolUse hook failed, so the call was not run: %v", err)
	}
	notes := notesText(v.Notes)
	if v.Block || v.Stop {
		h.denied(name, call)
		res := tool.Errorf("a PreToolUse hook denied this call: %s%s", OrNoReason(v.Reason), notes)
		res.Notices = notices(nil, v.Messages, false)
		if v.Stop {
			h.stop(&res, Stopped{Event: PreToolUse, Reason: v.Reason})
		}
		return res
	}
	if v.Input != nil {
		call.Input = v.Input
	}
	if v.Ask {
		// The permission check inside asks a person even where a rule
		// or the mode would allow (Claude Code's "ask").
		ctx = tool.WithAsk(ctx, "a PreToolUse hook asks for approval: "+OrNoReason(v.Reason))
	}
	if h.Hooks.Has(PostToolUse) {
		ctx = tool.WithDetail(ctx) // its tool_response
	}
	res := h.Tool.Run(ctx, call)
	res.Content += notes
	if len(v.Messages) > 0 { // said before what the tool's own hooks said
		res.Notices = append(notices(nil, v.Messages, false), res.Notices...)
	}
	// Claude Code runs PostToolUse after a call that succeeded and
	// PostToolUseFailure after one that failed (whose file a formatter
	// hook must not touch); neither after one the permission check or
	// the person refused.
	in := Input{ToolName: name, ToolInput: call.Input, ToolUseID: call.ID}
	event := PostToolUse
	switch {
	case res.Refused:
		return res
	case res.IsError:
		event = PostToolUseFailure
		interrupted := ctx.Err() != nil
		in.Error, in.IsInterrupt = res.Content, &interrupted
	}
	if !h.Hooks.Has(event) {
		return res
	}
	if event == PostToolUse {
		// Claude Code's shape whatever the tool is called here (Bash,
		// or arbor's shell).
		in.ToolResponse = tool.ToClaudeCodeResponse(tool.FromClaudeCode(name), call.Input, res)
	}
	post, err := h.Hooks.Run(ctx, event, name, in)
	if err != nil {
		res.Content += fmt.Sprintf("\n\n(the %s hook failed: %v)", event, err)
		return res
	}
	if post.Block {
		res.Content += "\n\n" + string(event) + " hook feedback: " + post.Reason
	}
	if post.Context != "" {
		res.Content += "\n\n" + post.Context
	}
	res.Content += notesText(post.Notes)
	res.Notices = notices(res.Notices, post.Messages, true)
	if post.Stop {
		h.stop(&res, Stopped{Event: event, Reason: post.Reason})
	}
	return res
}

// notices adds the hooks' messages to ns, said after the call or not.
func notices(ns []tool.Notice, msgs []string, after bool) []tool.Notice {
	for _, m := range msgs {
		ns = append(ns, tool.Notice{Text: m, After: after})
	}
	return ns
}

// notesText is the hooks' notes as they follow a tool's output, "" when
// there are none.
func notesText(notes []string) string {
	if len(notes) == 0 {
		return ""
	}
	return "\n\n(hook report: " + strings.Join(notes, "; ") + ")"
}

func (h *Tool) denied(name string, call tool.Call) {
	if h.Denied != nil {
		h.Denied(name, call)
	}
}

func (h *Tool) stop(res *tool.Result, s Stopped) {
	if h.Stop != nil {
		h.Stop(s)
		return
	}
	res.Stop = s
}

// Chain runs the hooks of several runners as one, in order (a client's
// callbacks, then the project's commands); nil runners are skipped.
type Chain []*Runner

// Has reports whether any runner has hooks for e.
func (c Chain) Has(e Event) bool {
	for _, r := range c {
		if r != nil && r.Has(e) {
			return true
		}
	}
	return false
}

// Run runs every runner's hooks of e and sums their verdicts; an updated
// tool input is what the next runner sees. The first error ends it.
func (c Chain) Run(ctx context.Context, e Event, target string, in Input) (Verdict, error) {
	var v Verdict
	for _, r := range c {
		if r == nil || !r.Has(e) {
			continue
		}
		w, err := r.Run(ctx, e, target, in)
		if err != nil {
			return Verdict{}, err
		}
		if w.Block && !v.Block {
			v.BlockedBy = w.BlockedBy
		}
		v.Block = v.Block || w.Block
		v.Ask = v.Ask || w.Ask
		v.Stop = v.Stop || w.Stop
		v.Reason = join("; ", v.Reason, w.Reason)
		v.Context = join("\n", v.Context, w.Context)
		v.Notes = append(v.Notes, w.Notes...)
		v.Messages = append(v.Messages, w.Messages...)
		if w.Input != nil {
			v.Input, in.ToolInput = w.Input, w.Input
		}
	}
	return v, nil
}

// redact applies f to every text of o a person, a client or the model
// may read.
func (o *Output) redact(secrets []string) {
	for _, p := range []*string{&o.StopReason, &o.Reason, &o.SystemMessage, &o.HookSpecificOutput.PermissionDecisionReason,
		&o.HookSpecificOutput.AdditionalContext, &o.Ran.Stdout, &o.Ran.Stderr} {
		*p = tool.Redact(*p, secrets)
	}
	for i, n := range o.Notes {
		o.Notes[i] = tool.Redact(n, secrets)
	}
}
