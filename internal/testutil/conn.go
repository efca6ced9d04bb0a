package testutil

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
)

// hangBound is how long Recv waits for a line: it bounds hangs, it times
// nothing.
const hangBound = 30 * time.Second

// Conn drives a protocol server in-process over pipes, as the protocol
// tests do: Send writes input lines, Recv and Next read output lines
// decoded into T, Close ends the input and waits for the server.
type Conn[T any] struct {
	t    *testing.T
	in   *io.PipeWriter
	outs chan T
	done chan error
	// Diag collects what the server writes to its diagnostics stream.
	Diag *SyncBuffer
	// All holds every output line read so far, in order.
	All []T
}

// Serve runs serve on pipes and returns its connection. decode turns an
// output line into T; a line it refuses fails the test and is skipped.
func Serve[T any](t *testing.T, serve func(in io.Reader, out, diag io.Writer) error, decode func(line string) (T, error)) *Conn[T] {
	t.Helper()
	pr, pw := io.Pipe()
	or, ow := io.Pipe()
	c := &Conn[T]{t: t, in: pw, outs: make(chan T, 4096), done: make(chan error, 1), Diag: &SyncBuffer{}}
	go func() {
		err := serve(pr, ow, c.Diag)
		ow.Close()
		c.done <- err
	}()
	go func() {
		sc := bufio.NewScanner(or)
		sc.Buffer(make([]byte, 1<<20), 4<<20)
		for sc.Scan() {
			v, err := decode(sc.Text())
			if err != nil {
				t.Errorf("output line %q: %v", sc.Text(), err)
				continue
			}
			c.outs <- v
		}
		close(c.outs)
	}()
	t.Cleanup(func() { pw.Close() })
	return c
}

// Input is the server's input, for writers of its own (Send writes each
// line with one Write, which a pipe never interleaves with another).
func (c *Conn[T]) Input() io.Writer { return c.in }

// Send writes lines to the server's input.
func (c *Conn[T]) Send(lines ...string) {
	c.t.Helper()
	for _, l := range lines {
		if _, err := io.WriteString(c.in, l+"\n"); err != nil {
			c.t.Fatal(err)
		}
	}
}

// Recv returns the next output line, false when the output has ended; it
// fails the test when no line comes for a generous bound (a hang).
func (c *Conn[T]) Recv() (T, bool) {
	c.t.Helper()
	select {
	case v, ok := <-c.outs:
		if ok {
			c.All = append(c.All, v)
		}
		return v, ok
	case <-time.After(hangBound):
		c.t.Fatalf("no output for %v (a hang); the last lines:\n%s\ndiagnostics:\n%s", hangBound, c.tail(10), c.Diag.String())
		var zero T
		return zero, false
	}
}

// NextAll returns the next output lines matching each of preds, which may
// come in any order (work on different goroutines); result i matched
// preds[i]. A line is matched by the first pred still unmatched.
func (c *Conn[T]) NextAll(preds ...func(T) bool) []T {
	c.t.Helper()
	got := make([]T, len(preds))
	done := make([]bool, len(preds))
	for left := len(preds); left > 0; {
		v, ok := c.Recv()
		if !ok {
			c.t.Fatalf("output ended; diagnostics:\n%s", c.Diag.String())
		}
		for i, p := range preds {
			if !done[i] && p(v) {
				got[i], done[i] = v, true
				left--
				break
			}
		}
	}
	return got
}

// tail formats the last n lines received.
func (c *Conn[T]) tail(n int) string {
	var b strings.Builder
	for _, v := range c.All[max(0, len(c.All)-n):] {
		fmt.Fprintf(&b, "  %+v\n", v)
	}
	return b.String()
}

// Next returns the next output line matching pred; the output ending
// first fails the test.
func (c *Conn[T]) Next(pred func(T) bool) T {
	c.t.Helper()
	for {
		v, ok := c.Recv()
		if !ok {
			c.t.Fatalf("output ended; diagnostics:\n%s", c.Diag.String())
		}
		if pred(v) {
			return v
		}
	}
}

// CloseInput ends the server's input.
func (c *Conn[T]) CloseInput() { c.in.Close() }

// Wait returns the server's error once it has returned; the output must
// have been read to its end.
func (c *Conn[T]) Wait() error { return <-c.done }

// Close ends the input, reads the remaining output into All and fails the
// test if the server returned an error.
func (c *Conn[T]) Close() {
	c.t.Helper()
	c.CloseInput()
	for _, ok := c.Recv(); ok; _, ok = c.Recv() {
	}
	if err := c.Wait(); err != nil {
		c.t.Fatal(err)
	}
}
