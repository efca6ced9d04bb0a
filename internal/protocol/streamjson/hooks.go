package streamjson

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/tool"
)

// hookMatcher is one entry of initialize.hooks[event]: the Claude Agent
// SDK registers its hook callbacks by id and arbor calls them back with
// hook_callback control requests.
type hookMatcher struct {
	Matcher         string   `json:"matcher,omitempty"`
	HookCallbackIDs []string `json:"hookCallbackIds"`
	re              *regexp.Regexp
}

// Hook events arbor calls, with what the matcher is compared with.
const (
	hookPreToolUse       = "PreToolUse"       // the tool's name
	hookPostToolUse      = "PostToolUse"      // the tool's name
	hookUserPromptSubmit = "UserPromptSubmit" // (no matcher)
	hookStop             = "Stop"             // (no matcher)
	hookSessionStart     = "SessionStart"     // the source: startup, resume
)

// supportedHooks are the hook events arbor calls; initialize refuses the
// others rather than never calling them.
var supportedHooks = map[string]bool{hookPreToolUse: true, hookPostToolUse: true, hookUserPromptSubmit: true,
	hookStop: true, hookSessionStart: true}

func parseHooks(raw map[string][]hookMatcher) (map[string][]hookMatcher, error) {
	out := map[string][]hookMatcher{}
	for event, ms := range raw {
		if len(ms) == 0 {
			continue
		}
		if !supportedHooks[event] {
			return nil, fmt.Errorf("initialize: hooks for %s are not supported by arbor (only PreToolUse, PostToolUse, UserPromptSubmit, Stop, SessionStart); remove them or they would never run", event)
		}
		for i := range ms {
			m := &ms[i]
			if m.Matcher != "" && m.Matcher != "*" {
				re, err := regexp.Compile("^(?:" + m.Matcher + ")$")
				if err != nil {
					return nil, fmt.Errorf("initialize: hook matcher %q: %w", m.Matcher, err)
				}
				m.re = re
			}
		}
		out[event] = ms
	}
	return out, nil
}

// matches reports whether the matcher selects target: a tool by arbor's
// name or Claude Code's, or SessionStart's source.
func (m hookMatcher) matches(target string) bool {
	if m.re == nil || target == "" {
		return true
	}
	cc := tool.ClaudeCodeName(target)
	return m.re.MatchString(target) || (cc != "" && m.re.MatchString(cc))
}

// hookInput is what a callback receives: the common fields and those of
// its event (the SDK's HookInput types).
type hookInput struct {
	HookEventName  string `json:"hook_event_name"`
	SessionID      string `json:"session_id"`
	TranscriptPath string `json:"transcript_path"`
	Cwd            string `json:"cwd"`
	PermissionMode string `json:"permission_mode"`
	// PreToolUse, PostToolUse
	ToolName     string          `json:"tool_name,omitempty"`
	ToolInput    json.RawMessage `json:"tool_input,omitempty"`
	ToolResponse *string         `json:"tool_response,omitempty"`
	ToolUseID    string          `json:"tool_use_id,omitempty"`
	// UserPromptSubmit
	Prompt *string `json:"prompt,omitempty"`
	// Stop
	StopHookActive *bool `json:"stop_hook_active,omitempty"`
	// SessionStart
	Source string `json:"source,omitempty"`
}

// hookOutput is the part of a hook callback's answer arbor acts on.
type hookOutput struct {
	Continue           *bool  `json:"continue,omitempty"`
	StopReason         string `json:"stopReason,omitempty"`
	Decision           string `json:"decision,omitempty"` // "approve" or "block"
	Reason             string `json:"reason,omitempty"`
	HookSpecificOutput struct {
		PermissionDecision       string          `json:"permissionDecision,omitempty"` // allow, deny, ask
		PermissionDecisionReason string          `json:"permissionDecisionReason,omitempty"`
		UpdatedInput             json.RawMessage `json:"updatedInput,omitempty"`
		AdditionalContext        string          `json:"additionalContext,omitempty"`
	} `json:"hookSpecificOutput"`
}

// stops reports whether the output asks to stop (continue: false).
func (o hookOutput) stops() bool { return o.Continue != nil && !*o.Continue }

// hookVerdict is what the callbacks of one event said together.
type hookVerdict struct {
	block   bool   // decision "block" (or PreToolUse's deny)
	stop    bool   // continue: false
	reason  string // why, joined
	context string // additionalContext, joined
	input   json.RawMessage
}

// runHooks calls the client's callbacks for event whose matcher selects
// target, in order, and sums up their answers. A callback that fails or
// cannot be asked is an error: the caller refuses what it guarded.
func (s *Server) runHooks(ctx context.Context, event, target string, in hookInput) (hookVerdict, error) {
	s.mu.Lock()
	ms := s.init.hooks[event]
	s.mu.Unlock()
	var v hookVerdict
	for _, m := range ms {
		if !m.matches(target) {
			continue
		}
		for _, id := range m.HookCallbackIDs {
			in.HookEventName, in.SessionID, in.Cwd = event, s.sessionID(), s.app.Workspace
			in.PermissionMode = claudeMode(s.app.Permissions.Mode())
			out, err := s.callHook(ctx, id, in.ToolUseID, in)
			if err != nil {
				return hookVerdict{}, err
			}
			hs := out.HookSpecificOutput
			if out.Decision == "block" || hs.PermissionDecision == "deny" {
				v.block = true
			}
			if out.stops() {
				v.stop = true
			}
			v.reason = joinNonEmpty("; ", v.reason, hs.PermissionDecisionReason, out.Reason, out.StopReason)
			v.context = joinNonEmpty("\n", v.context, hs.AdditionalContext)
			if len(hs.UpdatedInput) > 0 && string(hs.UpdatedInput) != "null" {
				v.input = hs.UpdatedInput
				in.ToolInput = hs.UpdatedInput
			}
		}
	}
	return v, nil
}

// hasHooks reports whether the client registered callbacks for event.
func (s *Server) hasHooks(event string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.init.hooks[event]) > 0
}

// hooked runs the client's PreToolUse hooks before the permission check
// and the tool, and its PostToolUse hooks after the tool.
type hooked struct {
	tool.Tool
	s *Server
}

func (s *Server) wrapHooks(t tool.Tool) tool.Tool { return &hooked{Tool: t, s: s} }

func (h *hooked) Run(ctx context.Context, call tool.Call) tool.Result {
	name := h.Info().Name
	v, err := h.s.runHooks(ctx, hookPreToolUse, name, hookInput{ToolName: name, ToolInput: call.Input, ToolUseID: call.ID})
	if err != nil {
		h.s.deny(name, call)
		return tool.Errorf("the PreToolUse hook failed, so the call was not run: %v", err)
	}
	if v.block || v.stop {
		h.s.deny(name, call)
		reason := v.reason
		if reason == "" {
			reason = "no reason given"
		}
		if v.stop {
			h.s.runner.Cancel(hookStopped{event: hookPreToolUse, reason: v.reason})
		}
		return tool.Errorf("a PreToolUse hook denied this call: %s", reason)
	}
	if v.input != nil {
		call.Input = v.input
	}
	res := h.Tool.Run(ctx, call)
	if !h.s.hasHooks(hookPostToolUse) {
		return res
	}
	content := res.Content
	post, err := h.s.runHooks(ctx, hookPostToolUse, name, hookInput{ToolName: name, ToolInput: call.Input, ToolResponse: &content, ToolUseID: call.ID})
	if err != nil {
		res.Content += fmt.Sprintf("\n\n(the PostToolUse hook failed: %v)", err)
		return res
	}
	if post.block {
		res.Content += "\n\nPostToolUse hook feedback: " + post.reason
	}
	if post.context != "" {
		res.Content += "\n\n" + post.context
	}
	if post.stop {
		h.s.runner.Cancel(hookStopped{event: hookPostToolUse, reason: post.reason})
	}
	return res
}

// callHook sends a hook_callback request and waits for its answer, the
// end of input (an error) or ctx.
func (s *Server) callHook(ctx context.Context, callbackID, toolUseID string, in hookInput) (hookOutput, error) {
	rid := "arbor-hook-" + newUUID()
	ch := make(chan hookReply, 1)
	s.mu.Lock()
	if s.inputEnded {
		s.mu.Unlock()
		return hookOutput{}, fmt.Errorf("the client closed its input")
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
		return hookOutput{}, ctx.Err()
	case <-s.inputDone:
		return hookOutput{}, fmt.Errorf("the client closed its input before answering")
	case r := <-ch:
		if r.err != "" {
			return hookOutput{}, fmt.Errorf("%s", r.err)
		}
		var out hookOutput
		if len(r.body) > 0 && json.Unmarshal(r.body, &out) != nil {
			return hookOutput{}, fmt.Errorf("malformed hook output %s", r.body)
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

// hookStopped ends a turn a hook answered with continue: false.
type hookStopped struct{ event, reason string }

func (e hookStopped) Error() string {
	if e.reason == "" {
		return fmt.Sprintf("a %s hook stopped the turn (continue: false)", e.event)
	}
	return fmt.Sprintf("a %s hook stopped the turn: %s", e.event, e.reason)
}

// promptHooks runs the UserPromptSubmit hooks: a block or a stop refuses
// the prompt (an error), additionalContext goes before it.
func (s *Server) promptHooks(ctx context.Context, text string) (string, error) {
	s.mu.Lock()
	start := s.startContext
	s.startContext = ""
	s.mu.Unlock()
	if !s.hasHooks(hookUserPromptSubmit) {
		return joinNonEmpty("\n\n", start, text), nil
	}
	v, err := s.runHooks(ctx, hookUserPromptSubmit, "", hookInput{Prompt: &text})
	switch {
	case err != nil:
		return "", fmt.Errorf("the UserPromptSubmit hook failed, so the prompt was not run: %w", err)
	case v.block:
		return "", fmt.Errorf("a UserPromptSubmit hook blocked the prompt: %s", orNoReason(v.reason))
	case v.stop:
		return "", hookStopped{event: hookUserPromptSubmit, reason: v.reason}
	}
	return joinNonEmpty("\n\n", start, v.context, text), nil
}

// maxStopBlocks bounds how often Stop hooks may send the agent back to
// work in one turn (Claude Code tells them so with stop_hook_active).
const maxStopBlocks = 8

// stopHooks runs the Stop hooks when a turn completed: a block sends its
// reason to the model as the next message and the turn goes on.
func (s *Server) stopHooks(ctx context.Context, sess *app.Session, res agent.Result) agent.Result {
	if !s.hasHooks(hookStop) {
		return res
	}
	for i := 0; res.Outcome == agent.OutcomeCompleted; i++ {
		active := i > 0
		v, err := s.runHooks(ctx, hookStop, "", hookInput{StopHookActive: &active})
		if err != nil {
			res.Outcome, res.Err = agent.OutcomeFailed, fmt.Errorf("the Stop hook failed: %w", err)
			return res
		}
		if !v.block || v.stop {
			return res
		}
		if i == maxStopBlocks {
			res.Outcome, res.Err = agent.OutcomeFailed, fmt.Errorf("the Stop hooks blocked the end of the turn %d times; stopped", maxStopBlocks)
			return res
		}
		steps := res.Steps
		res = sess.Agent.Send(ctx, llm.UserText("Stop hook feedback: "+orNoReason(v.reason)))
		res.Steps += steps
	}
	return res
}

// sessionHooks runs the SessionStart hooks for a new or resumed session;
// their additionalContext goes before the first prompt.
func (s *Server) sessionHooks(ctx context.Context, source string) error {
	if !s.hasHooks(hookSessionStart) {
		return nil
	}
	v, err := s.runHooks(ctx, hookSessionStart, source, hookInput{Source: source})
	if err != nil {
		return fmt.Errorf("the SessionStart hook failed: %w", err)
	}
	s.mu.Lock()
	s.startContext = joinNonEmpty("\n\n", s.startContext, v.context)
	s.mu.Unlock()
	return nil
}

func orNoReason(r string) string {
	if r == "" {
		return "no reason given"
	}
	return r
}
