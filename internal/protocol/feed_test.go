package protocol_test

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/arbor-run/arbor/internal/protocol"
)

func TestEach(t *testing.T) {
	t.Parallel()
	pr, pw := io.Pipe()
	defer pw.Close()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		_, _ = io.WriteString(pw, `{"type":"a"}`+"\n"+`{"type":"long","x":"xxxxxxxx"}`+"\n"+`{"type":"b"}`+"\n")
	}()
	var got []string
	var bad []error
	done := make(chan error, 1)
	go func() {
		done <- protocol.NewReader(pr, 16).Each(ctx, func(l protocol.Line) bool {
			got = append(got, l.Type)
			if l.Type == "b" {
				cancel() // no more input comes: the cancellation alone ends Each
			}
			return true
		}, func(le *protocol.LineError) { bad = append(bad, le) })
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != "a" || got[1] != "b" || len(bad) != 1 || !errors.Is(bad[0], protocol.ErrLineTooLong) {
		t.Fatalf("lines %v, line errors %v", got, bad)
	}
}

func TestEachStops(t *testing.T) {
	t.Parallel()
	pr, pw := io.Pipe()
	go func() {
		_, _ = io.WriteString(pw, `{"type":"a"}`+"\n"+`{"type":"stop"}`+"\n"+`{"type":"c"}`+"\n")
		pw.Close()
	}()
	var got []string
	err := protocol.NewReader(pr, 0).Each(context.Background(), func(l protocol.Line) bool {
		got = append(got, l.Type)
		return l.Type != "stop"
	}, func(*protocol.LineError) {})
	if err != nil || len(got) != 2 {
		t.Fatalf("Each = %v after %v; it must stop when handle says so", err, got)
	}
	// The end of input ends Each with nil.
	pr2, pw2 := io.Pipe()
	pw2.Close()
	if err := protocol.NewReader(pr2, 0).Each(context.Background(), func(protocol.Line) bool { return true }, nil); err != nil {
		t.Fatalf("Each at EOF = %v", err)
	}
}
