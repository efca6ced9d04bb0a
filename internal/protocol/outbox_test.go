package protocol_test

import (
	"bufio"
	"errors"
	"io"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/arbor-run/arbor/internal/protocol"
)

func TestOutbox(t *testing.T) {
	t.Parallel()

	t.Run("put never waits for a reader and lines keep their order", func(t *testing.T) {
		t.Parallel()
		r, w := io.Pipe()
		o := protocol.NewOutbox(w, func(err error) { t.Error(err) })
		// Nobody reads the pipe yet: every Put must return anyway.
		const n = 10_000
		for i := range n {
			if err := o.Put(map[string]int{"n": i}); err != nil {
				t.Fatal(err)
			}
		}
		got := make(chan int)
		go func() {
			sc := bufio.NewScanner(r)
			i := 0
			for sc.Scan() {
				if want := `{"n":` + strconv.Itoa(i) + `}`; sc.Text() != want {
					t.Errorf("line %d is %q, want %q", i, sc.Text(), want)
				}
				i++
			}
			got <- i
		}()
		o.Close() // writes everything queued first
		w.Close()
		if lines := <-got; lines != n {
			t.Fatalf("%d lines written, want %d", lines, n)
		}
		if err := o.Put("late"); err != nil {
			t.Fatalf("put after close: %v", err)
		}
	})

	t.Run("lines queued during a write go out in one write", func(t *testing.T) {
		t.Parallel()
		w := &gatedWriter{entered: make(chan struct{}, 1), release: make(chan struct{})}
		o := protocol.NewOutbox(w, func(err error) { t.Error(err) })
		if err := o.Put(0); err != nil {
			t.Fatal(err)
		}
		<-w.entered // the first line's write has begun and waits
		for i := 1; i <= 3; i++ {
			if err := o.Put(i); err != nil {
				t.Fatal(err)
			}
		}
		close(w.release)
		o.Close()
		want := []string{"0\n", "1\n2\n3\n"}
		if len(w.writes) != len(want) {
			t.Fatalf("writes %q, want %q", w.writes, want)
		}
		for i := range want {
			if w.writes[i] != want[i] {
				t.Fatalf("writes %q, want %q", w.writes, want)
			}
		}
	})

	t.Run("written lines go out as they are, after the ones put before", func(t *testing.T) {
		t.Parallel()
		w := &gatedWriter{entered: make(chan struct{}, 1), release: make(chan struct{})}
		o := protocol.NewOutbox(w, func(err error) { t.Error(err) })
		if err := o.Put(0); err != nil {
			t.Fatal(err)
		}
		<-w.entered // the writer blocks: Write must return anyway
		line := []byte(`{"id":1}` + "\n")
		if n, err := o.Write(line); n != len(line) || err != nil {
			t.Fatalf("Write: %d, %v", n, err)
		}
		copy(line, "xxxxxxxx") // the caller's buffer is its own again
		close(w.release)
		o.Close()
		if n, err := o.Write([]byte("late\n")); n != 5 || err != nil {
			t.Fatalf("Write after Close: %d, %v", n, err)
		}
		if want := []string{"0\n", `{"id":1}` + "\n"}; len(w.writes) != 2 || w.writes[0] != want[0] || w.writes[1] != want[1] {
			t.Fatalf("writes %q, want %q", w.writes, want)
		}
	})

	t.Run("an unencodable value is an error and queues nothing", func(t *testing.T) {
		t.Parallel()
		o := protocol.NewOutbox(io.Discard, nil)
		defer o.Close()
		if err := o.Put(func() {}); err == nil {
			t.Fatal("a func was queued")
		}
	})

	t.Run("a failing writer is reported once", func(t *testing.T) {
		t.Parallel()
		var reports atomic.Int32
		r, w := io.Pipe()
		r.CloseWithError(errors.New("client gone"))
		o := protocol.NewOutbox(w, func(error) { reports.Add(1) })
		for range 100 {
			_ = o.Put("x")
		}
		o.Close()
		if n := reports.Load(); n != 1 {
			t.Fatalf("%d failures reported, want 1", n)
		}
	})
}

// gatedWriter records each Write; the first waits for release.
type gatedWriter struct {
	entered chan struct{}
	release chan struct{}
	writes  []string // only the outbox's goroutine writes, until Close returns
}

func (w *gatedWriter) Write(p []byte) (int, error) {
	if len(w.writes) == 0 {
		w.entered <- struct{}{}
		<-w.release
	}
	w.writes = append(w.writes, string(p))
	return len(p), nil
}
