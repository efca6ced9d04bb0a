package streamjson

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"

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

// supportedHooks are the hook events arbor calls; initialize refuses the
// others rather than never calling them.
var supportedHooks = map[string]bool{"PreToolUse": true}

func parseHooks(raw map[string][]hookMatcher) (map[string][]hookMatcher, error) {
	out := map[string][]hookMatcher{}
	for event, ms := range raw {
		if len(ms) == 0 {
			continue
		}
		if !supportedHooks[event] {
			return nil, fmt.Errorf("initialize: hooks for %s are not supported by arbor (only PreToolUse); remove them or they would never run", event)
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

// matches reports whether the matcher selects the tool, by arbor's name
// or Claude Code's.
func (m hookMatcher) matches(name string) bool {
	if m.re == nil {
		return true
	}
	cc := tool.ClaudeCodeName(name)
	return m.re.MatchString(name) || (cc != "" && m.re.MatchString(cc))
}

// hookInput is what a PreToolUse callback receives.
type hookInput struct {
	HookEventName  string          `json:"hook_event_name"`
	SessionID      string          `json:"session_id"`
	TranscriptPath string          `json:"transcript_path"`
	Cwd            string          `json:"cwd"`
	PermissionMode string          `json:"permission_mode"`
	ToolName       string          `json:"tool_name"`
	ToolInput      json.RawMessage `json:"tool_input"`
	ToolUseID      string          `json:"tool_use_id"`
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
	} `json:"hookSpecificOutput"`
}

// hooked runs the client's PreToolUse hooks before the permission check
// and the tool.
type hooked struct {
	tool.Tool
	s *Server
}

func (s *Server) wrapHooks(t tool.Tool) tool.Tool { return &hooked{Tool: t, s: s} }

func (h *hooked) Run(ctx context.Context, call tool.Call) tool.Result {
	name := h.Info().Name
	h.s.mu.Lock()
	ms := h.s.init.hooks["PreToolUse"]
	h.s.mu.Unlock()
	for _, m := range ms {
		if !m.matches(name) {
			continue
		}
		for _, id := range m.HookCallbackIDs {
			out, err := h.s.callHook(ctx, id, call.ID, hookInput{
				HookEventName: "PreToolUse", SessionID: h.s.sessionID(), Cwd: h.s.app.Workspace,
				PermissionMode: claudeMode(h.s.app.Permissions.Mode()), ToolName: name, ToolInput: call.Input, ToolUseID: call.ID,
			})
			if err != nil {
				h.s.deny(name, call)
				return tool.Errorf("the PreToolUse hook failed, so the call was not run: %v", err)
			}
			hs := out.HookSpecificOutput
			if hs.PermissionDecision == "deny" || out.Decision == "block" || (out.Continue != nil && !*out.Continue) {
				h.s.deny(name, call)
				reason := joinNonEmpty("; ", hs.PermissionDecisionReason, out.Reason, out.StopReason)
				if reason == "" {
					reason = "no reason given"
				}
				return tool.Errorf("a PreToolUse hook denied this call: %s", reason)
			}
			if len(hs.UpdatedInput) > 0 && string(hs.UpdatedInput) != "null" {
				call.Input = hs.UpdatedInput
			}
		}
	}
	return h.Tool.Run(ctx, call)
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
