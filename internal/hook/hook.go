// Package hook is arbor's one hook runner. A hook is a program's say at a
// fixed point of a turn: before and after a tool runs, when a prompt is
// submitted, when a turn would stop, when a session starts. Claude Code's
// shapes are the contract (its HookInput and hook output fields): the
// Claude Agent SDK's callbacks (stream-json's hook_callback) are one kind
// of Handler, and commands from the project's or the user's config are
// another, run by the same Runner with the same verdicts.
//
// A Runner holds, per Event, the matchers in the order they were given;
// Run calls every handler whose matcher selects the target, in order, and
// sums their answers up in a Verdict. Tool wraps a tool so that its
// PreToolUse hooks run before it (and may deny it or change its input)
// and its PostToolUse hooks after it.
//
// Invariants: a handler that fails is an error, never a silent allow (the
// caller refuses what the hook guarded); the Runner's lock guards only its
// matcher set and is never held while a handler runs.
package hook

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/arbor-run/arbor/internal/tool"
)

// Event is a point of a turn at which hooks run.
type Event string

// The events arbor runs hooks for, with what a matcher is compared with.
const (
	PreToolUse  Event = "PreToolUse"  // the tool's name
	PostToolUse Event = "PostToolUse" // the tool's name
	// PostToolUseFailure runs after a call that failed (not one that
	// was refused), with the error.
	PostToolUseFailure Event = "PostToolUseFailure" // the tool's name
	UserPromptSubmit   Event = "UserPromptSubmit"   // (no matcher)
	Stop               Event = "Stop"               // (no matcher)
	SessionStart       Event = "SessionStart"       // the source: startup, resume, clear, compact
	// SessionEnd's reason is Claude Code's (its SDK's ExitReason): clear,
	// resume, logout, prompt_input_exit or other; each front end says
	// which it gives (docs/project-files.md).
	SessionEnd Event = "SessionEnd"
	// The events below are run only for hooks from settings files
	// (Claude Code's names); the Claude Agent SDK's callbacks are offered
	// the seven above.
	SubagentStop Event = "SubagentStop" // (no matcher)
	PreCompact   Event = "PreCompact"   // the trigger: manual, auto
	Notification Event = "Notification" // (no matcher)
)

// Events are every event a settings file may declare hooks for.
var Events = []Event{PreToolUse, PostToolUse, PostToolUseFailure, UserPromptSubmit, Stop, SubagentStop, SessionStart, SessionEnd, PreCompact, Notification}

// Known reports whether e is one of Events.
func Known(e Event) bool {
	for _, k := range Events {
		if k == e {
			return true
		}
	}
	return false
}

// Supported reports whether arbor runs the Claude Agent SDK's callbacks
// for e; callers list those for other events as not fired.
func Supported(e Event) bool {
	switch e {
	case PreToolUse, PostToolUse, PostToolUseFailure, UserPromptSubmit, Stop, SessionStart, SessionEnd, PreCompact:
		return true
	}
	return false
}

// Input is what a hook receives: the common fields and those of its
// event (the Claude Agent SDK's HookInput types).
type Input struct {
	HookEventName  string `json:"hook_event_name"`
	SessionID      string `json:"session_id"`
	TranscriptPath string `json:"transcript_path"`
	Cwd            string `json:"cwd"`
	PermissionMode string `json:"permission_mode"`
	// PreToolUse, PostToolUse, PostToolUseFailure
	ToolName  string          `json:"tool_name,omitempty"`
	ToolInput json.RawMessage `json:"tool_input,omitempty"`
	// ToolResponse (PostToolUse) is Claude Code's object for its tools
	// (Bash's stdout, Write's filePath, …), the result's text as a JSON
	// string for others: tool.ToClaudeCodeResponse.
	ToolResponse json.RawMessage `json:"tool_response,omitempty"`
	ToolUseID    string          `json:"tool_use_id,omitempty"`
	// UserPromptSubmit
	Prompt *string `json:"prompt,omitempty"`
	// Stop, SubagentStop
	StopHookActive       *bool   `json:"stop_hook_active,omitempty"`
	LastAssistantMessage *string `json:"last_assistant_message,omitempty"`
	// PostToolUseFailure
	Error       string `json:"error,omitempty"`
	IsInterrupt *bool  `json:"is_interrupt,omitempty"`
	// SessionStart; Model only for source "compact", as Claude Code
	// sends it (the model that wrote the summary)
	Source string `json:"source,omitempty"`
	Model  string `json:"model,omitempty"`
	// SessionEnd
	Reason string `json:"reason,omitempty"`
	// PreCompact
	Trigger            string  `json:"trigger,omitempty"`
	CustomInstructions *string `json:"custom_instructions,omitempty"`
	// Notification
	Message string `json:"message,omitempty"`
}

// Output is the part of a hook's answer arbor acts on.
type Output struct {
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
	// SystemMessage is for the person, never the model (Claude Code
	// shows it as "<Event> says: …").
	SystemMessage string `json:"systemMessage,omitempty"`
	// Notes are problems of the hook itself that did not stop it from
	// answering (a command hook that failed, timed out or printed
	// garbage): reported, never a verdict.
	Notes []string `json:"-"`
	// Ran is how a command hook ran, for a Watch; zero for others.
	Ran Ran `json:"-"`
}

// stops reports whether the output asks to stop (continue: false).
func (o Output) stops() bool { return o.Continue != nil && !*o.Continue }

// Handler is one hook: an SDK callback, a config command.
type Handler interface {
	Call(ctx context.Context, in Input) (Output, error)
}

// HandlerFunc is a Handler that is a function.
type HandlerFunc func(ctx context.Context, in Input) (Output, error)

// Call implements Handler.
func (f HandlerFunc) Call(ctx context.Context, in Input) (Output, error) { return f(ctx, in) }

// Matcher selects the targets of its handlers by Claude Code's rules:
// "" and "*" select every target; a matcher of names only (letters,
// digits, '_', separated by '|' or ',') selects exactly those names
// ("Bash", "Edit|Write", "mcp__github"); anything else is a regular
// expression that selects a target it matches anywhere ("mcp__.*",
// "Notebook.*"), unanchored as in Claude Code. A tool is a target by
// arbor's name and by Claude Code's.
type Matcher struct {
	Pattern  string
	Handlers []Handler
	names    []string // a matcher of names
	re       *regexp.Regexp
}

// NewMatcher compiles pattern.
func NewMatcher(pattern string, hs ...Handler) (Matcher, error) {
	m := Matcher{Pattern: pattern, Handlers: hs}
	switch {
	case pattern == "" || pattern == "*":
	case onlyNames(pattern):
		for _, n := range strings.FieldsFunc(pattern, func(r rune) bool { return r == '|' || r == ',' }) {
			if n = strings.TrimSpace(n); n != "" {
				m.names = append(m.names, n)
			}
		}
	default:
		re, err := regexp.Compile(pattern)
		if err != nil {
			return Matcher{}, fmt.Errorf("hook matcher %q: %w", pattern, err)
		}
		m.re = re
	}
	return m, nil
}

// onlyNames reports whether a matcher is a list of names (Claude Code's
// test: nothing but letters, digits, '_', '|', ',', ' ' and '-').
func onlyNames(p string) bool {
	for _, c := range p {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.ContainsRune("_|, -", c)) {
			return false
		}
	}
	return true
}

// Matches reports whether the matcher selects target: a tool by arbor's
// name or Claude Code's, or SessionStart's source.
func (m Matcher) Matches(target string) bool {
	if m.re == nil && m.names == nil || target == "" {
		return true
	}
	cc := tool.ClaudeCodeName(target)
	if m.names != nil {
		return slices.Contains(m.names, target) || (cc != "" && slices.Contains(m.names, cc))
	}
	return m.re.MatchString(target) || (cc != "" && m.re.MatchString(cc))
}

// Verdict is what the hooks of one event said together.
type Verdict struct {
	Block bool // decision "block" (or PreToolUse's deny)
	// BlockedBy names the first hook that blocked: a command hook's
	// command line, "a callback" for another handler.
	BlockedBy string
	Ask       bool   // PreToolUse's permissionDecision "ask"
	Stop      bool   // continue: false
	Reason    string // why, joined
	Context   string // additionalContext, joined
	Input     json.RawMessage
	// Notes are the hooks' own problems (Output.Notes), to report.
	Notes []string
	// Messages are the hooks' systemMessage for the person, each as
	// Claude Code shows it: "Stop says: …", "PreToolUse:Bash says: …".
	Messages []string
}

// said is a hook's systemMessage of event e for target as Claude Code
// shows it: "<Event> says: msg", "<Event>:<target> says: msg" when the
// event has a target (a tool by Claude Code's name, SessionStart's
// source).
func said(e Event, target, msg string) string {
	if target == "" {
		return string(e) + " says: " + msg
	}
	if cc := tool.ClaudeCodeName(target); cc != "" {
		target = cc
	}
	return string(e) + ":" + target + " says: " + msg
}

// Stopped ends a turn a hook answered with continue: false.
type Stopped struct {
	Event  Event
	Reason string
}

func (e Stopped) Error() string {
	if e.Reason == "" {
		return fmt.Sprintf("a %s hook stopped the turn (continue: false)", e.Event)
	}
	return fmt.Sprintf("a %s hook stopped the turn: %s", e.Event, e.Reason)
}

// OrNoReason is r, or "no reason given".
func OrNoReason(r string) string {
	if r == "" {
		return "no reason given"
	}
	return r
}

// join joins the non-empty parts with sep.
func join(sep string, parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, sep)
}
