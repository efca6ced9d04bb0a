package permission

import "strings"

// command is a shell command split into the simple commands rules are
// matched against. The split follows sh quoting (single, double, $'…',
// backslash) closely enough that an operator inside quotes never splits and
// one outside quotes always does.
type command struct {
	// segments are the top-level simple commands, trimmed, unquoted
	// whitespace collapsed to one space; redirections stay in their segment.
	segments []string
	// nested are the simple commands inside $(…), `…`, <(…) and >(…);
	// only deny rules look at them.
	nested []string
	// substitution: the command runs other commands through $(…), `…` or
	// process substitution, so no allow rule may approve it.
	substitution bool
	// malformed: an unterminated quote or substitution; no allow rule may
	// approve it either.
	malformed bool
}

// unsafe reports whether allow rules must not approve the command.
func (c command) unsafe() bool { return c.substitution || c.malformed }

// denyForms lists every string a deny rule is matched against: all
// segments, nested ones, and each with leading wrappers stripped ("(rm x)",
// "sudo rm x", "FOO=1 rm x" are also seen as "rm x").
func (c command) denyForms() []string {
	var out []string
	for _, seg := range append(append([]string(nil), c.segments...), c.nested...) {
		out = append(out, seg)
		for s := seg; ; {
			t := strings.TrimLeft(s, "({! ")
			if word, rest, ok := strings.Cut(t, " "); ok && (wrappers[word] || isAssignment(word)) {
				t = rest
			}
			t = strings.TrimRight(t, ")}; ")
			if t == s || t == "" {
				break
			}
			s = t
			out = append(out, s)
		}
	}
	return out
}

// wrappers are words that run the rest of the line as a command.
var wrappers = map[string]bool{
	"if": true, "then": true, "else": true, "elif": true, "do": true, "while": true,
	"until": true, "time": true, "exec": true, "command": true, "builtin": true,
	"nohup": true, "sudo": true, "env": true, "nice": true,
	// xargs runs the rest with its input as more words; Claude Code's
	// rules match "xargs rm …" as "rm …" too.
	"xargs": true,
}

func isAssignment(word string) bool {
	name, _, ok := strings.Cut(word, "=")
	if !ok || name == "" {
		return false
	}
	for i, c := range name {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func parseCommand(s string) command {
	p := &shellParser{src: s}
	segs := p.list(0)
	return command{segments: segs, nested: p.nested, substitution: p.substitution, malformed: p.malformed}
}

type shellParser struct {
	src          string
	pos          int
	nested       []string
	substitution bool
	malformed    bool
}

func (p *shellParser) peek(off int) byte {
	if i := p.pos + off; i >= 0 && i < len(p.src) {
		return p.src[i]
	}
	return 0
}

// list reads simple commands until the end of the input or, when close is
// ')' or '`', until the unmatched closer, which it consumes.
func (p *shellParser) list(close byte) []string {
	var segs []string
	var cur segment
	flush := func() {
		if s := cur.b.String(); s != "" {
			segs = append(segs, s)
		}
		cur = segment{}
	}
	depth := 0 // unquoted '(' not yet closed
	for p.pos < len(p.src) {
		c, next := p.src[p.pos], p.peek(1)
		switch {
		case close == '`' && c == '`', close == ')' && c == ')' && depth == 0:
			p.pos++
			flush()
			return segs
		case c == '\\' && next == '\n':
			p.pos += 2
			cur.space = true
		case c == '\\':
			end := min(p.pos+2, len(p.src))
			cur.write(p.src[p.pos:end])
			p.pos = end
		case c == '\'':
			p.quoted(&cur, p.pos+1, false)
		case c == '$' && next == '\'':
			p.quoted(&cur, p.pos+2, true)
		case c == '"':
			p.double(&cur)
		case c == '`':
			p.substitute(&cur, 1, '`')
		case (c == '$' || c == '<' || c == '>') && next == '(':
			p.substitute(&cur, 2, ')')
		case c == ';' || c == '\n':
			flush()
			p.pos++
		case c == '&' && next == '&', c == '|' && (next == '|' || next == '&'):
			flush()
			p.pos += 2
		case c == '&' && (next == '>' || p.peek(-1) == '>' || p.peek(-1) == '<'):
			cur.write("&") // &> file, 2>&1, <&3: redirections
			p.pos++
		case c == '&' || c == '|':
			flush()
			p.pos++
		case c == ' ' || c == '\t' || c == '\r':
			cur.space = true
			p.pos++
		default:
			if c == '(' {
				depth++
			} else if c == ')' && depth > 0 {
				depth--
			}
			cur.write(p.src[p.pos : p.pos+1])
			p.pos++
		}
	}
	if close != 0 {
		p.malformed = true
	}
	flush()
	return segs
}

// quoted copies a '…' (or $'…' with backslash escapes) string starting at
// the quote character; from is the first byte after the opening quote.
func (p *shellParser) quoted(cur *segment, from int, escapes bool) {
	start, i := p.pos, from
	for ; i < len(p.src); i++ {
		if escapes && p.src[i] == '\\' {
			i++
			continue
		}
		if p.src[i] == '\'' {
			cur.write(p.src[start : i+1])
			p.pos = i + 1
			return
		}
	}
	p.malformed = true
	cur.write(p.src[start:])
	p.pos = len(p.src)
}

// double copies a "…" string; substitutions inside it still run.
func (p *shellParser) double(cur *segment) {
	start := p.pos
	p.pos++
	for p.pos < len(p.src) {
		c, next := p.src[p.pos], p.peek(1)
		switch {
		case c == '\\':
			p.pos = min(p.pos+2, len(p.src))
		case c == '"':
			p.pos++
			cur.write(p.src[start:p.pos])
			return
		case c == '`':
			p.substitute(nil, 1, '`')
		case c == '$' && next == '(':
			p.substitute(nil, 2, ')')
		default:
			p.pos++
		}
	}
	p.malformed = true
	cur.write(p.src[start:])
}

// substitute reads a substitution whose opener is skip bytes long, records
// the commands inside it, and copies its text to cur (when not nil).
func (p *shellParser) substitute(cur *segment, skip int, close byte) {
	start := p.pos
	p.substitution = true
	p.pos += skip
	p.nested = append(p.nested, p.list(close)...)
	if cur != nil {
		cur.write(p.src[start:p.pos])
	}
}

// segment collects one simple command; separating whitespace is written
// as a single space, and only between words.
type segment struct {
	b     strings.Builder
	space bool // whitespace seen since the last word
}

func (s *segment) write(text string) {
	if s.space && s.b.Len() > 0 {
		s.b.WriteByte(' ')
	}
	s.space = false
	s.b.WriteString(text)
}
