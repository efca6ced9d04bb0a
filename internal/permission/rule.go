package permission

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Rule allows, asks for or denies calls of one tool, optionally only those
// whose main argument (command or path) matches Pattern.
type Rule struct {
	Tool string
	// Pattern is a glob over the tool's main argument; "" matches every
	// call of the tool.
	Pattern string
	Action  Action
	Scope   Scope
}

// regexPrefix marks a pattern that is a regular expression rather than a
// glob: "shell(re:^git status$)".
const regexPrefix = "re:"

// ParseRule reads "tool", "tool(pattern)" or the form of spec 000 (the
// envelope protocol), "tool:regex", which it reads as "tool(re:regex)": a
// regular expression (Go syntax, unanchored unless it says ^ or $) over
// the command, or over the path as given relative to the workspace or
// absolute. "tool:rest" is a tool name when rest is itself a valid tool
// name ("mcp:server"), so a one-word regex needs the parenthesised form.
// A spec that is not UTF-8 is refused: its pattern could not compile.
func ParseRule(spec string, a Action, s Scope) (Rule, error) {
	spec = strings.TrimSpace(spec)
	if !utf8.ValidString(spec) {
		// A pattern compiles to a regular expression, which must be
		// UTF-8: refused here, not when the rule is added.
		return Rule{}, fmt.Errorf("%w %q: not valid UTF-8", ErrInvalidRule, spec)
	}
	if i := strings.IndexByte(spec, ':'); i > 0 && !globForm(spec) {
		if tool, re := spec[:i], spec[i+1:]; validTool(tool) && re != "" && !validTool(re) {
			spec = tool + "(" + regexPrefix + re + ")"
		}
	}
	tool, pattern := spec, ""
	if i := strings.IndexByte(spec, '('); i >= 0 {
		if !strings.HasSuffix(spec, ")") {
			return Rule{}, fmt.Errorf("%w %q: missing closing parenthesis", ErrInvalidRule, spec)
		}
		tool, pattern = strings.TrimSpace(spec[:i]), strings.TrimSpace(spec[i+1:len(spec)-1])
		if pattern == "" {
			return Rule{}, fmt.Errorf("%w %q: empty pattern (write %q to match every call)", ErrInvalidRule, spec, tool)
		}
	}
	if expr, ok := strings.CutPrefix(pattern, regexPrefix); ok {
		if _, err := regexp.Compile(expr); err != nil {
			return Rule{}, fmt.Errorf("%w %q: %w", ErrInvalidRule, spec, err)
		}
	}
	if !validTool(tool) && mcpServerPrefix(tool) == "" || strings.Contains(tool, "*") && pattern != "" {
		return Rule{}, fmt.Errorf("%w %q: a rule is tool or tool(pattern), tool made of letters, digits, '_', '-', '.', ':' (or mcp__server__* for every tool of an MCP server)", ErrInvalidRule, spec)
	}
	if !a.valid() {
		return Rule{}, fmt.Errorf("%w %q: %w %q", ErrInvalidRule, spec, ErrInvalidAction, a)
	}
	if !s.valid() {
		return Rule{}, fmt.Errorf("%w %q: %w %q", ErrInvalidRule, spec, ErrInvalidScope, s)
	}
	return Rule{Tool: tool, Pattern: pattern, Action: a, Scope: s}, nil
}

// globForm reports whether spec is "tool(pattern)" with a valid tool.
func globForm(spec string) bool {
	i := strings.IndexByte(spec, '(')
	return i > 0 && strings.HasSuffix(spec, ")") && validTool(strings.TrimSpace(spec[:i]))
}

// String writes the rule the way ParseRule reads it, without action and
// scope.
func (r Rule) String() string {
	if r.Pattern == "" {
		return r.Tool
	}
	return r.Tool + "(" + r.Pattern + ")"
}

// Names reports whether r is about the tool called name, whatever its
// pattern: the same name compared tolerantly (case, '_' and '-' ignored),
// or, for a rule naming an MCP server ("mcp__github", "mcp__github__*"),
// any tool of that server.
func (r Rule) Names(name string) bool {
	m := matcher{rule: r, tool: normalize(r.Tool), mcpPrefix: mcpServerPrefix(r.Tool)}
	return m.appliesTo(name)
}

// same reports whether r and o are the same rule, tool names compared
// tolerantly.
func (r Rule) same(o Rule) bool {
	return normalize(r.Tool) == normalize(o.Tool) && r.Pattern == o.Pattern &&
		r.Action == o.Action && r.Scope == o.Scope
}

func validTool(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '_' || c == '-' || c == '.' || c == ':'
		if !ok {
			return false
		}
	}
	return true
}

// matcher is a rule compiled against one workspace.
type matcher struct {
	rule Rule
	tool string // normalized
	// mcpPrefix is "mcp__server__" (lower case) for a rule naming every
	// tool of an MCP server; "" otherwise.
	mcpPrefix string
	// command matches one simple command; nil when the rule has no pattern.
	command *regexp.Regexp
	// paths match absolute paths: the pattern anchored at the workspace
	// (relative patterns) or as written, plus variants with symlinks in
	// its literal prefix resolved. Empty when the rule has no pattern.
	paths []*regexp.Regexp
	// regex is the rule's regular expression (pattern "re:…"), matched
	// against a path both absolute and relative to ws; nil for globs.
	regex *regexp.Regexp
	ws    workspace
	// domain is the host a "domain:…" pattern names ("example.com", or
	// "*.example.com" for it and its subdomains); "" otherwise.
	domain string
}

func compile(r Rule, ws workspace) (*matcher, error) {
	m := &matcher{rule: r, tool: normalize(r.Tool), mcpPrefix: mcpServerPrefix(r.Tool)}
	if r.Pattern == "" {
		return m, nil
	}
	var err error
	if d, ok := strings.CutPrefix(r.Pattern, domainPrefix); ok {
		d = strings.ToLower(strings.TrimSpace(d))
		if d == "" || strings.ContainsAny(d, "/ ") || strings.Contains(strings.TrimPrefix(d, "*."), "*") {
			return nil, fmt.Errorf("%w %q: a domain pattern is a host name such as example.com or *.example.com", ErrInvalidRule, r)
		}
		m.domain = d
		return m, nil
	}
	if expr, ok := strings.CutPrefix(r.Pattern, regexPrefix); ok {
		re, err := regexp.Compile(expr)
		if err != nil {
			return nil, fmt.Errorf("%w %q: %w", ErrInvalidRule, r, err)
		}
		m.command, m.regex, m.ws = re, re, ws
		return m, nil
	}
	if m.command, err = commandGlob(r.Pattern); err != nil {
		return nil, fmt.Errorf("%w %q: %w", ErrInvalidRule, r, err)
	}
	for _, p := range pathPatterns(r.Pattern, ws) {
		re, err := pathGlob(p)
		if err != nil {
			return nil, fmt.Errorf("%w %q: %w", ErrInvalidRule, r, err)
		}
		m.paths = append(m.paths, re)
	}
	return m, nil
}

// pathPatterns turns a rule's path pattern into absolute patterns.
func pathPatterns(p string, ws workspace) []string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			p = escapeGlob(filepath.ToSlash(home)) + p[1:]
		}
	}
	if !strings.HasPrefix(p, "/") {
		out := []string{path.Join(escapeGlob(filepath.ToSlash(ws.real)), p)}
		if ws.abs != ws.real {
			out = append(out, path.Join(escapeGlob(filepath.ToSlash(ws.abs)), p))
		}
		return out
	}
	p = path.Clean(p)
	out := []string{p}
	// "/tmp/**" must also match when /tmp is a symlink (macOS).
	lit := p
	if i := strings.IndexAny(p, `*?\`); i >= 0 {
		lit = p[:strings.LastIndexByte(p[:i], '/')+1]
	}
	if lit != "" && lit != "/" {
		if real, err := realpath(filepath.FromSlash(lit)); err == nil {
			real = escapeGlob(filepath.ToSlash(real))
			if want := strings.TrimSuffix(lit, "/"); real != want {
				out = append(out, real+p[len(want):])
			}
		}
	}
	return out
}

// domainPrefix starts a rule pattern naming a host: "domain:example.com".
const domainPrefix = "domain:"

// matchHost reports whether the rule covers a call to host: a rule
// without a pattern does, a domain pattern naming it (or, for
// "*.example.com", a domain it is under) does; no other pattern does.
func (m *matcher) matchHost(host string) bool {
	if m.bare() {
		return true
	}
	if m.domain == "" || host == "" {
		return false
	}
	host = strings.ToLower(host)
	if base, ok := strings.CutPrefix(m.domain, "*."); ok {
		return host == base || strings.HasSuffix(host, "."+base)
	}
	return host == m.domain
}

// bare reports whether the rule has no pattern and so matches every call.
func (m *matcher) bare() bool { return m.rule.Pattern == "" }

// appliesTo reports whether the rule names the tool called name: the same
// name compared tolerantly, or, for a rule naming an MCP server
// ("mcp__github" or "mcp__github__*"), any tool of that server.
func (m *matcher) appliesTo(name string) bool {
	if m.mcpPrefix != "" {
		return strings.HasPrefix(strings.ToLower(strings.TrimSpace(name)), m.mcpPrefix)
	}
	return m.tool == normalize(name)
}

// mcpServerPrefix returns "mcp__server__" for a rule tool naming every
// tool of an MCP server ("mcp__server", "mcp__server__*"), "" otherwise.
func mcpServerPrefix(tool string) string {
	t := strings.ToLower(tool)
	rest, ok := strings.CutPrefix(t, "mcp__")
	if !ok || rest == "" {
		return ""
	}
	if server, ok := strings.CutSuffix(rest, "__*"); ok && validTool(server) && !strings.Contains(server, "__") {
		return "mcp__" + server + "__"
	}
	if validTool(rest) && !strings.Contains(rest, "__") {
		return "mcp__" + rest + "__"
	}
	return ""
}

// matchSegment matches one simple shell command.
func (m *matcher) matchSegment(seg string) bool {
	return m.bare() || m.command.MatchString(seg)
}

// matchPath reports whether the rule covers the path: every resolved form
// must match when strict (allow and ask), any form including the
// unresolved one otherwise (deny).
func (m *matcher) matchPath(r resolved, strict bool) bool {
	if m.bare() {
		return true
	}
	if strict {
		for _, real := range r.reals {
			if !m.anyPath(real) {
				return false
			}
		}
		return true
	}
	if m.anyPath(r.abs) {
		return true
	}
	for _, real := range r.reals {
		if m.anyPath(real) {
			return true
		}
	}
	return false
}

// namesPath reports whether the rule's pattern explicitly matches a path
// outside the workspace; a rule without a pattern never does.
func (m *matcher) namesPath(r resolved) bool {
	return !m.bare() && m.matchPath(r, true)
}

func (m *matcher) anyPath(p string) bool {
	if m.regex != nil {
		return m.regexPath(p)
	}
	p = filepath.ToSlash(p)
	for _, re := range m.paths {
		if re.MatchString(p) {
			return true
		}
	}
	return false
}

// regexPath matches a regex rule against the absolute path p and, when p
// is in the workspace, against its form relative to the workspace.
func (m *matcher) regexPath(p string) bool {
	if m.regex.MatchString(filepath.ToSlash(p)) {
		return true
	}
	for _, root := range []string{m.ws.real, m.ws.abs} {
		if rel, err := filepath.Rel(root, p); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			if m.regex.MatchString(filepath.ToSlash(rel)) {
				return true
			}
		}
	}
	return false
}
