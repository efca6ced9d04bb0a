// Package permission decides whether a tool call may run: it holds the
// permission mode, the allow/ask/deny rules of three scopes (session,
// project, user), workspace confinement, and the persistence of rules in
// YAML files. It is pure policy: it never runs a tool and never asks anyone;
// the decorator in package tool does both.
//
// # Rules
//
// A rule is written "tool" (every call of the tool) or "tool(pattern)". Tool
// names match tolerantly: case, '_' and '-' are ignored, so "Write-File"
// names write_file. For shell commands '*' matches anything, spaces and '/'
// included, and a trailing " *" (or ":*") also matches the bare prefix, so
// "shell(git *)" covers "git" and "git push origin main". For file paths
// '*' and '?' stay inside one directory, '**' crosses directories, '\'
// escapes; a relative pattern is relative to the workspace ("src/**"), an
// absolute one (or "~/…") names any place on disk ("/tmp/**"). A pattern
// "re:REGEX" is a regular expression instead ("shell(re:^git status$)"),
// over the command or over the path relative to the workspace or absolute;
// "tool:REGEX", the form of the envelope protocol's spec, reads the same.
//
// # Rule files
//
// Project rules live in <workspace>/.arbor/permissions.yaml, user rules in
// $XDG_CONFIG_HOME/arbor/permissions.yaml, both of this shape:
//
//	rules:
//	  - rule: "shell(git *)"
//	    action: allow
//	  - rule: "write_file(/tmp/**)"
//	    action: allow
//	  - rule: "shell(rm *)"
//	    action: deny
//
// A missing file means no rules; a malformed one is an error naming the
// file. Session rules live in memory only.
//
// # Precedence
//
//  1. Any matching deny rule, in any scope, denies.
//  2. Workspace confinement: a call touching a path outside the workspace
//     (after resolving symlinks) is denied, in every mode, unless an allow
//     rule whose pattern names that path matches it (neither a rule
//     without a pattern nor one like "**", anchored in the workspace, does).
//  3. Otherwise the first matching ask or allow rule decides, searching the
//     session, then the project, then the user scope, each in file order
//     (the narrowest scope wins).
//  4. Otherwise the mode decides: trust allows everything; auto-edit allows
//     reads and writes and asks for commands; default allows reads and asks
//     for writes and commands. Interaction tools (ClassNone) always run.
//     A write of a file programs running with the user's rights act on
//     (.arbor/, .claude/, .git/, .mcp.json, …; sensitive.go) asks in
//     auto-edit mode, and a rule without a pattern does not allow it.
//
// Compound shell commands (";", "&&", "||", "|", "&", newlines outside
// quotes) are allowed by rules only when every part is covered by some allow
// rule; a deny rule matching any part (including the inside of a command
// substitution) denies; a command with "$(", backticks or process
// substitution is never allowed by a rule.
//
// Invariants: an Engine is safe for concurrent use; Decide never touches the
// disk except to resolve symlinks; a rule added to a persisted scope is in
// its file before AddRule returns, so a new Engine sees it.
package permission

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors; functions wrap them with %w.
var (
	ErrInvalidMode   = errors.New("invalid permission mode")
	ErrInvalidScope  = errors.New("invalid rule scope")
	ErrInvalidAction = errors.New("invalid rule action")
	ErrInvalidRule   = errors.New("invalid permission rule")
	// ErrNotPersisted: a rule was added to a file scope that has no file.
	ErrNotPersisted = errors.New("rule scope is not persisted")
	// ErrRuleNotFound: RemoveRule found nothing to remove.
	ErrRuleNotFound = errors.New("rule not found")
	// ErrRuleFile: a rule file could not be read, parsed or written.
	ErrRuleFile = errors.New("permission rule file")
)

// Mode is the default answer for calls no rule decides.
type Mode string

const (
	// ModeDefault runs read-only tools and asks before writes and commands.
	ModeDefault Mode = "default"
	// ModeAutoEdit runs reads and writes and asks before commands.
	ModeAutoEdit Mode = "auto-edit"
	// ModeTrust runs everything that no rule denies.
	ModeTrust Mode = "trust"
	// ModePlan is read-only (Claude Code's plan mode): reads run, writes
	// and commands are denied whatever the allow rules say.
	ModePlan Mode = "plan"
	// ModeDontAsk never asks (Claude Code's dontAsk): what a rule or the
	// default mode would ask about is denied.
	ModeDontAsk Mode = "dont-ask"
)

// modeNames maps normalized spellings (lower case, no '-' or '_') to modes;
// the Claude Agent SDK's names are accepted so its clients work unchanged.
var modeNames = map[string]Mode{
	"default":     ModeDefault,
	"autoedit":    ModeAutoEdit,
	"acceptedits": ModeAutoEdit,
	// qwen's auto (a classifier approves the calls it deems safe): edits
	// run, commands ask unless the sandbox confines them (docs/qwen.md).
	"auto":              ModeAutoEdit,
	"trust":             ModeTrust,
	"yolo":              ModeTrust,
	"bypasspermissions": ModeTrust,
	"plan":              ModePlan,
	"dontask":           ModeDontAsk,
}

// ParseMode accepts "default", "auto-edit" (also "auto_edit", "autoEdit",
// "acceptEdits", qwen's "auto"), "trust" (also "yolo", "bypassPermissions"), "plan" and
// "dont-ask" ("dontAsk").
func ParseMode(s string) (Mode, error) {
	if m, ok := modeNames[normalize(s)]; ok {
		return m, nil
	}
	return "", fmt.Errorf("%w %q: use default, auto-edit (acceptEdits, auto), trust (yolo, bypassPermissions), plan or dont-ask (dontAsk)", ErrInvalidMode, s)
}

// Valid reports whether m is one of the modes.
func (m Mode) Valid() bool {
	switch m {
	case ModeDefault, ModeAutoEdit, ModeTrust, ModePlan, ModeDontAsk:
		return true
	}
	return false
}

// Action is what a rule or a decision says about a call.
type Action string

const (
	Allow Action = "allow"
	Ask   Action = "ask"
	Deny  Action = "deny"
)

// ParseAction accepts "allow", "ask" and "deny" in any case.
func ParseAction(s string) (Action, error) {
	switch a := Action(strings.ToLower(strings.TrimSpace(s))); a {
	case Allow, Ask, Deny:
		return a, nil
	}
	return "", fmt.Errorf("%w %q: use allow, ask or deny", ErrInvalidAction, s)
}

func (a Action) valid() bool { return a == Allow || a == Ask || a == Deny }

// Scope is where a rule lives.
type Scope string

const (
	// ScopeSession rules live in memory for the life of the Engine.
	ScopeSession Scope = "session"
	// ScopeProject rules live in <workspace>/.arbor/permissions.yaml.
	ScopeProject Scope = "project"
	// ScopeUser rules live in $XDG_CONFIG_HOME/arbor/permissions.yaml.
	ScopeUser Scope = "user"
)

// scopeOrder is the search order of allow and ask rules: narrowest first.
var scopeOrder = [...]Scope{ScopeSession, ScopeProject, ScopeUser}

var scopeNames = map[string]Scope{
	"session":         ScopeSession,
	"project":         ScopeProject,
	"projectsettings": ScopeProject,
	"localsettings":   ScopeProject,
	"user":            ScopeUser,
	"userglobal":      ScopeUser,
	"usersettings":    ScopeUser,
	"global":          ScopeUser,
}

// ParseScope accepts "session", "project" and "user" (also "user_global",
// "global" and the Claude Agent SDK's "projectSettings", "localSettings",
// "userSettings").
func ParseScope(s string) (Scope, error) {
	if sc, ok := scopeNames[normalize(s)]; ok {
		return sc, nil
	}
	return "", fmt.Errorf("%w %q: use session, project or user", ErrInvalidScope, s)
}

func (s Scope) valid() bool { return s == ScopeSession || s == ScopeProject || s == ScopeUser }

// Class is what a tool can do; the mode decides by it.
type Class int

const (
	ClassRead Class = iota
	ClassWrite
	ClassExecute
	// ClassNone is for interaction tools (ask the user, update a todo
	// list); the mode always allows them.
	ClassNone
	// ClassNetwork reaches a host (web_fetch): trust allows it, a host on
	// the sandbox's allow-list (Sandboxed) runs, the other modes ask.
	ClassNetwork
)

func (c Class) String() string {
	switch c {
	case ClassRead:
		return "read"
	case ClassWrite:
		return "write"
	case ClassExecute:
		return "execute"
	case ClassNone:
		return "none"
	case ClassNetwork:
		return "network"
	}
	return fmt.Sprintf("Class(%d)", int(c))
}

// Request is one call to judge.
type Request struct {
	Tool  string
	Class Class
	// Command is the shell command of an execute tool.
	Command string
	// Paths are the paths the call touches as the model gave them: relative
	// to the workspace, or absolute.
	Paths []string
	// Sandboxed says the command runs confined by the OS (package
	// tool/sandbox), or the host is on the sandbox's network allow-list:
	// where the mode would ask before running it, it runs. Rules still
	// apply: deny denies, ask asks.
	Sandboxed bool
	// Host is the host a network call reaches ("example.com",
	// "127.0.0.1"), matched by rules like "web_fetch(domain:example.com)".
	Host string
	// Private says Host is (or resolves to) a loopback, private or
	// link-local address: the call is denied, in every mode, unless an
	// allow rule names the host (it guards against request forgery).
	Private bool
}

// Decision is the verdict on a Request.
type Decision struct {
	Action Action
	// Reason is human-readable; the model may see it.
	Reason string
	// Rule is the rule that decided; nil when the mode or workspace
	// confinement did.
	Rule *Rule
	// SuggestedRule would allow this call and ones like it ("shell(go test
	// *)", "write_file(src/**)"); set on Ask decisions when one exists.
	SuggestedRule string
}

// normalize folds a name for tolerant comparison: lower case, without '_',
// '-' and surrounding space.
func normalize(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	return strings.NewReplacer("_", "", "-", "").Replace(s)
}
