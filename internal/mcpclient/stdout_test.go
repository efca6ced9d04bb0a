package mcpclient

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// filtered is what lineFilter passes of in, read in pieces of n bytes,
// and the lines it noted.
func filtered(t *testing.T, in string, n int) (string, []string) {
	t.Helper()
	var notes []string
	f := newLineFilter(io.NopCloser(iotest.OneByteReader(strings.NewReader(in))), func(s string) { notes = append(notes, s) }, func() {})
	var out bytes.Buffer
	buf := make([]byte, n)
	for {
		k, err := f.Read(buf)
		out.Write(buf[:k])
		if errors.Is(err, io.EOF) {
			return out.String(), notes
		}
		if err != nil {
			t.Fatalf("read: %v", err)
		}
	}
}

// wantPassed is what the filter should pass of in: the lines that open
// with '{' or with '[' before '{' or ']', without their leading blanks.
func wantPassed(in string) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(in, "\n") {
		l := strings.TrimLeft(line, " \t\r\n")
		rest := strings.TrimLeft(strings.TrimPrefix(l, "["), " \t\r")
		if strings.HasPrefix(l, "{") || strings.HasPrefix(l, "[") && (strings.HasPrefix(rest, "{") || strings.HasPrefix(rest, "]")) {
			b.WriteString(l)
		}
	}
	return b.String()
}

func TestLineFilter(t *testing.T) {
	t.Parallel()
	for name, in := range map[string]string{
		"messages only":     "{\"a\":1}\n{\"b\":2}\n",
		"banner first":      "Server running on stdio\n{\"a\":1}\n",
		"debug between":     "{\"a\":1}\n[debug] x\n{\"b\":2}\n",
		"batch":             "[{\"a\":1}]\n[ ]\n",
		"blank lines":       "\n\r\n  \n{\"a\":1}\n",
		"no newline at end": "junk\n{\"a\":1}",
		"junk at end":       "{\"a\":1}\ntrailing junk",
	} {
		for _, n := range []int{1, 3, 4096} {
			got, _ := filtered(t, in, n)
			if want := wantPassed(in); got != want {
				t.Fatalf("%s (reads of %d): passed %q, want %q", name, n, got, want)
			}
		}
	}
	_, notes := filtered(t, "Server running on stdio\n{}\n", 7)
	if len(notes) != 1 || !strings.Contains(notes[0], `"Server running on stdio"`) {
		t.Fatalf("notes = %q", notes)
	}
}

func FuzzLineFilter(f *testing.F) {
	for _, s := range []string{"{}\n", "x\n{}\n", "[x]\n[{}]\n", " \t{\n", "[", "{\"a\":\"b\\n\"}\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		if got, want := func() (string, string) { g, _ := filtered(t, in, 5); return g, wantPassed(in) }(); got != want {
			t.Fatalf("passed %q, want %q", got, want)
		}
	})
}
