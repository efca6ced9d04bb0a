package protocol

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// readBufSize is the bufio buffer size: lines shorter than this are parsed
// in place and copied once.
const readBufSize = 64 << 10

// bom is the UTF-8 byte order mark some Windows tools put before the first line.
var bom = []byte{0xef, 0xbb, 0xbf}

// Line is one well-formed input line.
type Line struct {
	// Number is the physical line number (1-based, blank lines included).
	Number int
	// Type is the object's "type" field, never empty.
	Type string
	// Raw is the whole object without surrounding whitespace; the caller owns it.
	Raw json.RawMessage
}

// Decode unmarshals the line into v; unknown fields are allowed (clients add
// fields). A failure is a *LineError wrapping ErrInvalidJSON.
func (l Line) Decode(v any) error {
	if err := json.Unmarshal(l.Raw, v); err != nil {
		return &LineError{Number: l.Number, Len: len(l.Raw), Err: ErrInvalidJSON, Detail: err.Error()}
	}
	return nil
}

// Reader reads JSONL: one JSON object per line, "\n" or "\r\n" terminated,
// blank lines skipped. It is not safe for concurrent use.
type Reader struct {
	br  *bufio.Reader
	max int
	// buf accumulates a line that spans several bufio fills; its capacity
	// never exceeds max+1 (the line plus the '\r' of a "\r\n").
	buf []byte
	// n is the number of the last physical line read.
	n int
	// err is io.EOF or the first read error, returned by every later Next.
	err error
	// untyped accepts objects without a "type" field (JSON-RPC).
	untyped bool
}

// Untyped makes r accept objects without a "type" field (Line.Type is
// then ""), for protocols that are not typed by a field, such as
// JSON-RPC; every other check stays. It returns r.
func (r *Reader) Untyped() *Reader {
	r.untyped = true
	return r
}

// NewReader returns a Reader on r accepting lines of at most max bytes
// (without the terminator); max <= 0 means MaxLine.
func NewReader(r io.Reader, max int) *Reader {
	if max <= 0 {
		max = MaxLine
	}
	size := readBufSize
	if max < size-2 {
		size = max + 2 // room for the line and its "\r\n"; bufio raises it to at least 16
	}
	return &Reader{br: bufio.NewReaderSize(r, size), max: max}
}

// Next returns the next line's type field and raw bytes. A line longer than
// the limit is skipped without buffering it whole and reported as a
// *LineError wrapping ErrLineTooLong; malformed lines as a *LineError wrapping
// ErrInvalidJSON, ErrNotObject or ErrNoType. After a *LineError the caller
// simply calls Next again. Next returns io.EOF at the end (a final line
// without a newline is still returned); other read errors are returned as is.
func (r *Reader) Next() (Line, error) {
	for r.err == nil {
		content, length, err := r.readLine()
		if err != nil && err != io.EOF {
			r.err = err
			break
		}
		if err == io.EOF {
			r.err = io.EOF
			if length == 0 {
				break
			}
		}
		r.n++
		if length > r.max {
			return Line{}, &LineError{Number: r.n, Len: length, Err: ErrLineTooLong,
				Detail: fmt.Sprintf("%d bytes, limit %d", length, r.max)}
		}
		if r.n == 1 {
			content = bytes.TrimPrefix(content, bom)
		}
		content = trimSpace(content)
		if len(content) == 0 {
			continue
		}
		typ, lerr := lineType(content)
		if lerr != nil && r.untyped && errors.Is(lerr.Err, ErrNoType) {
			typ, lerr = "", nil
		}
		if lerr != nil {
			lerr.Number, lerr.Len = r.n, length
			return Line{}, lerr
		}
		return Line{Number: r.n, Type: typ, Raw: bytes.Clone(content)}, nil
	}
	return Line{}, r.err
}

// readLine reads one physical line and returns its content without the
// terminator and its length. content is only valid until the next read and
// is nil when the line is longer than r.max: such a line is discarded as it
// streams past, and only its length is counted. err is io.EOF when the
// stream ended, possibly after a final unterminated line (length > 0).
func (r *Reader) readLine() (content []byte, length int, err error) {
	r.buf = r.buf[:0]
	var (
		discarding bool
		inPlace    []byte // the whole line, when it came in one bufio fill
		last       byte   // the last byte before the terminator
	)
	for {
		chunk, err := r.br.ReadSlice('\n')
		if err != nil && err != bufio.ErrBufferFull && err != io.EOF {
			return nil, 0, err // a partial line before a read error is dropped
		}
		terminated := err == nil
		if terminated {
			chunk = chunk[:len(chunk)-1]
		}
		if len(chunk) > 0 {
			last = chunk[len(chunk)-1]
		}
		switch {
		case discarding:
		case length == 0 && terminated:
			inPlace = chunk
		case len(r.buf)+len(chunk) <= r.max+1:
			r.keep(chunk)
		default:
			discarding = true
		}
		length += len(chunk)
		if err == bufio.ErrBufferFull {
			continue
		}
		if terminated && last == '\r' && length > 0 {
			length-- // the '\r' of "\r\n" belongs to the terminator
		}
		if discarding || length > r.max {
			return nil, length, err
		}
		if inPlace == nil {
			inPlace = r.buf
		}
		return inPlace[:length], length, err
	}
}

// keep appends chunk to r.buf, growing it geometrically but never beyond
// r.max+1 bytes of capacity, so one long line cannot pin more memory than
// the limit.
func (r *Reader) keep(chunk []byte) {
	need := len(r.buf) + len(chunk)
	if need > cap(r.buf) {
		c := min(max(2*cap(r.buf), need, 512), r.max+1)
		grown := make([]byte, len(r.buf), c)
		copy(grown, r.buf)
		r.buf = grown
	}
	r.buf = append(r.buf, chunk...)
}

// lineType validates a non-empty, trimmed line and returns its type field.
// The returned error lacks Number and Len, which the caller fills in.
func lineType(b []byte) (string, *LineError) {
	// Decoded as a string, as Line.Decode will: a "type" given twice (in
	// any case, which Go's decoder folds) must be a string both times.
	var head struct {
		Type *string `json:"type"`
	}
	err := json.Unmarshal(b, &head)
	var typeErr *json.UnmarshalTypeError
	if err != nil && !errors.As(err, &typeErr) {
		return "", &LineError{Err: ErrInvalidJSON, Detail: err.Error()}
	}
	if b[0] != '{' {
		// A top-level non-object is the other type mismatch possible.
		return "", &LineError{Err: ErrNotObject, Detail: "got " + kindOf(b[0])}
	}
	switch {
	case typeErr != nil:
		kind := map[string]string{"object": "an object", "array": "an array", "bool": "a boolean"}[typeErr.Value]
		if kind == "" {
			kind = "a " + typeErr.Value
		}
		return "", &LineError{Err: ErrNoType, Detail: `"type" is ` + kind + ", not a string"}
	case head.Type == nil:
		return "", &LineError{Err: ErrNoType, Detail: `no "type" field`}
	case *head.Type == "":
		return "", &LineError{Err: ErrNoType, Detail: `"type" is empty`}
	}
	return *head.Type, nil
}

// kindOf names the kind of the JSON value starting with byte c.
func kindOf(c byte) string {
	switch c {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}

// trimSpace trims JSON whitespace; bytes.TrimSpace would also trim Unicode
// spaces, which JSON does not allow outside strings.
func trimSpace(b []byte) []byte {
	isSpace := func(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }
	for len(b) > 0 && isSpace(b[0]) {
		b = b[1:]
	}
	for len(b) > 0 && isSpace(b[len(b)-1]) {
		b = b[:len(b)-1]
	}
	return b
}
