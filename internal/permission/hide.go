package permission

// Hides reports whether a deny rule with a path pattern, written for tool
// or for read_file, matches path (absolute, or relative to the
// workspace): a tool that walks a folder (grep, glob, list_directory)
// leaves such a path out, so that searching "." does not show what a rule
// keeps from being read (as Claude Code applies its Read rules to Grep
// and Glob). A rule without a pattern denies the call itself, before the
// walk, so it hides nothing here. It costs nothing when no such rule
// exists; otherwise path is resolved as a call's is.
func (e *Engine) Hides(tool, path string) bool {
	e.mu.RLock()
	rules := e.rules
	e.mu.RUnlock()
	tool = e.rename(tool)
	var ms []*matcher
	for _, scope := range rules {
		for _, m := range scope {
			if m.rule.Action == Deny && !m.bare() && (m.appliesTo(tool) || m.appliesTo("read_file")) {
				ms = append(ms, m)
			}
		}
	}
	if len(ms) == 0 {
		return false
	}
	rp, err := e.ws.resolve(path)
	if err != nil {
		return false // the walk's own open fails or finds nothing
	}
	for _, m := range ms {
		if m.matchPath(rp, false) {
			return true
		}
	}
	return false
}

// DeniesWhole reports whether a deny rule without a pattern names tool
// ("mcp__github__delete_repo", or the whole server: "mcp__github",
// "mcp__github__*"): every call of it is denied, so it need not be
// offered to the model at all, as Claude Code leaves such a tool out. A
// rule with a pattern denies only the calls it matches.
func (e *Engine) DeniesWhole(tool string) bool {
	e.mu.RLock()
	rules := e.rules
	e.mu.RUnlock()
	tool = e.rename(tool)
	for _, scope := range rules {
		for _, m := range scope {
			if m.rule.Action == Deny && m.bare() && m.appliesTo(tool) {
				return true
			}
		}
	}
	return false
}
