package envelope_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/protocol"
	"github.com/arbor-run/arbor/internal/protocol/envelope"
	"github.com/arbor-run/arbor/internal/testutil"
)

// A session gives memory back once after each turn, when it waits for
// its client, and not after ready (start-up's heap is live).
func TestQuietTrimsWhileTheSessionWaits(t *testing.T) {
	srv := llmtest.NewServer(llmtest.Turn{Text: "first"}, llmtest.Turn{Text: "second"})
	defer srv.Close()
	a, _, _ := openApp(t, srv, nil)
	trims := make(chan struct{}, 8)
	q := protocol.NewQuiet(0, func() { trims <- struct{}{} })
	serve := func(in io.Reader, w, diag io.Writer) error {
		return envelope.Serve(context.Background(), a, in, w, diag, envelope.Options{Quiet: q})
	}
	b := &bundle{Conn: testutil.Serve(t, serve, decodeOut), t: t}
	b.Next(typ("ready"))
	waitTrim := func(after string) {
		t.Helper()
		select {
		case <-trims:
		case <-time.After(30 * time.Second):
			t.Fatalf("no trim after %s", after)
		}
	}
	b.Send(`{"type":"status"}`) // answered at once: no turn, no trim
	b.Next(typ("status_response"))
	if n := len(trims); n != 0 {
		t.Fatalf("%d trims before any turn", n)
	}
	for _, turn := range []string{"one", "two"} {
		b.Send(cmd(map[string]any{"type": "send", "content": turn}))
		if idle := b.Next(typ("idle")); idle.P.LastOutcome != "completed" {
			t.Fatalf("turn %s: %s", turn, idle.raw)
		}
		waitTrim("turn " + turn)
	}
	b.CloseInput()
	if err := b.Wait(); err != nil {
		t.Fatal(err)
	}
	if n := len(trims); n != 0 {
		t.Fatalf("%d trims more than one per wait", n)
	}
}
