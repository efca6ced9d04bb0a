package permission

import (
	"fmt"
	"os"
	"slices"
	"sync"
)

// Options configure an Engine.
type Options struct {
	// Mode is the starting mode; "" means ModeDefault. Aliases accepted by
	// ParseMode work here too.
	Mode Mode
	// Workspace confines file paths; "" means the working directory. It
	// must exist.
	Workspace string
	// Roots are directories that count as inside the workspace too
	// (a launching program's --add-dir); each must exist.
	Roots []string
	// ProjectFile and UserFile hold the persisted rules of those scopes;
	// "" leaves the scope unpersisted (rules can then not be added to it).
	// See DefaultProjectFile; the user file's place is the configuration's
	// (config.UserPermissionsFile).
	ProjectFile, UserFile string
	// ProjectRoleFile and UserRoleFile, when set, hold the rules of the
	// current role in those scopes (see rolefile.go): their rules are
	// added to the scope's, and rules added to the scope go there. See
	// SetRoleFiles.
	ProjectRoleFile, UserRoleFile string
	// Extra are rules of the project and user scopes that live in no
	// rule file of arbor's (a project's .claude/settings.json, mapped by
	// package project): they follow the scope's file rules, are never
	// written, and survive reloads.
	Extra []Rule
	// Tools returns the names a call's tool can have. A rule of a rule
	// file naming none of them (nor an MCP tool, mcp__…) is kept and
	// reported by Problems. It is called once, when a rule file first
	// has a rule (start-up need not make the list); nil takes every name.
	Tools func() []string
	// Rename, when set, rewrites each rule of a rule file before it is
	// parsed, and the tool name of each call before it is judged: the
	// caller's aliases, such as Claude Code's tool names ("Bash(rm *)" is
	// a rule of arbor's shell, and a Claude Code node's Bash call is
	// judged as a shell call).
	Rename func(rule string) string
}

// Engine decides tool calls. It is safe for concurrent use.
type Engine struct {
	ws    workspace
	files map[Scope]string // persisted scopes only
	// roleFiles are the current role's rule files (guarded by fileMu for
	// writers; reload reads them under fileMu or before New returns).
	roleFiles map[Scope]string
	// extra are Options.Extra by scope, tools Options.Tools; never
	// changed after New.
	extra map[Scope][]Rule
	// rename is Options.Rename (never nil); never changed after New.
	rename func(string) string
	tools  func() []string // Options.Tools, made once; nil knows every name

	// fileMu serializes AddRule and RemoveRule, file writes included, so
	// Decide never waits for the disk.
	fileMu sync.Mutex

	mu   sync.RWMutex // guards mode and rules
	mode Mode
	// rules per scope in scopeOrder; slices are replaced, never modified
	// in place, so Decide may use a snapshot without the lock.
	rules [len(scopeOrder)][]*matcher
	// unknown are the rules of each scope's files that name no tool of
	// tools (ErrUnknownTool), as of the scope's last reload.
	unknown [len(scopeOrder)][]error
}

// New builds an Engine and loads the rule files.
func New(o Options) (*Engine, error) {
	mode := ModeDefault
	if o.Mode != "" {
		m, err := ParseMode(string(o.Mode))
		if err != nil {
			return nil, err
		}
		mode = m
	}
	dir := o.Workspace
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, fmt.Errorf("workspace: %w", err)
		}
		dir = wd
	}
	ws, err := newWorkspace(dir)
	if err != nil {
		return nil, err
	}
	if err := ws.addRoots(o.Roots); err != nil {
		return nil, err
	}
	if fi, err := os.Stat(ws.real); err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("workspace %s: not a directory", ws.abs)
	}
	e := &Engine{ws: ws, mode: mode, files: map[Scope]string{}, roleFiles: map[Scope]string{}, extra: map[Scope][]Rule{}, tools: func() []string { return nil }, rename: o.Rename}
	if o.Tools != nil {
		e.tools = sync.OnceValue(o.Tools)
	}
	if e.rename == nil {
		e.rename = func(r string) string { return r }
	}
	for _, r := range o.Extra {
		if r.Scope != ScopeProject && r.Scope != ScopeUser {
			return nil, fmt.Errorf("%w %s: extra rules belong to the project or user scope, not %q", ErrInvalidRule, r, r.Scope)
		}
		if _, err := ParseRule(r.String(), r.Action, r.Scope); err != nil {
			return nil, err
		}
		e.extra[r.Scope] = append(e.extra[r.Scope], r)
	}
	for _, f := range []struct {
		scope      Scope
		path, role string
	}{{ScopeProject, o.ProjectFile, o.ProjectRoleFile}, {ScopeUser, o.UserFile, o.UserRoleFile}} {
		if f.path != "" {
			e.files[f.scope] = f.path
		}
		if f.role != "" {
			e.roleFiles[f.scope] = f.role
		}
		if err := e.reload(f.scope); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// SetRoleFiles makes project and user the role rule files of the project
// and user scopes ("" for none) and reloads those scopes: a role switch
// applies the new role's rules from the next decision. On error the
// previous files are kept.
func (e *Engine) SetRoleFiles(project, user string) error {
	e.fileMu.Lock()
	defer e.fileMu.Unlock()
	prev := e.roleFiles
	e.roleFiles = map[Scope]string{}
	if project != "" {
		e.roleFiles[ScopeProject] = project
	}
	if user != "" {
		e.roleFiles[ScopeUser] = user
	}
	for _, s := range []Scope{ScopeProject, ScopeUser} {
		if err := e.reload(s); err != nil {
			e.roleFiles = prev
			for _, s := range []Scope{ScopeProject, ScopeUser} {
				_ = e.reload(s) // back to the rules read before
			}
			return err
		}
	}
	return nil
}

// Problems are what is wrong with the rule files without stopping
// arbor: each rule that names no tool of Options.Tools (ErrUnknownTool),
// naming its file and entry, project scope first.
func (e *Engine) Problems() []error {
	e.mu.RLock()
	defer e.mu.RUnlock()
	var out []error
	for _, u := range e.unknown {
		out = append(out, u...)
	}
	return out
}

// Workspace is the absolute workspace directory as configured (symlinks
// not resolved).
func (e *Engine) Workspace() string { return e.ws.abs }

// Mode returns the current mode.
func (e *Engine) Mode() Mode {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.mode
}

// SetMode changes the mode for every later decision. An invalid mode is
// parsed as an alias and falls back to ModeDefault, the most careful one.
func (e *Engine) SetMode(m Mode) {
	if !m.Valid() {
		var err error
		if m, err = ParseMode(string(m)); err != nil {
			m = ModeDefault
		}
	}
	e.mu.Lock()
	e.mode = m
	e.mu.Unlock()
}

// Rules lists every rule: session, then project, then user, each in order.
func (e *Engine) Rules() []Rule {
	e.mu.RLock()
	defer e.mu.RUnlock()
	var out []Rule
	for _, ms := range e.rules {
		for _, m := range ms {
			out = append(out, m.rule)
		}
	}
	return out
}

// AddSessionRules adds session rules allowing each of allow and denying
// each of deny (--allowedTools, --disallowedTools); a rule that does not
// parse is an error naming its flag.
func (e *Engine) AddSessionRules(allow, deny []string) error {
	for _, set := range []struct {
		flag  string
		specs []string
		a     Action
	}{{"--allowedTools", allow, Allow}, {"--disallowedTools", deny, Deny}} {
		for _, spec := range set.specs {
			r, err := ParseRule(spec, set.a, ScopeSession)
			if err == nil {
				err = e.AddRule(r)
			}
			if err != nil {
				return fmt.Errorf("%s: %w", set.flag, err)
			}
		}
	}
	return nil
}

// AddRule adds r to its scope: in memory for the session scope, appended to
// the scope's file otherwise (the file is then reloaded, so edits made to
// it meanwhile are picked up). Adding a rule that exists is a no-op.
func (e *Engine) AddRule(r Rule) error {
	if _, err := ParseRule(r.String(), r.Action, r.Scope); err != nil {
		return err
	}
	m, err := compile(r, e.ws)
	if err != nil {
		return err
	}
	e.fileMu.Lock()
	defer e.fileMu.Unlock()
	if r.Scope == ScopeSession {
		e.mu.Lock()
		defer e.mu.Unlock()
		i := scopeIndex(r.Scope)
		if !slices.ContainsFunc(e.rules[i], func(o *matcher) bool { return o.rule.same(r) }) {
			e.rules[i] = append(slices.Clip(e.rules[i]), m)
		}
		return nil
	}
	path, err := e.file(r.Scope)
	if err != nil {
		return err
	}
	if err := e.reload(r.Scope); err != nil {
		return err
	}
	if slices.ContainsFunc(e.snapshot()[scopeIndex(r.Scope)], func(o *matcher) bool { return o.rule.same(r) }) {
		return nil
	}
	if role, ok := e.roleFiles[r.Scope]; ok {
		if err := appendRoleRule(role, r); err != nil {
			return err
		}
	} else if err := appendRule(path, r); err != nil {
		return err
	}
	return e.reload(r.Scope)
}

// RemoveRule deletes r (every copy of it) from its scope.
func (e *Engine) RemoveRule(r Rule) error {
	e.fileMu.Lock()
	defer e.fileMu.Unlock()
	if r.Scope == ScopeSession {
		e.mu.Lock()
		defer e.mu.Unlock()
		i := scopeIndex(r.Scope)
		kept := slices.DeleteFunc(slices.Clone(e.rules[i]), func(o *matcher) bool { return o.rule.same(r) })
		if len(kept) == len(e.rules[i]) {
			return fmt.Errorf("%w: %s (%s, %s scope)", ErrRuleNotFound, r, r.Action, r.Scope)
		}
		e.rules[i] = kept
		return nil
	}
	path, err := e.file(r.Scope)
	if err != nil {
		return err
	}
	found, err := removeRule(path, r)
	if err != nil {
		return err
	}
	if !found {
		return fmt.Errorf("%w: %s (%s, %s scope) in %s", ErrRuleNotFound, r, r.Action, r.Scope, path)
	}
	return e.reload(r.Scope)
}

func (e *Engine) file(s Scope) (string, error) {
	if !s.valid() {
		return "", fmt.Errorf("%w %q", ErrInvalidScope, s)
	}
	if path, ok := e.files[s]; ok {
		return path, nil
	}
	if path, ok := e.roleFiles[s]; ok {
		return path, nil
	}
	return "", fmt.Errorf("%w: no %s rule file is configured", ErrNotPersisted, s)
}

// reload replaces a file scope's rules with its files' content: the
// scope's file, then the role's.
func (e *Engine) reload(s Scope) error {
	var rules []Rule
	var unknown []error
	if path, ok := e.files[s]; ok {
		rs, err := loadRules(path, s, e.rename)
		if err != nil {
			return err
		}
		for i, r := range rs {
			if !knows(r, e.tools()) {
				unknown = append(unknown, unknownTool(fmt.Sprintf("%s: rule %d", path, i+1), r, e.tools()))
			}
		}
		rules = rs
	}
	if path, ok := e.roleFiles[s]; ok {
		rs, err := loadRoleRules(path, s, e.rename)
		if err != nil {
			return err
		}
		for _, r := range rs {
			if !knows(r, e.tools()) {
				unknown = append(unknown, unknownTool(fmt.Sprintf("%s: permission.%s", path, r.Tool), r, e.tools()))
			}
		}
		rules = append(rules, rs...)
	}
	rules = append(rules, e.extra[s]...)
	ms := make([]*matcher, 0, len(rules))
	for _, r := range rules {
		m, err := compile(r, e.ws)
		if err != nil {
			return fmt.Errorf("%w %s rules: %w", ErrRuleFile, s, err)
		}
		ms = append(ms, m)
	}
	e.mu.Lock()
	e.rules[scopeIndex(s)] = ms
	e.unknown[scopeIndex(s)] = unknown
	e.mu.Unlock()
	return nil
}

func (e *Engine) snapshot() [len(scopeOrder)][]*matcher {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.rules
}

func scopeIndex(s Scope) int {
	return slices.Index(scopeOrder[:], s)
}
