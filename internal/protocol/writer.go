package protocol

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sync"
)

// maxPooledBuf keeps one huge line from pinning its buffer in the pool.
const maxPooledBuf = 64 << 10

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// Writer writes one JSON value per line and is safe for concurrent use.
// Each line reaches the underlying writer in a single Write call.
type Writer struct {
	mu sync.Mutex // guards w and err; held across exactly one w.Write per line
	w  io.Writer
	// err is the first failure of w; once set, every write returns it.
	err error
}

// NewWriter returns a Writer on w.
func NewWriter(w io.Writer) *Writer {
	return &Writer{w: w}
}

// Write marshals v as encoding/json does, except that <, > and & are not
// escaped, and writes it as one line. A value that cannot be marshalled is
// an error and writes nothing.
func (w *Writer) Write(v any) error {
	buf := getBuf()
	defer putBuf(buf)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	// Encode compacts the output of MarshalJSON methods and RawMessages, so
	// the only newline is the terminator it appends.
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("protocol: encode %T: %w", v, err)
	}
	return w.emit(buf.Bytes())
}

// WriteRaw writes line, which must be one JSON value without a newline, and
// a terminating newline. It returns an error wrapping ErrNewline or
// ErrInvalidJSON, and writes nothing, when line is not that.
func (w *Writer) WriteRaw(line []byte) error {
	if bytes.IndexByte(line, '\n') >= 0 {
		return fmt.Errorf("protocol: write raw line: %w", ErrNewline)
	}
	if !json.Valid(line) {
		return fmt.Errorf("protocol: write raw line: %w", ErrInvalidJSON)
	}
	buf := getBuf()
	defer putBuf(buf)
	buf.Grow(len(line) + 1)
	buf.Write(line)
	buf.WriteByte('\n')
	return w.emit(buf.Bytes())
}

// emit writes one complete line with a single Write under the lock.
func (w *Writer) emit(line []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	n, err := w.w.Write(line)
	if err == nil && n < len(line) {
		err = io.ErrShortWrite
	}
	if err != nil {
		w.err = fmt.Errorf("protocol: write line: %w", err)
	}
	return w.err
}

func getBuf() *bytes.Buffer {
	buf := bufPool.Get().(*bytes.Buffer)
	buf.Reset()
	return buf
}

func putBuf(buf *bytes.Buffer) {
	if buf.Cap() <= maxPooledBuf {
		bufPool.Put(buf)
	}
}
