package protocol_test

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/arbor-run/arbor/internal/protocol"
)

func TestFeed(t *testing.T) {
	t.Parallel()
	pr, pw := io.Pipe()
	defer pw.Close()
	ctx, cancel := context.WithCancel(context.Background())
	lines := protocol.NewReader(pr, 16).Feed(ctx)
	go func() { _, _ = io.WriteString(pw, `{"type":"a"}`+"\n"+`{"type":"long","x":"xxxxxxxx"}`+"\n") }()
	if rd := <-lines; rd.Err != nil || rd.Line.Type != "a" {
		t.Fatalf("first read %+v", rd)
	}
	if rd := <-lines; !errors.Is(rd.Err, protocol.ErrLineTooLong) {
		t.Fatalf("a line error is delivered and reading goes on: %+v", rd)
	}
	// A line read after the cancellation is not delivered, and the
	// channel closes.
	cancel()
	if _, err := io.WriteString(pw, `{"type":"late"}`+"\n"); err != nil {
		t.Fatal(err)
	}
	for rd := range lines {
		t.Fatalf("read after cancel %+v", rd)
	}
}

func TestFeedEnds(t *testing.T) {
	t.Parallel()
	pr, pw := io.Pipe()
	lines := protocol.NewReader(pr, 0).Feed(context.Background())
	pw.Close()
	if rd := <-lines; !errors.Is(rd.Err, io.EOF) {
		t.Fatalf("end of input %+v", rd)
	}
	if _, ok := <-lines; ok {
		t.Fatal("the channel stays open after EOF")
	}
}
