package streamjson

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/hook"
	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/tool"
)

// The Claude Agent SDK's hooks: initialize.hooks registers callbacks by
// id, and arbor's one hook runner (package hook) calls each back with a
// hook_callback control request. What the hooks decide, and how the
// tools are wrapped, is the hook package's; this file is the transport
// and the points of a turn where stream-json runs them.

// hookMatcher is one entry of initialize.hooks[event].
type hookMatcher struct {
	Matcher         string   `json:"matcher,omitempty"`
	HookCallbackIDs []string `json:"hookCallbackIds"`
}

// claudeHookEvents are the hook events Claude Code offers (the Claude
// Agent SDK's HOOK_EVENTS, and Interrupt of its newer versions). Hooks
// for those arbor does not fire yet are accepted, as Claude Code accepts
// hooks for events that never happen in a session, and listed (the
// initialize answer's unfired_hooks and a diagnostics line); a name
// outside this list is a mistake and refuses the request.
var claudeHookEvents = map[string]bool{
	"PreToolUse": true, "PostToolUse": true, "PostToolUseFailure": true, "PostToolBatch": true, "Notification": true,
	"UserPromptSubmit": true, "UserPromptExpansion": true, "SessionStart": true, "SessionEnd": true, "Stop": true,
	"StopFailure": true, "SubagentStart": true, "SubagentStop": true, "PreCompact": true, "PostCompact": true,
	"PreModelSwitch": true, "PostModelSwitch": true, "PermissionRequest": true, "PermissionDenied": true, "Setup": true,
	"TeammateIdle": true, "TaskCreated": true, "TaskCompleted": true, "Elicitation": true, "ElicitationResult": true,
	"ConfigChange": true, "WorktreeCreate": true, "WorktreeRemove": true, "InstructionsLoaded": true, "CwdChanged": true,
	"FileChanged": true, "DirectoryAdded": true, "MessageDisplay": true, "PreSkillShellCommand": true, "Interrupt": true,
}

// parseHooks turns initialize.hooks into the runner's matchers, each
// callback id a handler that asks the client; unfired lists the events
// arbor accepted hooks for but does not fire.
func (s *Server) parseHooks(raw map[string][]hookMatcher) (out map[hook.Event][]hook.Matcher, unfired []string, err error) {
	out = map[hook.Event][]hook.Matcher{}
	for event, ms := range raw {
		if len(ms) == 0 {
			continue
		}
		if !hook.Supported(hook.Event(event)) {
			if !claudeHookEvents[event] {
				return nil, nil, fmt.Errorf("initialize: %q is no hook event of Claude Code's, so its hooks would never run", event)
			}
			unfired = append(unfired, event)
			continue
		}
		for _, m := range ms {
			hs := make([]hook.Handler, len(m.HookCallbackIDs))
			for i, id := range m.HookCallbackIDs {
				hs[i] = sdkCallback{s: s, id: id}
			}
			hm, err := hook.NewMatcher(m.Matcher, hs...)
			if err != nil {
				return nil, nil, fmt.Errorf("initialize: %w", err)
			}
			out[hook.Event(event)] = append(out[hook.Event(event)], hm)
		}
	}
	sort.Strings(unfired)
	return out, unfired, nil
}

// hookBase fills the common fields of a hook's input.
func (s *Server) hookBase(in *hook.Input) {
	in.SessionID, in.Cwd = s.sessionID(), s.app.Workspace
	in.TranscriptPath = s.app.TranscriptPath(in.SessionID)
	in.PermissionMode = claudeMode(s.app.Permissions.Mode())
}

// wrapHooks runs the client's hooks around t.
func (s *Server) wrapHooks(t tool.Tool) tool.Tool {
	return &hook.Tool{Tool: t, Hooks: &s.hooks, Denied: s.deny, Stop: func(st hook.Stopped) { s.runner.Cancel(st) }}
}

// sdkCallback is a hook the client registered: hook_callback asks it.
type sdkCallback struct {
	s  *Server
	id string
}

// Call implements hook.Handler.
func (c sdkCallback) Call(ctx context.Context, in hook.Input) (hook.Output, error) {
	return c.s.callHook(ctx, c.id, in.ToolUseID, in)
}

// callHook sends a hook_callback request and waits for its answer, the
// end of input (an error) or ctx.
func (s *Server) callHook(ctx context.Context, callbackID, toolUseID string, in hook.Input) (hook.Output, error) {
	rid := "arbor-hook-" + newUUID()
	ch := make(chan hookReply, 1)
	s.mu.Lock()
	if s.inputEnded {
		s.mu.Unlock()
		return hook.Output{}, fmt.Errorf("the client closed its input")
	}
	s.hookCalls[rid] = ch
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.hookCalls, rid)
		s.mu.Unlock()
	}()
	input, _ := json.Marshal(in)
	s.events.Flush()
	s.write(controlRequestOut{Type: "control_request", RequestID: rid, Request: outRequest{
		Subtype: "hook_callback", CallbackID: callbackID, Input: input, ToolUseID: toolUseID,
	}})
	select {
	case <-ctx.Done():
		return hook.Output{}, ctx.Err()
	case <-s.inputDone:
		return hook.Output{}, fmt.Errorf("the client closed its input before answering")
	case r := <-ch:
		if r.err != "" {
			return hook.Output{}, fmt.Errorf("%s", r.err)
		}
		var out hook.Output
		if len(r.body) > 0 && json.Unmarshal(r.body, &out) != nil {
			return hook.Output{}, fmt.Errorf("malformed hook output %s", r.body)
		}
		return out, nil
	}
}

type hookReply struct {
	body json.RawMessage
	err  string
}

// hookAnswer takes the client's answer to a hook_callback; it reports
// whether the request id was one.
func (s *Server) hookAnswer(rid string, body json.RawMessage, subtype, errText string) bool {
	s.mu.Lock()
	ch, ok := s.hookCalls[rid]
	delete(s.hookCalls, rid)
	s.mu.Unlock()
	if !ok {
		return false
	}
	r := hookReply{body: body}
	if subtype == "error" {
		r.err = errText
		if r.err == "" {
			r.err = "error response"
		}
	}
	ch <- r // buffered, one answer per request
	return true
}

// hookChain is the client's hooks, then the project's (sess.Hooks).
func (s *Server) hookChain(sess *app.Session) hook.Chain {
	c := hook.Chain{&s.hooks}
	if sess != nil {
		c = append(c, sess.Hooks)
	}
	return c
}

// promptHooks expands a project command or skill ("/name args"), then
// runs the UserPromptSubmit hooks: a block or a stop refuses the prompt
// (an error), additionalContext and the hooks' own reports go before it.
func (s *Server) promptHooks(ctx context.Context, sess *app.Session, text string) (string, error) {
	s.mu.Lock()
	start := s.startContext
	s.startContext = ""
	s.mu.Unlock()
	if name, args, ok := app.SplitSlash(text); ok {
		if expanded, ok := s.app.ExpandSlash(name, args); ok {
			text = expanded
		}
	}
	hooks := s.hookChain(sess)
	if !hooks.Has(hook.UserPromptSubmit) {
		return joinNonEmpty("\n\n", start, text), nil
	}
	v, err := hooks.Run(ctx, hook.UserPromptSubmit, "", hook.Input{Prompt: &text})
	s.app.SayHooks(sess.ID, hook.UserPromptSubmit, v.Messages)
	switch {
	case err != nil:
		return "", fmt.Errorf("the UserPromptSubmit hook failed, so the prompt was not run: %w", err)
	case v.Block:
		return "", fmt.Errorf("a UserPromptSubmit hook blocked the prompt: %s", hook.OrNoReason(v.Reason))
	case v.Stop:
		return "", hook.Stopped{Event: hook.UserPromptSubmit, Reason: v.Reason}
	}
	// The hooks' words reach the model: their runner redacted the
	// secrets from them, as a tool's output is.
	return joinNonEmpty("\n\n", start, v.Context, notes(v.Notes), text), nil
}

// notes is the hooks' own reports as a line, "" when there are none.
func notes(ns []string) string {
	if len(ns) == 0 {
		return ""
	}
	return "(hook report: " + strings.Join(ns, "; ") + ")"
}

// maxStopBlocks bounds how often Stop hooks may send the agent back to
// work in one turn (Claude Code tells them so with stop_hook_active).
const maxStopBlocks = 8

// stopHooks runs the client's Stop hooks when a turn completed: a block
// sends its reason to the model as the next message and the turn goes
// on. (The project's Stop hooks ran in the agent's loop already.)
func (s *Server) stopHooks(ctx context.Context, sess *app.Session, res agent.Result) agent.Result {
	hooks := hook.Chain{&s.hooks}
	if !hooks.Has(hook.Stop) {
		return res
	}
	for i := 0; res.Outcome == agent.OutcomeCompleted; i++ {
		active := i > 0
		last := res.Text
		v, err := hooks.Run(ctx, hook.Stop, "", hook.Input{StopHookActive: &active, LastAssistantMessage: &last})
		s.app.SayHooks(sess.ID, hook.Stop, v.Messages)
		if err != nil {
			res.Outcome, res.Err = agent.OutcomeFailed, fmt.Errorf("the Stop hook failed: %w", err)
			return res
		}
		if !v.Block || v.Stop {
			return res
		}
		if i == maxStopBlocks {
			res.Outcome, res.Err = agent.OutcomeFailed, fmt.Errorf("the Stop hooks blocked the end of the turn %d times; stopped", maxStopBlocks)
			return res
		}
		steps := res.Steps
		res = sess.Agent.Send(ctx, llm.UserText("Stop hook feedback: "+hook.OrNoReason(v.Reason)))
		res.Steps += steps
	}
	return res
}

// hookLines writes a hook_started line before each command hook and a
// hook_response line after it, as Claude Code writes them for its
// SessionStart hooks; the runner redacted the configuration's secrets
// from the hook's output.
func (s *Server) hookLines(sid string) hook.Watch {
	return func(e hook.Event, target string) func(hook.Ran) {
		if e != hook.SessionStart {
			return nil // Claude Code writes these lines for SessionStart's alone
		}
		s.events.Flush() // after the lines of what came before (a compaction's status)
		id, name := newUUID(), string(e)+":"+target
		s.write(hookLine{Type: "system", Subtype: "hook_started", HookID: id, HookName: name, HookEvent: string(e), UUID: newUUID(), SessionID: sid})
		return func(r hook.Ran) {
			output := r.Stdout + r.Stderr
			l := hookLine{Type: "system", Subtype: "hook_response", HookID: id, HookName: name, HookEvent: string(e),
				Output: &output, Stdout: &r.Stdout, Stderr: &r.Stderr, Outcome: r.Outcome, UUID: newUUID(), SessionID: sid}
			if r.Exited {
				l.ExitCode = &r.ExitCode
			}
			s.write(l)
		}
	}
}

// sessionHooks runs the SessionStart hooks for a new or resumed session;
// their additionalContext goes before the first prompt.
func (s *Server) sessionHooks(ctx context.Context, sess *app.Session, source string) error {
	hooks := s.hookChain(sess)
	if !hooks.Has(hook.SessionStart) {
		return nil
	}
	v, err := hooks.Run(hook.WithWatch(ctx, s.hookLines(sess.ID)), hook.SessionStart, source, hook.Input{Source: source})
	if err != nil {
		return fmt.Errorf("the SessionStart hook failed: %w", err)
	}
	s.mu.Lock()
	s.startContext = joinNonEmpty("\n\n", s.startContext, v.Context, notes(v.Notes))
	s.mu.Unlock()
	return nil
}
