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
	// ProjectFile and UserFile hold the persisted rules of those scopes;
	// "" leaves the scope unpersisted (rules can then not be added to it).
	// See DefaultProjectFile; the user file's place is the configuration's
	// (config.UserPermissionsFile).
	ProjectFile, UserFile string
}

// Engine decides tool calls. It is safe for concurrent use.
type Engine struct {
	ws    workspace
	files map[Scope]string // persisted scopes only

	// fileMu serializes AddRule and RemoveRule, file writes included, so
	// Decide never waits for the disk.
	fileMu sync.Mutex

	mu   sync.RWMutex // guards mode and rules
	mode Mode
	// rules per scope in scopeOrder; slices are replaced, never modified
	// in place, so Decide may use a snapshot without the lock.
	rules [len(scopeOrder)][]*matcher
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
	if fi, err := os.Stat(ws.real); err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("workspace %s: not a directory", ws.abs)
	}
	e := &Engine{ws: ws, mode: mode, files: map[Scope]string{}}
	for _, f := range []struct {
		scope Scope
		path  string
	}{{ScopeProject, o.ProjectFile}, {ScopeUser, o.UserFile}} {
		if f.path == "" {
			continue
		}
		e.files[f.scope] = f.path
		if err := e.reload(f.scope); err != nil {
			return nil, err
		}
	}
	return e, nil
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
	if err := appendRule(path, r); err != nil {
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
	path, ok := e.files[s]
	if !ok {
		return "", fmt.Errorf("%w: no %s rule file is configured", ErrNotPersisted, s)
	}
	return path, nil
}

// reload replaces a file scope's rules with the file's content.
func (e *Engine) reload(s Scope) error {
	rules, err := loadRules(e.files[s], s)
	if err != nil {
		return err
	}
	ms := make([]*matcher, 0, len(rules))
	for _, r := range rules {
		m, err := compile(r, e.ws)
		if err != nil {
			return fmt.Errorf("%w %s: %w", ErrRuleFile, e.files[s], err)
		}
		ms = append(ms, m)
	}
	e.mu.Lock()
	e.rules[scopeIndex(s)] = ms
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
