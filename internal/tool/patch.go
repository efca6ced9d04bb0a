package tool

import (
	"fmt"
	"strings"
)

// The patch format of apply_patch is Codex's (and Chord's): an envelope of
// file operations, each a header line and, for updates, hunks of context
// (" "), removed ("-") and added ("+") lines.
//
//	*** Begin Patch
//	*** Add File: hello.txt
//	+Hello
//	*** Update File: src/app.py
//	*** Move to: src/main.py
//	@@ def greet():
//	-    print("Hi")
//	+    print("Hello")
//	*** Delete File: old.txt
//	*** End Patch

// patchOp is one file operation of a patch.
type patchOp struct {
	kind   string // "add", "delete" or "update"
	path   string
	moveTo string      // update: the file's new path; "" keeps it
	lines  []string    // add: the new file's lines
	hunks  []patchHunk // update
}

// patchHunk is one "@@" section of an update: the lines it expects
// (context and removed) and what replaces them (context and added). ops
// says, line by line, which of the three each of its lines is.
type patchHunk struct {
	anchor    string // the text after "@@", a line to find first; "" for none
	old, new  []string
	ops       []byte // ' ', '-' or '+' for each line, in order
	endOfFile bool   // "*** End of File": the lines are the file's last
	text      string
}

// replace is what the hunk puts where old was found at lines[at:]: its
// added lines, and the file's own text of its context lines (which may
// differ from the patch's in white space).
func (h patchHunk) replace(lines []string, at int) []string {
	out := make([]string, 0, len(h.new))
	o, n := 0, 0
	for _, op := range h.ops {
		switch op {
		case ' ':
			out = append(out, lines[at+o])
			o, n = o+1, n+1
		case '-':
			o++
		case '+':
			out = append(out, h.new[n])
			n++
		}
	}
	return out
}

// parsePatch reads a patch. Its errors name the line that is wrong.
func parsePatch(patch string) ([]patchOp, error) {
	lines := strings.Split(strings.ReplaceAll(strings.TrimSpace(patch), "\r\n", "\n"), "\n")
	// A heredoc as the model may wrap it (apply_patch <<'EOF' … EOF).
	if len(lines) >= 2 && strings.HasPrefix(lines[0], "apply_patch") && strings.Contains(lines[0], "<<") {
		lines = lines[1 : len(lines)-1]
	}
	if len(lines) == 0 || strings.TrimSpace(lines[0]) != "*** Begin Patch" {
		return nil, fmt.Errorf("the patch must start with \"*** Begin Patch\" (got %q)", first(lines))
	}
	if strings.TrimSpace(lines[len(lines)-1]) != "*** End Patch" {
		return nil, fmt.Errorf("the patch must end with \"*** End Patch\" (got %q)", lines[len(lines)-1])
	}
	body := lines[1 : len(lines)-1]
	var ops []patchOp
	for i := 0; i < len(body); {
		line := body[i]
		header := func(prefix string) (string, bool) {
			if p, ok := strings.CutPrefix(line, prefix); ok {
				return strings.TrimSpace(p), true
			}
			return "", false
		}
		if p, ok := header("*** Add File: "); ok {
			op := patchOp{kind: "add", path: p}
			for i++; i < len(body) && !strings.HasPrefix(body[i], "*** "); i++ {
				l, ok := strings.CutPrefix(body[i], "+")
				if !ok {
					return nil, fmt.Errorf("line %d: every line of an added file starts with \"+\" (got %q)", i+2, body[i])
				}
				op.lines = append(op.lines, l)
			}
			ops = append(ops, op)
			continue
		}
		if p, ok := header("*** Delete File: "); ok {
			ops = append(ops, patchOp{kind: "delete", path: p})
			i++
			continue
		}
		p, ok := header("*** Update File: ")
		if !ok {
			if strings.TrimSpace(line) == "" {
				i++
				continue
			}
			return nil, fmt.Errorf("line %d: expected \"*** Add File: \", \"*** Update File: \" or \"*** Delete File: \" (got %q)", i+2, line)
		}
		op := patchOp{kind: "update", path: p}
		i++
		if i < len(body) {
			if m, ok := strings.CutPrefix(body[i], "*** Move to: "); ok {
				op.moveTo = strings.TrimSpace(m)
				i++
			}
		}
		var err error
		if i, err = parseHunks(body, i, &op); err != nil {
			return nil, err
		}
		if len(op.hunks) == 0 && op.moveTo == "" {
			return nil, fmt.Errorf("update of %s: no hunk (a hunk starts with \"@@\")", op.path)
		}
		ops = append(ops, op)
	}
	if len(ops) == 0 {
		return nil, fmt.Errorf("the patch changes no file")
	}
	for _, op := range ops {
		if op.path == "" {
			return nil, fmt.Errorf("a %s operation names no file", op.kind)
		}
	}
	return ops, nil
}

// parseHunks reads the hunks of an update from body[i:] into op and
// returns where the next operation starts.
func parseHunks(body []string, i int, op *patchOp) (int, error) {
	var h *patchHunk
	var text []string
	flush := func() {
		if h != nil {
			h.text = strings.Join(text, "\n")
			op.hunks = append(op.hunks, *h)
		}
		h, text = nil, nil
	}
	for ; i < len(body); i++ {
		line := body[i]
		switch {
		case strings.HasPrefix(line, "*** End of File"):
			if h == nil {
				return 0, fmt.Errorf("line %d: \"*** End of File\" outside a hunk", i+2)
			}
			h.endOfFile = true
			continue
		case strings.HasPrefix(line, "*** "):
			flush()
			return i, nil
		case strings.HasPrefix(line, "@@"):
			flush()
			h = &patchHunk{anchor: strings.TrimSpace(strings.TrimPrefix(line, "@@"))}
			text = append(text, line)
			continue
		}
		if h == nil { // Codex lets the first hunk of a file go without "@@"
			h = &patchHunk{}
		}
		text = append(text, line)
		switch {
		case line == "": // an empty context line whose space was trimmed
			h.old, h.new, h.ops = append(h.old, ""), append(h.new, ""), append(h.ops, ' ')
		case line[0] == ' ':
			h.old, h.new, h.ops = append(h.old, line[1:]), append(h.new, line[1:]), append(h.ops, ' ')
		case line[0] == '-':
			h.old, h.ops = append(h.old, line[1:]), append(h.ops, '-')
		case line[0] == '+':
			h.new, h.ops = append(h.new, line[1:]), append(h.ops, '+')
		default:
			return 0, fmt.Errorf("line %d: a hunk line starts with \" \", \"-\" or \"+\" (got %q)", i+2, line)
		}
	}
	flush()
	return i, nil
}

// applyHunks applies an update's hunks to a file's lines, in order; the
// error quotes the hunk that did not apply.
func applyHunks(path string, lines []string, hunks []patchHunk) ([]string, error) {
	at := 0
	for n, h := range hunks {
		if h.anchor != "" {
			i := findLines(lines, []string{h.anchor}, at, false)
			if i < 0 {
				return nil, hunkError(path, n, len(hunks), h, "its @@ line was not found")
			}
			at = i + 1
		}
		if len(h.old) == 0 { // pure addition: at the end, or after the anchor
			pos := len(lines)
			if h.anchor != "" && !h.endOfFile {
				pos = at
			}
			lines = splice(lines, pos, 0, h.new)
			at = pos + len(h.new)
			continue
		}
		i := findLines(lines, h.old, at, h.endOfFile)
		if i < 0 {
			return nil, hunkError(path, n, len(hunks), h, "its context and removed lines were not found")
		}
		repl := h.replace(lines, i)
		lines = splice(lines, i, len(h.old), repl)
		at = i + len(repl)
	}
	return lines, nil
}

// findLines finds want in lines from start on: exactly, then ignoring
// trailing white space, then ignoring white space at both ends (as Codex
// does); with atEnd only where want ends the file. -1: not found.
func findLines(lines, want []string, start int, atEnd bool) int {
	for _, norm := range []func(string) string{
		func(s string) string { return s },
		func(s string) string { return strings.TrimRight(s, " \t") },
		strings.TrimSpace,
	} {
		from, to := start, len(lines)-len(want)
		if atEnd {
			from = max(start, to)
		}
		for i := from; i <= to; i++ {
			ok := true
			for j, w := range want {
				if norm(lines[i+j]) != norm(w) {
					ok = false
					break
				}
			}
			if ok {
				return i
			}
		}
	}
	return -1
}

func splice(lines []string, at, remove int, insert []string) []string {
	out := make([]string, 0, len(lines)-remove+len(insert))
	out = append(out, lines[:at]...)
	out = append(out, insert...)
	return append(out, lines[at+remove:]...)
}

func hunkError(path string, n, of int, h patchHunk, why string) error {
	quote, cut := cutRunes(h.text, 2000)
	if cut {
		quote += "\n…"
	}
	return fmt.Errorf("hunk %d of %d for %s did not apply: %s (read the file again and copy its current lines):\n%s", n+1, of, path, why, quote)
}

func first(lines []string) string {
	if len(lines) == 0 {
		return ""
	}
	return lines[0]
}
