package project

import (
	"strconv"
	"strings"
)

// expandArguments fills Claude Code's placeholders of a command's or a
// skill's body with args, as Claude Code does:
//
//   - $ARGUMENTS is args whole;
//   - $ARGUMENTS[N] and its shorthand $N are the argument at 0-based
//     index N ($0 the first, $1 the second), arguments split as a shell
//     splits words ("a b" is one); a placeholder with no such argument
//     is left as written;
//   - \$ before one of them is a plain "$";
//   - a body that uses none gets "ARGUMENTS: args" appended when there
//     are arguments and appendUnused (a command's; a skill's answer
//     gives them in its own element).
func expandArguments(body, args string, appendUnused bool) string {
	args = strings.TrimSpace(args)
	var words []string
	word := func(i int) (string, bool) {
		if words == nil {
			words = splitWords(args)
		}
		if i < len(words) {
			return words[i], true
		}
		return "", false
	}
	var b strings.Builder
	used := false
	for i := 0; i < len(body); {
		c := body[i]
		if c == '\\' && i+1 < len(body) && body[i+1] == '$' && placeholder(body[i+2:]) {
			b.WriteByte('$')
			i += 2
			continue
		}
		if c != '$' {
			b.WriteByte(c)
			i++
			continue
		}
		rest := body[i+1:]
		if n, size, ok := index(rest); ok {
			if w, ok := word(n); ok {
				b.WriteString(w)
				used = true
			} else {
				b.WriteString(body[i : i+1+size])
			}
			i += 1 + size
			continue
		}
		if strings.HasPrefix(rest, "ARGUMENTS") {
			b.WriteString(args)
			used = true
			i += 1 + len("ARGUMENTS")
			continue
		}
		b.WriteByte(c)
		i++
	}
	out := b.String()
	if !used && args != "" && appendUnused {
		out += "\n\nARGUMENTS: " + args
	}
	return out
}

// placeholder reports whether s (what follows a "$") starts a
// placeholder: digits or ARGUMENTS.
func placeholder(s string) bool {
	return s != "" && ('0' <= s[0] && s[0] <= '9' || strings.HasPrefix(s, "ARGUMENTS"))
}

// index reads "ARGUMENTS[N]" or "N" (digits not followed by a letter,
// digit or '_') at the start of s: the index and the bytes it takes.
func index(s string) (n, size int, ok bool) {
	digits := func(s string) int {
		k := 0
		for k < len(s) && '0' <= s[k] && s[k] <= '9' {
			k++
		}
		return k
	}
	if rest, found := strings.CutPrefix(s, "ARGUMENTS["); found {
		k := digits(rest)
		if k == 0 || k >= len(rest) || rest[k] != ']' {
			return 0, 0, false
		}
		n, err := strconv.Atoi(rest[:k])
		return n, len("ARGUMENTS[") + k + 1, err == nil
	}
	k := digits(s)
	if k == 0 || k < len(s) && isWordByte(s[k]) {
		return 0, 0, false
	}
	n, err := strconv.Atoi(s[:k])
	return n, k, err == nil
}

func isWordByte(c byte) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// splitWords splits s into words as a shell does: spaces separate,
// single and double quotes group (and are dropped), a backslash escapes
// the next character outside single quotes.
func splitWords(s string) []string {
	var out []string
	var w strings.Builder
	in, quote := false, byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote == '\'':
			if c == '\'' {
				quote = 0
			} else {
				w.WriteByte(c)
			}
		case c == '\\' && i+1 < len(s) && (quote == 0 || s[i+1] == '"' || s[i+1] == '\\'):
			i++
			w.WriteByte(s[i])
			in = true
		case quote == '"':
			if c == '"' {
				quote = 0
			} else {
				w.WriteByte(c)
			}
		case c == '\'' || c == '"':
			quote, in = c, true
		case c == ' ' || c == '\t' || c == '\n':
			if in {
				out = append(out, w.String())
				w.Reset()
				in = false
			}
		default:
			w.WriteByte(c)
			in = true
		}
	}
	if in {
		out = append(out, w.String())
	}
	return out
}
