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
