package tool

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// Output caps of read_file.
const (
	// readDefaultLimit is how many lines read_file returns when no limit is
	// given.
	readDefaultLimit = 2000
	// readMaxLineChars is where read_file cuts long lines.
	readMaxLineChars = 2000
	// readMaxOutputBytes caps one read_file result however many lines were
	// asked for.
	readMaxOutputBytes = 256 << 10
	// readCountMaxBytes bounds how much of a file after the lines read
	// is read to count its lines (ReadDetail.Total).
	readCountMaxBytes = 64 << 20
)

type readFileArgs struct {
	Path   string `json:"path" jsonschema_description:"File to read: relative to the workspace root, or absolute."`
	Offset int    `json:"offset,omitempty" jsonschema:"minimum=0" jsonschema_description:"Line number to start at (1-based). Default 1."`
	Limit  int    `json:"limit,omitempty" jsonschema:"minimum=0" jsonschema_description:"Maximum number of lines to return. Default 2000."`
}

func (a readFileArgs) Target() Target { return Target{Paths: []string{a.Path}} }

const readFileDescription = `Read a text file. Lines come numbered like "cat -n" (line number, tab, text), starting at offset. ` +
	`By default up to 2000 lines are returned; use offset and limit to page through longer files. ` +
	`Lines longer than 2000 characters are cut. Binary files and directories are refused (use list_directory for directories).`

func newReadFile(root workRoot, files Files) Tool {
	return New("read_file", readFileDescription, KindRead, func(ctx context.Context, _ Call, a readFileArgs) Result {
		if files != nil {
			return root.readThrough(ctx, files, a)
		}
		return root.readFile(a, wantsDetail(ctx))
	})
}

// readFile is read_file from the disk; detail says whether to count the
// file's lines past the window for the result's Detail.
func (w workRoot) readFile(a readFileArgs, detail bool) Result {
	if a.Path == "" {
		return Errorf("path is empty")
	}
	pl, err := w.locate(w.abs(a.Path))
	if err != nil {
		return pathError(a.Path, err)
	}
	defer pl.Close()
	f, err := pl.open(os.O_RDONLY, 0)
	if err != nil {
		return pathError(a.Path, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return pathError(a.Path, err)
	}
	if info.IsDir() {
		return Errorf("%s is a directory; use list_directory", a.Path)
	}
	nl, r := countNewlines(f, detail)
	br := bufio.NewReaderSize(r, 64<<10)
	binary, err := sniffBinary(br)
	if err != nil {
		return pathError(a.Path, err)
	}
	if binary {
		return Errorf("%s is a binary file (%d bytes); read_file only shows text", a.Path, info.Size())
	}
	return numbered(br, nl, w.abs(a.Path), a)
}

// countNewlines is r, through a newlines counter when detail is wanted
// (nil when not).
func countNewlines(r io.Reader, detail bool) (*newlines, io.Reader) {
	if !detail {
		return nil, r
	}
	nl := &newlines{r: r}
	return nl, nl
}

// newlines counts the newlines read through it.
type newlines struct {
	r io.Reader
	n int
}

func (c *newlines) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += bytes.Count(p[:n], []byte{'\n'})
	return n, err
}

// numbered is read_file's result: br's lines in a's window, numbered;
// nl counts br's newlines, for the detail of the file at path (nil: no
// detail is wanted, and nothing past the window is read).
func numbered(br *bufio.Reader, nl *newlines, path string, a readFileArgs) Result {
	first := max(a.Offset, 1)
	limit := a.Limit
	if limit <= 0 {
		limit = readDefaultLimit
	}
	var out strings.Builder
	var raw []string // the window's lines, unnumbered, for the detail
	done := func(res Result) Result {
		if nl != nil {
			res.Detail = &Detail{Read: readDetail(br, nl, path, first, limit, raw)}
		}
		return res
	}
	lineNo := 0
	for {
		// Lines before the window are consumed without keeping them.
		keep := 0
		if lineNo+1 >= first {
			keep = readMaxLineChars * 4 // enough bytes for 2000 runes of UTF-8
		}
		line, dropped, err := readLine(br, keep)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return pathError(a.Path, err)
		}
		lineNo++
		if lineNo < first {
			continue
		}
		text, cut := cutRunes(string(line), readMaxLineChars)
		formatted := fmt.Sprintf("%6d\t%s", lineNo, text)
		if cut || dropped > 0 {
			formatted += " [… line truncated]"
		}
		if out.Len()+len(formatted)+1 > readMaxOutputBytes {
			fmt.Fprintf(&out, "[output capped at %d bytes; continue with offset=%d]\n", readMaxOutputBytes, lineNo)
			return done(Result{Content: out.String()})
		}
		out.WriteString(formatted)
		out.WriteByte('\n')
		if nl != nil {
			raw = append(raw, text)
		}
		if lineNo-first+1 == limit {
			if _, err := br.Peek(1); err == nil {
				fmt.Fprintf(&out, "[showing lines %d-%d; the file continues: read again with offset=%d]\n", first, lineNo, lineNo+1)
			}
			return done(Result{Content: out.String()})
		}
	}
	switch {
	case lineNo == 0:
		return done(Result{Content: fmt.Sprintf("(%s is empty)", a.Path)})
	case lineNo < first:
		return Errorf("%s has %s; offset %d is past the end", a.Path, plural(lineNo, "line"), first)
	}
	return done(Result{Content: out.String()})
}

// readDetail is the detail of a read that returned raw, the lines from
// first, limit at most: the rest of br is counted (not kept) for the
// file's total, counted as Claude Code counts (the text split at "\n"),
// up to readCountMaxBytes more (beyond, the total is a lower bound). The
// window holds the empty line after a last newline when it reaches the
// end.
func readDetail(br *bufio.Reader, nl *newlines, path string, first, limit int, raw []string) *ReadDetail {
	_, _ = io.CopyN(io.Discard, br, readCountMaxBytes)
	total := nl.n + 1
	lines := min(limit, total-first+1)
	text := strings.Join(raw, "\n")
	if lines > len(raw) && len(raw) > 0 {
		text += "\n"
	}
	return &ReadDetail{Path: path, Text: text, Start: first, Lines: max(lines, len(raw)), Total: total}
}
