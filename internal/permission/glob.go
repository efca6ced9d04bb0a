package permission

import (
	"regexp"
	"strings"
)

// commandGlob compiles a shell pattern: '*' matches anything (spaces and
// '/' included), runs of spaces match one space, and a trailing " *" or
// ":*" also matches the bare prefix ("git *" covers "git").
func commandGlob(pattern string) (*regexp.Regexp, error) {
	p := strings.Join(strings.Fields(pattern), " ")
	bare := false
	for _, suffix := range []string{" *", ":*"} {
		if rest, ok := strings.CutSuffix(p, suffix); ok && rest != "" {
			p, bare = rest, true
			break
		}
	}
	parts := strings.Split(p, "*")
	for i, part := range parts {
		parts[i] = regexp.QuoteMeta(part)
	}
	expr := `(?s)^` + strings.Join(parts, ".*")
	if bare {
		expr += `(?: .*)?`
	}
	return regexp.Compile(expr + `$`)
}

// pathGlob compiles a slash-separated path pattern: '*' and '?' stay in one
// directory, '**' crosses directories ("a/**/b" also matches "a/b", "a/**"
// also matches "a"), '\' escapes the next character.
func pathGlob(pattern string) (*regexp.Regexp, error) {
	var b strings.Builder
	b.WriteString(`(?s)^`)
	n := len(pattern)
	for i := 0; i < n; i++ {
		c := pattern[i]
		switch {
		case c == '\\' && i+1 < n:
			i++
			b.WriteString(regexp.QuoteMeta(pattern[i : i+1]))
		case c == '/' && pattern[i+1:] == "**":
			b.WriteString(`(?:/.*)?`)
			i = n
		case c == '*' && i+1 < n && pattern[i+1] == '*':
			i++
			if (i == 1 || pattern[i-2] == '/') && i+1 < n && pattern[i+1] == '/' {
				b.WriteString(`(?:.*/)?`)
				i++
			} else {
				b.WriteString(`.*`)
			}
		case c == '*':
			b.WriteString(`[^/]*`)
		case c == '?':
			b.WriteString(`[^/]`)
		default:
			b.WriteString(regexp.QuoteMeta(pattern[i : i+1]))
		}
	}
	b.WriteString(`$`)
	return regexp.Compile(b.String())
}

// escapeGlob quotes the characters pathGlob treats specially.
func escapeGlob(s string) string {
	return strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`).Replace(s)
}
