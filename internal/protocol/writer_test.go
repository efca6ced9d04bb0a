package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// chunkWriter passes each Write on in small pieces, as a pipe or socket may,
// so that two unsynchronised writers would interleave. It records how many
// Write calls it got and fails the test if one was not exactly one line.
type chunkWriter struct {
	t      *testing.T
	w      io.Writer
	chunk  int
	writes atomic.Int64
}

func (c *chunkWriter) Write(p []byte) (int, error) {
	c.writes.Add(1)
	if bytes.IndexByte(p, '\n') != len(p)-1 {
		c.t.Errorf("one Write call carried %q, not exactly one line", p)
	}
	for off := 0; off < len(p); off += c.chunk {
		if _, err := c.w.Write(p[off:min(off+c.chunk, len(p))]); err != nil {
			return off, err
		}
	}
	return len(p), nil
}

// failWriter fails every Write after the first ok ones and counts calls.
type failWriter struct {
	ok    int
	n     int
	calls int
	err   error
	buf   bytes.Buffer
}

func (f *failWriter) Write(p []byte) (int, error) {
	f.calls++
	if f.calls > f.ok {
		return f.n, f.err
	}
	return f.buf.Write(p)
}

type message struct {
	Type string `json:"type"`
	G    int    `json:"g"`
	I    int    `json:"i"`
	Pad  string `json:"pad"`
}

func TestWriterConcurrent(t *testing.T) {
	t.Parallel()
	const goroutines, perGoroutine = 16, 200

	pr, pw := io.Pipe()
	cw := &chunkWriter{t: t, w: pw, chunk: 7}
	w := NewWriter(cw)

	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range perGoroutine {
				m := message{Type: "msg", G: g, I: i, Pad: strings.Repeat("<&>", (g*perGoroutine+i)%97)}
				if err := w.Write(m); err != nil {
					t.Errorf("goroutine %d: write %d: %v", g, i, err)
					return
				}
			}
		})
	}
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		wg.Wait()
		pw.Close()
	}()
	// If the test fails early, unblock the writers and wait for them.
	t.Cleanup(func() {
		pr.Close()
		<-closed
	})

	next := make([]int, goroutines) // next expected I per goroutine
	r := NewReader(pr, 0)
	for {
		line, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("interleaved output: %v", err)
		}
		var m message
		if err := line.Decode(&m); err != nil {
			t.Fatal(err)
		}
		if m.G < 0 || m.G >= goroutines || m.I != next[m.G] || len(m.Pad) != 3*((m.G*perGoroutine+m.I)%97) {
			t.Fatalf("line %d: unexpected message %+v", line.Number, m)
		}
		next[m.G]++
	}
	for g, n := range next {
		if n != perGoroutine {
			t.Fatalf("goroutine %d: read %d lines, want %d", g, n, perGoroutine)
		}
	}
	if got := cw.writes.Load(); got != goroutines*perGoroutine {
		t.Fatalf("%d Write calls for %d lines", got, goroutines*perGoroutine)
	}
}

func TestWriter(t *testing.T) {
	t.Parallel()

	setupWriter := func() (*Writer, *bytes.Buffer) {
		var buf bytes.Buffer
		return NewWriter(&buf), &buf
	}

	t.Run("HTMLCharactersNotEscaped", func(t *testing.T) {
		t.Parallel()
		w, out := setupWriter()
		if err := w.Write(message{Type: "text", Pad: `<a href="q?a=1&b=2">`}); err != nil {
			t.Fatal(err)
		}
		want := `{"type":"text","g":0,"i":0,"pad":"<a href=\"q?a=1&b=2\">"}` + "\n"
		if out.String() != want {
			t.Fatalf("got %q, want %q", out, want)
		}
	})

	t.Run("MarshalerOutputIsOneLine", func(t *testing.T) {
		t.Parallel()
		w, out := setupWriter()
		if err := w.Write(json.RawMessage("{\n  \"type\": \"x\",\n  \"a\": [1, 2]\n}")); err != nil {
			t.Fatal(err)
		}
		if want := `{"type":"x","a":[1,2]}` + "\n"; out.String() != want {
			t.Fatalf("got %q, want %q", out, want)
		}
	})

	t.Run("UnmarshallableValueWritesNothing", func(t *testing.T) {
		t.Parallel()
		w, out := setupWriter()
		err := w.Write(make(chan int))
		var typeErr *json.UnsupportedTypeError
		if !errors.As(err, &typeErr) || out.Len() != 0 {
			t.Fatalf("got %v and %q written, want an UnsupportedTypeError and nothing", err, out)
		}
		if err := w.Write(message{Type: "after"}); err != nil {
			t.Fatalf("a marshal error must not break the writer: %v", err)
		}
	})

	t.Run("WriteRaw", func(t *testing.T) {
		t.Parallel()
		w, out := setupWriter()
		if err := w.WriteRaw([]byte(`{"type":"x", "y":"<>"}`)); err != nil {
			t.Fatal(err)
		}
		if err := w.WriteRaw([]byte("{\"type\":\n\"x\"}")); !errors.Is(err, ErrNewline) {
			t.Fatalf("got %v, want ErrNewline", err)
		}
		for _, bad := range []string{"", `{"type":`, `{"a":1}{"b":2}`, "\xff"} {
			if err := w.WriteRaw([]byte(bad)); !errors.Is(err, ErrInvalidJSON) {
				t.Fatalf("%q: got %v, want ErrInvalidJSON", bad, err)
			}
		}
		if want := `{"type":"x", "y":"<>"}` + "\n"; out.String() != want {
			t.Fatalf("got %q, want %q", out, want)
		}
	})

	t.Run("WriteErrorIsSticky", func(t *testing.T) {
		t.Parallel()
		errBoom := errors.New("boom")
		f := &failWriter{ok: 1, n: 3, err: errBoom}
		w := NewWriter(f)
		if err := w.Write(message{Type: "a"}); err != nil {
			t.Fatal(err)
		}
		if err := w.Write(message{Type: "b"}); !errors.Is(err, errBoom) {
			t.Fatalf("got %v, want errBoom", err)
		}
		if err := w.WriteRaw([]byte(`{"type":"c"}`)); !errors.Is(err, errBoom) || f.calls != 2 {
			t.Fatalf("got %v after %d calls, want errBoom without touching the writer again", err, f.calls)
		}
	})

	t.Run("ShortWriteIsAnError", func(t *testing.T) {
		t.Parallel()
		w := NewWriter(&failWriter{n: 2})
		if err := w.Write(message{Type: "a"}); !errors.Is(err, io.ErrShortWrite) {
			t.Fatalf("got %v, want io.ErrShortWrite", err)
		}
	})
}
