package tool

// patchContext is how many unchanged lines a hunk shows around a change
// (Claude Code's structuredPatch shows 3).
const patchContext = 3

// maxPatchCells bounds the work of a line diff: a change whose differing
// middle is larger is shown as all its old lines removed and all its new
// ones added.
const maxPatchCells = 4 << 20

// noNewline follows a hunk's line that is its file's last and has no
// newline (the unified diff's marker).
const noNewline = `\ No newline at end of file`

// ccHunk is one hunk of Claude Code's structuredPatch (the jsdiff
// library's): 1-based starts, line counts, and the lines prefixed with
// ' ', '-' or '+'.
type ccHunk struct {
	OldStart int      `json:"oldStart"`
	OldLines int      `json:"oldLines"`
	NewStart int      `json:"newStart"`
	NewLines int      `json:"newLines"`
	Lines    []string `json:"lines"`
}

// diffOp is one line of a diff: kind ' ', '-' or '+', and the line's
// index in the old and in the new text (that of the next line where it
// is in only one).
type diffOp struct {
	kind     byte
	old, new int
}

// structuredPatch is the hunks that turn before into after.
func structuredPatch(before, after string) []ccHunk {
	a, aEOL := splitLines(before)
	b, bEOL := splitLines(after)
	// A last line without newline differs from the same text with one.
	bare := func(lines []string, eol bool, i int) bool { return i == len(lines)-1 && !eol }
	ops := lineDiff(len(a), len(b), func(i, j int) bool {
		return a[i] == b[j] && bare(a, aEOL, i) == bare(b, bEOL, j)
	})
	var hunks []ccHunk
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		// A hunk: context before, changes joined by at most 2×context
		// unchanged lines, context after.
		start := max(i-patchContext, 0)
		end := i
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].kind == ' ' {
				run++
			}
			if run == len(ops) || run-end > 2*patchContext {
				end = min(end+patchContext, len(ops))
				break
			}
			end = run
		}
		hunks = append(hunks, hunk(ops[start:end], a, b, aEOL, bEOL))
		i = end
	}
	return hunks
}

func hunk(ops []diffOp, a, b []string, aEOL, bEOL bool) ccHunk {
	h := ccHunk{OldStart: ops[0].old + 1, NewStart: ops[0].new + 1}
	for _, op := range ops {
		var line string
		lastOld := op.old == len(a)-1 && !aEOL
		lastNew := op.new == len(b)-1 && !bEOL
		mark := false
		switch op.kind {
		case ' ':
			line, mark = a[op.old], lastOld || lastNew
			h.OldLines++
			h.NewLines++
		case '-':
			line, mark = a[op.old], lastOld
			h.OldLines++
		case '+':
			line, mark = b[op.new], lastNew
			h.NewLines++
		}
		h.Lines = append(h.Lines, string(op.kind)+line)
		if mark {
			h.Lines = append(h.Lines, noNewline)
		}
	}
	return h
}

// lineDiff is the ops that turn n old lines into m new ones, equal(i, j)
// comparing them: a longest common subsequence of the lines between the
// common head and tail, removals before additions in each change.
func lineDiff(n, m int, equal func(i, j int) bool) []diffOp {
	head := 0
	for head < n && head < m && equal(head, head) {
		head++
	}
	tail := 0
	for tail < n-head && tail < m-head && equal(n-1-tail, m-1-tail) {
		tail++
	}
	var ops []diffOp
	for k := 0; k < head; k++ {
		ops = append(ops, diffOp{' ', k, k})
	}
	on, nn := n-head-tail, m-head-tail
	var mid []diffOp
	if on*nn > maxPatchCells {
		for i := 0; i < on; i++ {
			mid = append(mid, diffOp{'-', head + i, head})
		}
		for j := 0; j < nn; j++ {
			mid = append(mid, diffOp{'+', head + on, head + j})
		}
	} else {
		mid = lcsOps(on, nn, head, equal)
	}
	ops = append(ops, mid...)
	for k := 0; k < tail; k++ {
		ops = append(ops, diffOp{' ', n - tail + k, m - tail + k})
	}
	return ops
}

// lcsOps diffs the old lines off..off+n with the new off..off+m.
func lcsOps(n, m, off int, equal func(i, j int) bool) []diffOp {
	// lcs[i][j] is the length of a longest common subsequence of the old
	// lines from i and the new lines from j.
	w := m + 1
	lcs := make([]int32, (n+1)*w)
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if equal(off+i, off+j) {
				lcs[i*w+j] = lcs[(i+1)*w+j+1] + 1
			} else {
				lcs[i*w+j] = max(lcs[(i+1)*w+j], lcs[i*w+j+1])
			}
		}
	}
	var ops, adds []diffOp
	flush := func() { ops, adds = append(ops, adds...), adds[:0] }
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && equal(off+i, off+j):
			flush()
			ops = append(ops, diffOp{' ', off + i, off + j})
			i, j = i+1, j+1
		case j == m || i < n && lcs[(i+1)*w+j] >= lcs[i*w+j+1]:
			ops = append(ops, diffOp{'-', off + i, off + j})
			i++
		default:
			adds = append(adds, diffOp{'+', off + i, off + j})
			j++
		}
	}
	flush()
	return ops
}
