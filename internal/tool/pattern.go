package tool

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// maxBraceAlternatives bounds brace expansion so "{a,b}{c,d}…" cannot blow up.
const maxBraceAlternatives = 1024

// globPattern matches slash-separated relative paths. Besides path.Match
// syntax (*, ?, [..], \) it supports "**" as a whole segment, matching zero
// or more directories, and {a,b} alternatives, which may contain '/'.
type globPattern struct {
	source string
	alts   [][]string // each alternative split into segments
}

var errBadPattern = errors.New("bad pattern")

func compileGlob(pattern string) (*globPattern, error) {
	if pattern == "" {
		return nil, fmt.Errorf("%w: empty", errBadPattern)
	}
	expanded, err := expandBraces(pattern)
	if err != nil {
		return nil, err
	}
	g := &globPattern{source: pattern}
	for _, alt := range expanded {
		segs := strings.Split(strings.Trim(alt, "/"), "/")
		for _, s := range segs {
			if s == "**" {
				continue
			}
			if _, err := path.Match(s, ""); err != nil {
				return nil, fmt.Errorf("%w %q: %v", errBadPattern, pattern, err)
			}
		}
		g.alts = append(g.alts, segs)
	}
	return g, nil
}

// match reports whether the slash-separated relative path rel matches.
func (g *globPattern) match(rel string) bool {
	parts := strings.Split(rel, "/")
	for _, alt := range g.alts {
		if matchSegments(alt, parts) {
			return true
		}
	}
	return false
}

func matchSegments(pat, parts []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for len(pat) > 0 && pat[0] == "**" {
				pat = pat[1:]
			}
			if len(pat) == 0 {
				return true
			}
			for i := range len(parts) + 1 {
				if matchSegments(pat, parts[i:]) {
					return true
				}
			}
			return false
		}
		if len(parts) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], parts[0]); !ok {
			return false
		}
		pat, parts = pat[1:], parts[1:]
	}
	return len(parts) == 0
}

// expandBraces turns "a{b,c}d" into ["abd", "acd"], recursively.
func expandBraces(p string) ([]string, error) {
	open := -1
	depth := 0
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			i++
		case '{':
			if depth == 0 {
				open = i
			}
			depth++
		case '}':
			if depth == 0 {
				continue
			}
			depth--
			if depth > 0 {
				continue
			}
			var out []string
			for _, choice := range splitTopLevel(p[open+1 : i]) {
				rest, err := expandBraces(p[:open] + choice + p[i+1:])
				if err != nil {
					return nil, err
				}
				out = append(out, rest...)
				if len(out) > maxBraceAlternatives {
					return nil, fmt.Errorf("%w %q: more than %d brace alternatives", errBadPattern, p, maxBraceAlternatives)
				}
			}
			return out, nil
		}
	}
	if depth > 0 {
		return nil, fmt.Errorf("%w %q: unclosed '{'", errBadPattern, p)
	}
	return []string{p}, nil
}

// splitTopLevel splits s on commas outside nested braces.
func splitTopLevel(s string) []string {
	var parts []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '{':
			depth++
		case '}':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, s[start:])
}

// staticPrefix splits a pattern into its leading directories without
// wildcards and the rest: "src/app/**/*.go" → ("src/app", "**/*.go").
func staticPrefix(pattern string) (dir, rest string) {
	segs := strings.Split(pattern, "/")
	i := 0
	for i < len(segs)-1 && !strings.ContainsAny(segs[i], `*?[{\`) {
		i++
	}
	dir = strings.Join(segs[:i], "/")
	if dir == "" && strings.HasPrefix(pattern, "/") {
		dir = "/"
	}
	return dir, strings.Join(segs[i:], "/")
}
