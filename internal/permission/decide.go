package permission

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
)

// call is a Request prepared for matching.
type call struct {
	req   Request
	tool  string     // normalized
	paths []resolved // every path of the request
	// sensitive holds, for each path a write names, the sensitive file it
	// is ("" for none; sensitive.go).
	sensitive []string
	cmd       *command // nil when the request has no command
}

// Decide judges one call; see the package doc for the precedence.
func (e *Engine) Decide(r Request) Decision {
	e.mu.RLock()
	mode, rules := e.mode, e.rules
	e.mu.RUnlock()

	// A call named by an alias (a Claude Code node's Bash) is judged as
	// the tool it names, by the rules written for that tool.
	r.Tool = e.rename(r.Tool)
	c := call{req: r, tool: normalize(r.Tool)}
	for _, p := range r.Paths {
		rp, err := e.ws.resolve(p)
		if err != nil {
			return Decision{Action: Deny, Reason: fmt.Sprintf("cannot check path %q: %v", p, err)}
		}
		c.paths = append(c.paths, rp)
		if r.Class == ClassWrite {
			c.sensitive = append(c.sensitive, e.ws.sensitive(rp))
		} else {
			c.sensitive = append(c.sensitive, "")
		}
	}
	if r.Command != "" {
		cmd := parseCommand(r.Command)
		c.cmd = &cmd
	}

	if d, ok := denied(rules, c); ok {
		return d
	}
	if r.Host != "" && r.Private && !namedHost(rules, r.Tool, r.Host) {
		return Decision{Action: Deny, Reason: fmt.Sprintf(
			"%s is a loopback, private or link-local address, which %s does not reach unless a rule allows it, in every mode; allow it with a rule such as %s(domain:%s)",
			r.Host, r.Tool, r.Tool, r.Host)}
	}
	for _, p := range c.paths {
		if p.outside != "" && !namedByAllowRule(rules, c.req.Tool, p) {
			return Decision{Action: Deny, Reason: fmt.Sprintf(
				"%s is outside the workspace %s; allow it with a rule such as %s",
				p.describe(), e.ws.abs, suggestPath(r.Tool, e.ws, []resolved{p}))}
		}
	}
	if mode == ModePlan && (r.Class == ClassWrite || r.Class == ClassExecute) {
		return Decision{Action: Deny, Reason: fmt.Sprintf("plan mode is read-only: %s is not run", r.Tool)}
	}
	if d, ok := byRule(rules, c); ok {
		if d.Action == Ask {
			if mode == ModeDontAsk {
				return Decision{Action: Deny, Rule: d.Rule, Reason: "dont-ask mode denies what would need approval: " + d.Reason}
			}
			d.SuggestedRule = suggest(c, e.ws)
		}
		return d
	}
	d := byMode(mode, r)
	if d.Action == Allow && mode == ModeAutoEdit && r.Class == ClassWrite {
		for _, s := range c.sensitive {
			if s != "" {
				d = Decision{Action: Ask, Reason: fmt.Sprintf(
					"%s needs approval: %s is read by arbor, git, an editor or a shell running with your rights, so auto-edit mode asks before writing it",
					r.Tool, filepath.ToSlash(s))}
				break
			}
		}
	}
	if d.Action == Ask && mode == ModeDontAsk {
		return Decision{Action: Deny, Reason: "dont-ask mode denies what would need approval: " + d.Reason}
	}
	if d.Action == Ask {
		d.SuggestedRule = suggest(c, e.ws)
		switch {
		case c.cmd != nil && c.cmd.substitution:
			d.Reason += "; commands with $(…), backticks or process substitution are never allowed by a rule"
		case c.cmd != nil && c.cmd.malformed:
			d.Reason += "; the command has an unterminated quote"
		case c.cmd != nil && len(c.cmd.segments) > 1:
			d.Reason += "; a compound command is allowed by rules only when every part is"
		}
	}
	return d
}

// denied finds a deny rule matching any part of the call.
func denied(rules [len(scopeOrder)][]*matcher, c call) (Decision, bool) {
	for i, ms := range rules {
		for _, m := range ms {
			if m.rule.Action != Deny || !m.appliesTo(c.req.Tool) || !m.denies(c) {
				continue
			}
			rule := m.rule
			return Decision{Action: Deny, Rule: &rule,
				Reason: fmt.Sprintf("rule %s in the %s scope denies it", rule, scopeOrder[i])}, true
		}
	}
	return Decision{}, false
}

func (m *matcher) denies(c call) bool {
	switch {
	case m.bare():
		return true
	case c.req.Host != "":
		return m.matchHost(c.req.Host)
	case c.cmd != nil:
		for _, f := range c.cmd.denyForms() {
			if m.matchSegment(f) {
				return true
			}
		}
		return false
	}
	for _, p := range c.paths {
		if m.matchPath(p, false) {
			return true
		}
	}
	return false
}

// namedHost reports whether an allow rule names host by a domain pattern
// (a rule without a pattern does not: a private address needs its name).
func namedHost(rules [len(scopeOrder)][]*matcher, tool, host string) bool {
	for _, ms := range rules {
		for _, m := range ms {
			if m.rule.Action == Allow && m.appliesTo(tool) && m.domain != "" && m.matchHost(host) {
				return true
			}
		}
	}
	return false
}

func namedByAllowRule(rules [len(scopeOrder)][]*matcher, tool string, p resolved) bool {
	for _, ms := range rules {
		for _, m := range ms {
			if m.rule.Action == Allow && m.appliesTo(tool) && m.namesPath(p) {
				return true
			}
		}
	}
	return false
}

// byRule applies allow and ask rules. Each item of the call (a simple
// command, a path, or the call itself when it has neither) takes the first
// matching rule in scope order, but for a project's allow where the user
// has an ask; any ask asks, and the call is allowed only when every item
// is.
func byRule(rules [len(scopeOrder)][]*matcher, c call) (Decision, bool) {
	var items []func(*matcher) bool
	switch {
	case c.req.Host != "":
		items = append(items, func(m *matcher) bool { return m.matchHost(c.req.Host) })
	case c.cmd != nil:
		for _, seg := range c.cmd.segments {
			items = append(items, func(m *matcher) bool { return m.matchSegment(seg) })
		}
	case len(c.paths) > 0:
		for i, p := range c.paths {
			// A rule without a pattern does not allow writing a
			// sensitive file (sensitive.go).
			guarded := c.sensitive[i] != ""
			items = append(items, func(m *matcher) bool {
				return m.matchPath(p, true) && !(guarded && m.bare() && m.rule.Action == Allow)
			})
		}
	default:
		items = append(items, func(m *matcher) bool { return m.bare() })
	}
	noAllow := c.cmd != nil && c.cmd.unsafe()
	var allowedBy []Rule
	complete := len(items) > 0
	for _, match := range items {
		m, scope := first(rules, c.req.Tool, noAllow, match)
		if m != nil && m.rule.Action == Allow && scope == ScopeProject {
			// A repository's allow does not lift the user's own ask (as
			// in Claude Code, where an ask rule in any file wins).
			if a := userAsk(rules, c.req.Tool, match); a != nil {
				m, scope = a, ScopeUser
			}
		}
		switch {
		case m == nil:
			complete = false
		case m.rule.Action == Ask:
			rule := m.rule
			return Decision{Action: Ask, Rule: &rule,
				Reason: fmt.Sprintf("rule %s in the %s scope asks for approval", rule, scope)}, true
		case !containsRule(allowedBy, m.rule):
			allowedBy = append(allowedBy, m.rule)
		}
	}
	if !complete {
		return Decision{}, false
	}
	names := make([]string, len(allowedBy))
	for i, r := range allowedBy {
		names[i] = fmt.Sprintf("%s (%s)", r, r.Scope)
	}
	rule := allowedBy[0]
	return Decision{Action: Allow, Rule: &rule, Reason: "allowed by rule " + strings.Join(names, ", ")}, true
}

func first(rules [len(scopeOrder)][]*matcher, tool string, noAllow bool, match func(*matcher) bool) (*matcher, Scope) {
	for i, ms := range rules {
		for _, m := range ms {
			if m.rule.Action == Deny || noAllow && m.rule.Action == Allow || !m.appliesTo(tool) {
				continue
			}
			if match(m) {
				return m, scopeOrder[i]
			}
		}
	}
	return nil, ""
}

// userAsk is the first of the user's ask rules that match.
func userAsk(rules [len(scopeOrder)][]*matcher, tool string, match func(*matcher) bool) *matcher {
	for _, m := range rules[len(scopeOrder)-1] {
		if m.rule.Action == Ask && m.appliesTo(tool) && match(m) {
			return m
		}
	}
	return nil
}

func containsRule(rs []Rule, r Rule) bool {
	for _, o := range rs {
		if o.same(r) {
			return true
		}
	}
	return false
}

// byMode is the answer when no rule decides.
func byMode(mode Mode, r Request) Decision {
	allow := func(why string) Decision { return Decision{Action: Allow, Reason: why} }
	switch {
	case r.Class == ClassNone:
		return allow("interaction tools always run")
	case mode == ModeTrust:
		return allow("trust mode allows every call no rule denies")
	case r.Class == ClassRead:
		return allow(fmt.Sprintf("%s mode allows reading", mode))
	case r.Class == ClassWrite && mode == ModeAutoEdit:
		return allow("auto-edit mode allows writing")
	case r.Class == ClassExecute && r.Sandboxed:
		return allow("the command runs in the sandbox")
	case r.Class == ClassNetwork && r.Sandboxed:
		return allow("the host is on the sandbox's network allow-list")
	}
	what := "writing"
	switch {
	case r.Class == ClassNetwork:
		what = "reaching " + r.Host
	case strings.HasPrefix(strings.ToLower(r.Tool), "mcp__"):
		what = "calling MCP tools"
	case r.Class != ClassWrite:
		what = "running commands"
	}
	return Decision{Action: Ask, Reason: fmt.Sprintf("%s needs approval: %s mode asks before %s", r.Tool, mode, what)}
}

// suggest proposes a rule allowing this call and ones like it, "" when no
// sensible one exists (compound commands, substitutions, mixed folders).
func suggest(c call, ws workspace) string {
	if c.req.Host != "" {
		return c.req.Tool + "(" + domainPrefix + strings.ToLower(c.req.Host) + ")"
	}
	if c.cmd != nil {
		if c.cmd.unsafe() || len(c.cmd.segments) != 1 {
			return ""
		}
		words := strings.Split(c.cmd.segments[0], " ")
		if !programWord().MatchString(words[0]) {
			return ""
		}
		prefix := words[0]
		if len(words) > 1 && subcommandWord().MatchString(words[1]) {
			prefix += " " + words[1]
		}
		return c.req.Tool + "(" + prefix + " *)"
	}
	return suggestPath(c.req.Tool, ws, c.paths)
}

// programWord and subcommandWord match the words a suggested rule keeps;
// compiled on first use, at the first command that asks.
var (
	programWord    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9._/+-]+$`) })
	subcommandWord = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9_:-]*$`) })
)

// suggestPath proposes tool(<folder>/**) for the folder holding the paths:
// relative inside the workspace, absolute outside it.
func suggestPath(tool string, ws workspace, paths []resolved) string {
	pattern := ""
	for i, p := range paths {
		real := p.reals[0]
		if p.outside != "" {
			real = p.outside
		}
		var g string
		switch dir := filepath.Dir(real); {
		case real == ws.real:
			g = "**"
		case dir == ws.real:
			g = "*"
		case within(ws.real, dir):
			rel, _ := filepath.Rel(ws.real, dir)
			g = escapeGlob(filepath.ToSlash(rel)) + "/**"
		default:
			g = strings.TrimSuffix(escapeGlob(filepath.ToSlash(dir)), "/") + "/**"
		}
		if i > 0 && g != pattern {
			return ""
		}
		pattern = g
	}
	if pattern == "" {
		return ""
	}
	return tool + "(" + pattern + ")"
}
