package mcpclient

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
)

// maxNotedLines is how many skipped lines of one process its log quotes.
const maxNotedLines = 100

// maxMessage is the largest message arbor reads from a server: over
// stdio the SDK's own limit, which lineFilter takes over so that the
// error says what happened; over HTTP a response body that is one
// message (httpTransport).
const maxMessage = 16 << 20

// ErrMessageTooLarge: a server sent a message larger than maxMessage;
// the connection ends there (over stdio the rest of the message cannot be
// told from the next one) and the server is restarted.
var ErrMessageTooLarge = fmt.Errorf("the MCP server sent a message larger than %d MiB, the most arbor reads; the server is restarted", maxMessage>>20)

// lineFilter passes on the lines of a stdio server's stdout that may be
// JSON-RPC messages (their first character other than a space is '{',
// or '[' before '{' or ']': a batch) and skips the others: many servers print a banner or debug lines
// there, which Claude Code's client skips too, and arbor's SDK would end
// the connection at the first. It streams: no line is held whole, so a
// huge message costs no more than it would without it (the SDK bounds a
// message's size). note quotes a skipped line's start in the log.
type lineFilter struct {
	r        *bufio.Reader
	c        io.Closer
	note     func(string)
	tooLarge func()

	state   int          // atStart, passing or skipping
	skipped bytes.Buffer // the start of the line being skipped
	noted   int
	size    int   // of the message passing
	err     error // ErrMessageTooLarge once it was
}

const (
	atStart = iota
	passing
	skipping
)

func newLineFilter(rc io.ReadCloser, note func(string), tooLarge func()) *lineFilter {
	return &lineFilter{r: bufio.NewReaderSize(rc, 64<<10), c: rc, note: note, tooLarge: tooLarge}
}

func (f *lineFilter) Close() error { return f.c.Close() }

func (f *lineFilter) Read(p []byte) (int, error) {
	if f.err != nil {
		return 0, f.err
	}
	if len(p) == 0 {
		return 0, nil
	}
	for {
		if f.state == atStart {
			b, err := f.r.ReadByte()
			if err != nil {
				return 0, err
			}
			switch b {
			case ' ', '\t', '\r', '\n':
				continue
			case '[':
				if c := f.peekNonSpace(); c != '{' && c != ']' {
					break // "[debug] …", not a batch
				}
				fallthrough
			case '{':
				f.state, f.size = passing, 1
				p[0] = b
				return 1, nil
			}
			f.state = skipping
			f.skipped.Reset()
			f.skipped.WriteByte(b)
			continue
		}
		// The rest of the line, or what is buffered of it.
		if f.r.Buffered() == 0 {
			if _, err := f.r.Peek(1); err != nil {
				if f.state == skipping {
					f.endSkip()
					f.state = atStart
				}
				return 0, err
			}
		}
		buf, _ := f.r.Peek(f.r.Buffered())
		end := bytes.IndexByte(buf, '\n')
		if end >= 0 {
			buf = buf[:end+1]
		}
		if f.state == passing {
			n := copy(p, buf[:min(len(buf), maxMessage+1-f.size)])
			if f.size += n; f.size > maxMessage {
				f.err = ErrMessageTooLarge
				f.tooLarge()
				return 0, f.err
			}
			_, _ = f.r.Discard(n)
			if end >= 0 && n == len(buf) {
				f.state = atStart
			}
			return n, nil
		}
		if room := 200 - f.skipped.Len(); room > 0 {
			f.skipped.Write(buf[:min(room, len(buf))])
		}
		_, _ = f.r.Discard(len(buf))
		if end >= 0 {
			f.endSkip()
			f.state = atStart
		}
	}
}

// peekNonSpace is the next byte other than a space or tab on the line,
// not consumed; 0 when the line or input ends first.
func (f *lineFilter) peekNonSpace() byte {
	for i := 1; i <= 64; i++ {
		b, err := f.r.Peek(i)
		if err != nil {
			return 0
		}
		if c := b[i-1]; c != ' ' && c != '\t' && c != '\r' {
			return c
		}
	}
	return 0
}

// endSkip notes the line skipped.
func (f *lineFilter) endSkip() {
	if f.state != skipping || f.note == nil {
		return
	}
	f.noted++
	switch {
	case f.noted <= maxNotedLines:
		f.note(fmt.Sprintf("a line on stdout is not JSON-RPC, skipped: %q", bytes.TrimRight(f.skipped.Bytes(), "\r\n")))
	case f.noted == maxNotedLines+1:
		f.note(fmt.Sprintf("more lines on stdout are not JSON-RPC; skipped without a note after %d", maxNotedLines))
	}
}
