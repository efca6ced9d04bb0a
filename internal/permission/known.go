package permission

import (
	"errors"
	"fmt"
	"strings"
)

// ErrUnknownTool marks a rule of a rule file that names no tool in
// Options.Tools: the rule is kept (it can only ever match a call of that
// name, and there is none), and the mistake is reported by
// Engine.Problems, not refused, since such a name is most often a typo
// ("shel") and a stopped arbor would lose every other rule of the file.
var ErrUnknownTool = errors.New("names no tool arbor has")

// knows reports whether r names one of tools (as rules compare names:
// Names) or an MCP tool ("mcp__…": the servers' tools are not known before
// they start). A nil tools knows every name.
func knows(r Rule, tools []string) bool {
	if tools == nil || strings.HasPrefix(strings.ToLower(r.Tool), "mcp__") && len(r.Tool) > len("mcp__") {
		return true
	}
	for _, t := range tools {
		if r.Names(t) {
			return true
		}
	}
	return false
}

// unknownTool is the problem of rule r, the entry where of a rule file,
// naming no tool of tools: an error wrapping ErrUnknownTool that names
// the entry, the rule and, when one is close, the tool it likely meant.
func unknownTool(where string, r Rule, tools []string) error {
	hint := ""
	if near := Nearest(r.Tool, tools); near != "" {
		hint = fmt.Sprintf(" (did you mean %s?)", near)
	}
	return fmt.Errorf("%s %q (%s) %w%s; it is kept, and matches no call", where, r.String(), r.Action, ErrUnknownTool, hint)
}

// Nearest returns the name of names closest to name, compared as rules
// compare tool names (case, '_' and '-' ignored), when it is a likely
// typo of it: at most two edits away, and fewer than half of name's
// letters. "" when none is. A name equal to one of names but for case,
// '_' or '-' is zero edits away.
func Nearest(name string, names []string) string {
	n := []rune(normalize(name))
	best, bestD := "", 3
	for _, c := range names {
		d := editDistance(n, []rune(normalize(c)))
		if d < bestD && 2*d < len(n) {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the Damerau–Levenshtein distance of a and b (insertions,
// deletions, substitutions and swaps of neighbours, each one edit).
func editDistance(a, b []rune) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
