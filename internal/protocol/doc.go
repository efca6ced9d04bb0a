// Package protocol is the JSONL framing shared by arbor's stdio
// protocols (protocol/envelope, protocol/streamjson and protocol/acp): it turns a byte
// stream into typed lines and typed values into lines, and knows nothing
// about what any message means.
//
// Invariants of Reader:
//   - One JSON object per line; "\n" and "\r\n" both end a line; lines holding
//     only JSON whitespace are skipped; a UTF-8 byte order mark at the very
//     start of the stream is ignored. Line numbers count physical lines
//     (blank ones included), so they match what a client sent.
//   - Memory is bounded by the line limit, not by the input: a line longer
//     than the limit is discarded as it streams past, never buffered whole.
//   - Bad input never ends reading. An over-long, malformed, non-object or
//     untyped line is reported as a *LineError and the next call to Next reads
//     the following line. Only io.EOF and errors of the underlying reader end
//     the stream, and both are sticky.
//   - An Untyped reader (JSON-RPC, protocol/acp) accepts objects without a
//     usable "type" field; their Line.Type is "".
//   - A returned Line owns its bytes: Raw is valid JSON, is an object, and has
//     a non-empty string "type" field, matched the way encoding/json matches
//     a `json:"type"` tag, so Line.Type agrees with what Line.Decode fills in.
//
// Invariants of Writer:
//   - Every value becomes exactly one line, written with a single Write call
//     on the underlying writer while a lock is held, so lines from concurrent
//     goroutines never interleave and a reader never sees half a line.
//   - <, > and & are written as themselves, not as \u003c escapes.
//   - After the underlying writer fails, the stream may end in a partial line;
//     every later write returns that first error instead of corrupting the
//     framing further.
package protocol

import (
	"errors"
	"fmt"
)

// MaxLine is the default longest accepted input line (1 MiB, without the newline).
const MaxLine = 1 << 20

// Sentinels classify bad input; callers use errors.Is. *LineError wraps them.
var (
	// ErrLineTooLong: the line exceeds the reader's limit (the envelope
	// protocol answers with code "stdin_line_too_long").
	ErrLineTooLong = errors.New("input line too long")
	// ErrInvalidJSON: the line is not JSON, or does not decode into the
	// requested Go value.
	ErrInvalidJSON = errors.New("invalid JSON")
	// ErrNotObject: the line is JSON but not an object.
	ErrNotObject = errors.New("not a JSON object")
	// ErrNoType: the object has no "type" field, or it is not a non-empty string.
	ErrNoType = errors.New("missing type")
	// ErrNewline: a value given to Writer.WriteRaw spans several lines.
	ErrNewline = errors.New("value contains a newline")
)

// LineError says what was wrong with input line Number (1-based); it unwraps
// to one of the sentinels.
type LineError struct {
	// Number is the physical line number, blank lines included.
	Number int
	// Len is the line's length in bytes, without its terminator.
	Len int
	// Err is ErrLineTooLong, ErrInvalidJSON, ErrNotObject or ErrNoType.
	Err error
	// Detail is a human-readable explanation, possibly empty.
	Detail string
}

func (e *LineError) Error() string {
	if e.Detail == "" {
		return fmt.Sprintf("line %d: %v", e.Number, e.Err)
	}
	return fmt.Sprintf("line %d: %v: %s", e.Number, e.Err, e.Detail)
}

func (e *LineError) Unwrap() error { return e.Err }
