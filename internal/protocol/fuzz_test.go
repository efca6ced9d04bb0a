package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

// FuzzReader checks the Reader against the framing rules for any bytes
// and any line limit: it never panics and always terminates; every line
// that is not blank gets exactly one result, in order, with its physical
// line number, and blank lines none; a Line's Raw is exactly the line's
// trimmed content, a JSON object whose string type is Line.Type; a
// LineError wraps a sentinel, ErrLineTooLong exactly when the line is
// over the limit; and reading a byte at a time gives the same results.
func FuzzReader(f *testing.F) {
	seeds := []string{
		"{\"type\":\"a\"}\r\n{\"type\":\"b\",\"x\":1}\r\n",
		"\n\n  \t\r\n{\"type\":\"a\"}\n\n",
		"{\"type\":\"a\"}\n{\"type\":\"b\"}",
		`{"type":"send","content":"` + strings.Repeat("x", 300) + "\"}\n{\"type\":\"status\"}\n",
		"{\"type\":\"a\"\nnot json\n{\"type\":\"a\"} {\"type\":\"b\"}\n{\"type\":\"a\",}\n",
		"[1,2]\n42\n\"user\"\nnull\ntrue\n",
		"{}\n{\"type\":1}\n{\"type\":null}\n{\"type\":\"\"}\n{\"Type\":\"x\"}\n{\"type\":\"a\",\"type\":\"b\"}\n",
		"\xef\xbb\xbf{\"type\":\"héllo\",\"text\":\"日本語 🌳\"}\n{\"type\":\"\\u0075ser\"}\n{\"type\":\"a\",\"x\":\"\xff\"}",
		"\r\r\n\r",
	}
	for _, s := range seeds {
		f.Add([]byte(s), uint16(0))
		f.Add([]byte(s), uint16(16))
	}
	f.Fuzz(func(t *testing.T, data []byte, limit uint16) {
		max := int(limit)
		if max == 0 {
			max = MaxLine
		}
		physical := bytes.Count(data, []byte{'\n'}) + 1
		want := expectLines(data, max)
		got := checkFuzzRead(t, NewReader(bytes.NewReader(data), int(limit)), want, max, physical)
		// Reading the same bytes a byte at a time must give the same results.
		again := checkFuzzRead(t, NewReader(iotest.OneByteReader(bytes.NewReader(data)), int(limit)), want, max, physical)
		if !slices.Equal(got, again) {
			t.Fatalf("results depend on read sizes:\n%q\n%q", got, again)
		}
	})
}

// expectLines frames data as the package doc says, independently of the
// Reader: the content of every physical line that is not blank, by line
// number, trimmed of JSON whitespace (and, on line 1, of a byte order
// mark); nil for a line longer than max, whose length counts the bytes
// before its terminator ("\n", or "\r\n").
func expectLines(data []byte, max int) map[int][]byte {
	want := map[int][]byte{}
	lines := bytes.Split(data, []byte("\n"))
	for i, l := range lines {
		last := i == len(lines)-1
		if last && len(l) == 0 {
			break // data ends with a newline, or is empty
		}
		if !last {
			l = bytes.TrimSuffix(l, []byte("\r"))
		}
		if len(l) > max {
			want[i+1] = nil
			continue
		}
		if i == 0 {
			l = bytes.TrimPrefix(l, []byte("\xef\xbb\xbf"))
		}
		if l = bytes.Trim(l, " \t\r\n"); len(l) > 0 {
			want[i+1] = l
		}
	}
	return want
}

// checkFuzzRead reads r to the end, checks every result against the
// Reader's invariants and against want (one result for every line that
// is not blank, and none for the others), and returns the results in
// comparable form.
func checkFuzzRead(t *testing.T, r *Reader, want map[int][]byte, max, physical int) []string {
	var (
		results []item
		prev    int
	)
	for {
		if len(results) > physical {
			t.Fatalf("%d results from %d physical lines: Next does not terminate", len(results), physical)
		}
		line, err := r.Next()
		if err == io.EOF {
			break
		}
		var lerr *LineError
		number := line.Number
		switch {
		case err == nil:
			checkFuzzLine(t, line, max)
			if w := want[line.Number]; !bytes.Equal(line.Raw, w) {
				t.Fatalf("line %d: Raw %q, but the line holds %q", line.Number, line.Raw, w)
			}
		case errors.As(err, &lerr):
			number = lerr.Number
			if !slices.ContainsFunc([]error{ErrLineTooLong, ErrInvalidJSON, ErrNotObject, ErrNoType}, func(s error) bool { return lerr.Err == s }) {
				t.Fatalf("LineError wraps %v, not a sentinel", lerr.Err)
			}
			if (lerr.Err == ErrLineTooLong) != (lerr.Len > max) {
				t.Fatalf("line %d: %v with length %d and limit %d", lerr.Number, lerr.Err, lerr.Len, max)
			}
			if w, ok := want[lerr.Number]; ok && (w == nil) != (lerr.Err == ErrLineTooLong) {
				t.Fatalf("line %d: %v, but the line is %q", lerr.Number, lerr.Err, w)
			}
		default:
			t.Fatalf("unexpected error %v", err)
		}
		if number <= prev || number > physical {
			t.Fatalf("line number %d after %d, input has %d lines", number, prev, physical)
		}
		if _, ok := want[number]; !ok {
			t.Fatalf("a result for line %d, which is blank", number)
		}
		prev = number
		results = append(results, item{line, err})
	}
	if len(results) != len(want) {
		t.Fatalf("%d results for %d lines that are not blank", len(results), len(want))
	}
	return describe(results)
}

func checkFuzzLine(t *testing.T, line Line, max int) {
	if !json.Valid(line.Raw) || line.Raw[0] != '{' {
		t.Fatalf("line %d: Raw %q is not a JSON object", line.Number, line.Raw)
	}
	if len(line.Raw) > max {
		t.Fatalf("line %d: Raw %q is longer than %d", line.Number, line.Raw, max)
	}
	var head struct {
		Type *string `json:"type"`
	}
	if err := line.Decode(&head); err != nil {
		t.Fatalf("line %d: Decode: %v", line.Number, err)
	}
	if head.Type == nil || *head.Type == "" || *head.Type != line.Type {
		t.Fatalf("line %d: type %q, but Raw %q decodes to %v", line.Number, line.Type, line.Raw, head.Type)
	}
}
