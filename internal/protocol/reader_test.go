package protocol

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

// item is one result of Reader.Next.
type item struct {
	line Line
	err  error
}

func setup(t *testing.T, input string, max int) *Reader {
	t.Helper()
	return NewReader(strings.NewReader(input), max)
}

// readAll calls Next until io.EOF; any error other than a *LineError fails.
func readAll(t *testing.T, r *Reader) []item {
	t.Helper()
	var items []item
	for range 100_000 {
		line, err := r.Next()
		if err == io.EOF {
			if _, again := r.Next(); again != io.EOF {
				t.Fatalf("Next after io.EOF returned %v, want io.EOF again", again)
			}
			return items
		}
		var lerr *LineError
		if err != nil && !errors.As(err, &lerr) {
			t.Fatalf("Next: unexpected error %v", err)
		}
		items = append(items, item{line, err})
	}
	t.Fatal("Next never returned io.EOF")
	return nil
}

// describe renders results comparably: errors by message, not by pointer.
func describe(items []item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		if it.err != nil {
			out[i] = it.err.Error()
		} else {
			out[i] = fmt.Sprintf("%d %s %s", it.line.Number, it.line.Type, it.line.Raw)
		}
	}
	return out
}

func requireCount(t *testing.T, items []item, want int) {
	t.Helper()
	if len(items) != want {
		t.Fatalf("got %d results, want %d: %+v", len(items), want, items)
	}
}

func requireLine(t *testing.T, it item, number int, typ, raw string) {
	t.Helper()
	if it.err != nil {
		t.Fatalf("want line %d, got error %v", number, it.err)
	}
	if it.line.Number != number || it.line.Type != typ || string(it.line.Raw) != raw {
		t.Fatalf("got line %d type %q raw %q, want line %d type %q raw %q",
			it.line.Number, it.line.Type, it.line.Raw, number, typ, raw)
	}
}

func requireLineErr(t *testing.T, it item, number, length int, sentinel error) *LineError {
	t.Helper()
	var lerr *LineError
	if !errors.As(it.err, &lerr) {
		t.Fatalf("want *LineError for line %d, got line %+v err %v", number, it.line, it.err)
	}
	if !errors.Is(it.err, sentinel) || lerr.Number != number || lerr.Len != length {
		t.Fatalf("got %v (line %d, len %d), want %v on line %d, len %d",
			it.err, lerr.Number, lerr.Len, sentinel, number, length)
	}
	return lerr
}

// countingReader counts the bytes its consumer read.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func TestReader(t *testing.T) {
	t.Parallel()

	t.Run("CRLF", func(t *testing.T) {
		t.Parallel()
		items := readAll(t, setup(t, "{\"type\":\"a\"}\r\n{\"type\":\"b\", \"x\":1}\r\n", 0))
		requireCount(t, items, 2)
		requireLine(t, items[0], 1, "a", `{"type":"a"}`)
		requireLine(t, items[1], 2, "b", `{"type":"b", "x":1}`)
	})

	t.Run("BlankLinesSkippedButCounted", func(t *testing.T) {
		t.Parallel()
		items := readAll(t, setup(t, "\n\n  \t\r\n  {\"type\":\"a\"}  \n\r\n{\"type\":\"b\"}\n\n", 0))
		requireCount(t, items, 2)
		requireLine(t, items[0], 4, "a", `{"type":"a"}`)
		requireLine(t, items[1], 6, "b", `{"type":"b"}`)
	})

	t.Run("EmptyInput", func(t *testing.T) {
		t.Parallel()
		requireCount(t, readAll(t, setup(t, "", 0)), 0)
		requireCount(t, readAll(t, setup(t, "\n\r\n \n", 0)), 0)
	})

	t.Run("LastLineWithoutNewline", func(t *testing.T) {
		t.Parallel()
		items := readAll(t, setup(t, "{\"type\":\"a\"}\r\n{\"type\":\"b\"}", 0))
		requireCount(t, items, 2)
		requireLine(t, items[1], 2, "b", `{"type":"b"}`)

		items = readAll(t, setup(t, "{\"type\":\"a\"}\r", 0))
		requireCount(t, items, 1)
		requireLine(t, items[0], 1, "a", `{"type":"a"}`)
	})

	t.Run("LongLineSkippedAndReadingContinues", func(t *testing.T) {
		t.Parallel()
		long := `{"type":"send","content":"` + strings.Repeat("x", 3<<20) + `"}`
		input := long + "\n" + `{"type":"status"}` + "\n"
		src := &countingReader{r: strings.NewReader(input)}
		r := NewReader(src, 0)

		items := readAll(t, r)
		requireCount(t, items, 2)
		lerr := requireLineErr(t, items[0], 1, len(long), ErrLineTooLong)
		if lerr.Detail != fmt.Sprintf("%d bytes, limit %d", len(long), MaxLine) {
			t.Fatalf("detail %q", lerr.Detail)
		}
		requireLine(t, items[1], 2, "status", `{"type":"status"}`)
		if src.n != int64(len(input)) {
			t.Fatalf("read %d of %d input bytes", src.n, len(input))
		}
		if cap(r.buf) > MaxLine+1 {
			t.Fatalf("line buffer grew to %d bytes, limit is %d", cap(r.buf), MaxLine+1)
		}
	})

	t.Run("LimitIsExclusiveOfTerminator", func(t *testing.T) {
		t.Parallel()
		fits := `{"type":"abcde"}` // 16 bytes
		over := `{"type":"abcdef"}`
		input := fits + "\n" + fits + "\r\n" + over + "\r\n" + over + "\n" + fits + "\n" + over
		items := readAll(t, setup(t, input, len(fits)))
		requireCount(t, items, 6)
		requireLine(t, items[0], 1, "abcde", fits)
		requireLine(t, items[1], 2, "abcde", fits)
		requireLineErr(t, items[2], 3, len(over), ErrLineTooLong)
		requireLineErr(t, items[3], 4, len(over), ErrLineTooLong)
		requireLine(t, items[4], 5, "abcde", fits)
		requireLineErr(t, items[5], 6, len(over), ErrLineTooLong)
	})

	t.Run("SmallLimitBoundsBuffer", func(t *testing.T) {
		t.Parallel()
		input := strings.Repeat(`{"type":"x","pad":"`+strings.Repeat("p", 500)+`"}`+"\n", 50) + `{"type":"y"}`
		r := setup(t, input, 64)
		items := readAll(t, r)
		requireCount(t, items, 51)
		for i := range 50 {
			requireLineErr(t, items[i], i+1, 521, ErrLineTooLong)
		}
		requireLine(t, items[50], 51, "y", `{"type":"y"}`)
		if cap(r.buf) > 65 || r.br.Size() > 66 {
			t.Fatalf("buffers: line %d, bufio %d; want at most 65 and 66", cap(r.buf), r.br.Size())
		}
	})

	t.Run("InvalidJSON", func(t *testing.T) {
		t.Parallel()
		bad := []string{`{"type":"a"`, `not json`, `{"type":"a"} {"type":"b"}`, `{"type":"a",}`, `{'type':'a'}`, "{\"type\":\"a\x00\"}"}
		input := strings.Join(bad, "\n") + "\n" + `{"type":"ok"}` + "\n"
		items := readAll(t, setup(t, input, 0))
		requireCount(t, items, len(bad)+1)
		for i, b := range bad {
			if lerr := requireLineErr(t, items[i], i+1, len(b), ErrInvalidJSON); lerr.Detail == "" {
				t.Fatalf("line %d: no detail", i+1)
			}
		}
		requireLine(t, items[len(bad)], len(bad)+1, "ok", `{"type":"ok"}`)
	})

	t.Run("NotObject", func(t *testing.T) {
		t.Parallel()
		cases := map[string]string{`[1,2]`: "got an array", `42`: "got a number", `-1.5e3`: "got a number",
			`"user"`: "got a string", `null`: "got null", `true`: "got a boolean", `[{"type":"a"}]`: "got an array"}
		for in, detail := range cases {
			items := readAll(t, setup(t, in+"\n", 0))
			requireCount(t, items, 1)
			if lerr := requireLineErr(t, items[0], 1, len(in), ErrNotObject); lerr.Detail != detail {
				t.Fatalf("%s: detail %q, want %q", in, lerr.Detail, detail)
			}
		}
	})

	t.Run("MissingOrNonStringType", func(t *testing.T) {
		t.Parallel()
		cases := map[string]string{`{}`: `no "type" field`, `{"kind":"user"}`: `no "type" field`,
			`{"type":null}`: `no "type" field`, `{"type":1}`: `"type" is a number, not a string`,
			`{"type":{"a":1}}`: `"type" is an object, not a string`, `{"type":["a"]}`: `"type" is an array, not a string`,
			`{"type":false}`: `"type" is a boolean, not a string`, `{"type":""}`: `"type" is empty`}
		for in, detail := range cases {
			items := readAll(t, setup(t, in, 0))
			requireCount(t, items, 1)
			if lerr := requireLineErr(t, items[0], 1, len(in), ErrNoType); lerr.Detail != detail {
				t.Fatalf("%s: detail %q, want %q", in, lerr.Detail, detail)
			}
		}
	})

	t.Run("TypeMatchedLikeEncodingJSON", func(t *testing.T) {
		t.Parallel()
		// Decode into a `json:"type"` field would see the same values.
		items := readAll(t, setup(t, `{"Type":"a"}`+"\n"+`{"type":"a","type":"b"}`, 0))
		requireCount(t, items, 2)
		requireLine(t, items[0], 1, "a", `{"Type":"a"}`)
		requireLine(t, items[1], 2, "b", `{"type":"a","type":"b"}`)
	})

	t.Run("Unicode", func(t *testing.T) {
		t.Parallel()
		lines := []string{`{"type":"héllo","text":"日本語 🌳"}`, `{"type":"\u0075ser"}`, `{"type":"\ud83c\udf33"}`, "{\"type\":\"a\",\"x\":\"\xff\"}"}
		items := readAll(t, setup(t, "\xef\xbb\xbf"+strings.Join(lines, "\n"), 0))
		requireCount(t, items, 4)
		requireLine(t, items[0], 1, "héllo", lines[0])
		requireLine(t, items[1], 2, "user", lines[1])
		requireLine(t, items[2], 3, "🌳", lines[2])
		requireLine(t, items[3], 4, "a", lines[3])

		// A byte order mark is only ignored at the start of the stream.
		items = readAll(t, setup(t, "{\"type\":\"a\"}\n\xef\xbb\xbf{\"type\":\"b\"}", 0))
		requireCount(t, items, 2)
		requireLineErr(t, items[1], 2, 15, ErrInvalidJSON)
	})

	t.Run("RawIsOwnedByCaller", func(t *testing.T) {
		t.Parallel()
		r := setup(t, `{"type":"a"}`+"\n"+`{"type":"b"}`+"\n", 0)
		first, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Next(); err != nil {
			t.Fatal(err)
		}
		if string(first.Raw) != `{"type":"a"}` {
			t.Fatalf("first line's Raw changed to %q after reading on", first.Raw)
		}
	})

	t.Run("SmallReadsGiveSameResult", func(t *testing.T) {
		t.Parallel()
		input := "\xef\xbb\xbf{\"type\":\"a\"}\r\n\n[1]\n" + strings.Repeat("z", 100) + "\n{\"type\":\"日本\"}\r\n{\"type\":1}\n{\"type\":\"end\"}"
		want := describe(readAll(t, setup(t, input, 40)))
		if len(want) != 6 {
			t.Fatalf("got %d results, want 6: %q", len(want), want)
		}
		for name, wrap := range map[string]func(io.Reader) io.Reader{
			"OneByte": iotest.OneByteReader, "Half": iotest.HalfReader, "DataErr": iotest.DataErrReader,
		} {
			got := describe(readAll(t, NewReader(wrap(strings.NewReader(input)), 40)))
			if !slices.Equal(got, want) {
				t.Fatalf("%s reader: got %v, want %v", name, got, want)
			}
		}
	})

	t.Run("ReadErrorReturnedAsIsAndSticky", func(t *testing.T) {
		t.Parallel()
		errBoom := errors.New("boom")
		pr, pw := io.Pipe()
		done := make(chan struct{})
		go func() {
			defer close(done)
			if _, err := io.WriteString(pw, `{"type":"a"}`+"\n"+`{"type":"partial`); err != nil {
				t.Errorf("write: %v", err)
			}
			pw.CloseWithError(errBoom)
		}()
		r := NewReader(pr, 0)
		line, err := r.Next()
		if err != nil || line.Type != "a" {
			t.Fatalf("got %+v, %v", line, err)
		}
		for range 2 {
			_, err = r.Next()
			var lerr *LineError
			if err != errBoom || errors.As(err, &lerr) {
				t.Fatalf("got %v, want the reader's own error", err)
			}
		}
		<-done
	})
}

func TestLineDecode(t *testing.T) {
	t.Parallel()

	type send struct {
		Type    string `json:"type"`
		Content string `json:"content"`
	}
	items := readAll(t, setup(t, `{"type":"send","content":"hi","future_field":[1,2]}`+"\n"+`{"type":"send","content":5}`, 0))
	requireCount(t, items, 2)

	var got send
	if err := items[0].line.Decode(&got); err != nil {
		t.Fatalf("unknown fields must be allowed: %v", err)
	}
	if got != (send{Type: "send", Content: "hi"}) {
		t.Fatalf("decoded %+v", got)
	}

	err := items[1].line.Decode(&got)
	var lerr *LineError
	if !errors.Is(err, ErrInvalidJSON) || !errors.As(err, &lerr) || lerr.Number != 2 || !strings.Contains(lerr.Detail, "content") {
		t.Fatalf("got %v, want a *LineError for line 2 wrapping ErrInvalidJSON and naming the field", err)
	}
}

func TestLineErrorMessage(t *testing.T) {
	t.Parallel()
	err := error(&LineError{Number: 3, Len: 9, Err: ErrNoType, Detail: `no "type" field`})
	if got, want := err.Error(), `line 3: missing type: no "type" field`; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	err = &LineError{Number: 1, Err: ErrNotObject}
	if got, want := err.Error(), "line 1: not a JSON object"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if !errors.Is(fmt.Errorf("read stdin: %w", err), ErrNotObject) {
		t.Fatal("a wrapped LineError must unwrap to its sentinel")
	}
}
