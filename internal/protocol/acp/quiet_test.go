package acp_test

import (
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/protocol"
	"github.com/arbor-run/arbor/internal/protocol/acp"
)

// A connection gives memory back once after each prompt, when no prompt
// runs and it waits for its client; not after initialize or session/new.
func TestQuietTrimsWhileNoPromptRuns(t *testing.T) {
	t.Parallel()
	trims := make(chan struct{}, 8)
	q := protocol.NewQuiet(0, func() { trims <- struct{}{} })
	b := setupWith(t, acp.Options{Quiet: q}, llmtest.Turn{Text: "first"}, llmtest.Turn{Text: "second"})
	sessionID := b.newSession(t)
	if n := len(trims); n != 0 {
		t.Fatalf("%d trims before any prompt", n)
	}
	for i, text := range []string{"one", "two"} {
		b.Send(promptLine(3+i, sessionID, text))
		if o := b.Next(id(3 + i)); o.Error != nil {
			t.Fatalf("prompt %s answered %s", text, o.raw)
		}
		select {
		case <-trims:
		case <-time.After(30 * time.Second):
			t.Fatalf("no trim after prompt %s", text)
		}
	}
	b.CloseInput()
	if err := b.Wait(); err != nil {
		t.Fatal(err)
	}
	if n := len(trims); n != 0 {
		t.Fatalf("%d trims more than one per wait", n)
	}
}
