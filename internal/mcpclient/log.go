package mcpclient

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// maxLogBytes bounds a stdio server's log: beyond it the log becomes
// mcp-<name>.log.1 (replacing the one before) and a new one starts, so a
// server that floods stderr takes at most twice this on disk.
const maxLogBytes = 10 << 20

// LogFile is where a stdio server's stderr goes.
func LogFile(dir, name string) string { return filepath.Join(dir, "mcp-"+name+".log") }

// serverLog is one stdio process's log: its stderr, line by line, and
// arbor's notes about it, with the server's secrets taken out. Its
// methods are safe for concurrent use.
type serverLog struct {
	path  string // "" = discarded
	scrub func(string) string

	mu   sync.Mutex // guards the fields below
	f    *os.File
	size int64
	last string // the last line of stderr that was not blank, scrubbed
}

// openServerLog opens the server's log for appending; without a
// directory, everything is discarded.
func openServerLog(dir, name string, scrub func(string) string) (*serverLog, error) {
	l := &serverLog{scrub: scrub}
	if dir == "" {
		return l, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("MCP log directory: %w", err)
	}
	l.path = LogFile(dir, name)
	if err := l.open(); err != nil {
		return nil, err
	}
	return l, nil
}

// open opens l.path; l.mu is held (or l not shared yet).
func (l *serverLog) open() error {
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("MCP log: %w", err)
	}
	l.f, l.size = f, 0
	if st, err := f.Stat(); err == nil {
		l.size = st.Size()
	}
	return nil
}

// write appends b, scrubbed, starting a new log first when b would take
// the current one past maxLogBytes.
func (l *serverLog) write(b []byte) {
	if l.path == "" {
		return
	}
	b = []byte(l.scrub(string(b)))
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return
	}
	if l.size > 0 && l.size+int64(len(b)) > maxLogBytes {
		l.f.Close()
		l.f = nil
		_ = os.Rename(l.path, l.path+".1")
		if l.open() != nil {
			return
		}
	}
	n, _ := l.f.Write(b)
	l.size += int64(n)
}

// note appends one of arbor's notes.
func (l *serverLog) note(msg string) {
	l.write(fmt.Appendf(nil, "--- %s: %s\n", time.Now().UTC().Format(time.RFC3339), msg))
}

// copy appends r's lines (or pieces of 64 KiB of longer ones) until r
// ends.
func (l *serverLog) copy(r io.Reader) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			l.write(line)
			if t := strings.TrimSpace(string(line)); t != "" {
				t = l.scrub(cutUTF8(t, 300))
				l.mu.Lock()
				l.last = t
				l.mu.Unlock()
			}
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return
		}
	}
}

// lastLine is the last line of stderr that was not blank.
func (l *serverLog) lastLine() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last
}

func (l *serverLog) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		l.f.Close()
		l.f = nil
	}
}
