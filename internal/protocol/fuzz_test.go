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
		got := checkFuzzRead(t, NewReader(bytes.NewReader(data), int(limit)), data, max, physical)
		// Reading the same bytes a byte at a time must give the same results.
		again := checkFuzzRead(t, NewReader(iotest.OneByteReader(bytes.NewReader(data)), int(limit)), data, max, physical)
		if !slices.Equal(got, again) {
			t.Fatalf("results depend on read sizes:\n%q\n%q", got, again)
		}
	})
}

// checkFuzzRead reads r to the end, checks every result against the
// Reader's invariants and returns the results in comparable form.
func checkFuzzRead(t *testing.T, r *Reader, data []byte, max, physical int) []string {
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
			checkFuzzLine(t, line, data, max)
		case errors.As(err, &lerr):
			number = lerr.Number
			if !slices.ContainsFunc([]error{ErrLineTooLong, ErrInvalidJSON, ErrNotObject, ErrNoType}, func(s error) bool { return lerr.Err == s }) {
				t.Fatalf("LineError wraps %v, not a sentinel", lerr.Err)
			}
			if (lerr.Err == ErrLineTooLong) != (lerr.Len > max) {
				t.Fatalf("line %d: %v with length %d and limit %d", lerr.Number, lerr.Err, lerr.Len, max)
			}
		default:
			t.Fatalf("unexpected error %v", err)
		}
		if number <= prev || number > physical {
			t.Fatalf("line number %d after %d, input has %d lines", number, prev, physical)
		}
		prev = number
		results = append(results, item{line, err})
	}
	return describe(results)
}

func checkFuzzLine(t *testing.T, line Line, data []byte, max int) {
	if !json.Valid(line.Raw) || line.Raw[0] != '{' {
		t.Fatalf("line %d: Raw %q is not a JSON object", line.Number, line.Raw)
	}
	if len(line.Raw) > max || !bytes.Contains(data, line.Raw) {
		t.Fatalf("line %d: Raw %q is longer than %d or not from the input", line.Number, line.Raw, max)
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
