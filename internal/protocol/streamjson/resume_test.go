package streamjson_test

import (
	"errors"
	"testing"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/protocol/streamjson"
)

// TestResumeOfNoStoredSession: a resume naming no stored session fails
// the server at its start, before it reads any input, as Claude Code
// does: one error result saying "No conversation found with session ID",
// with that id, and an error from Serve (the CLI exits with status 1);
// before, the server waited for a turn, and with none exited 0 silently.
func TestResumeOfNoStoredSession(t *testing.T) {
	t.Parallel()
	const id = "3f0c1a52-6a7e-4a38-9c59-8f9a2b0c1d2e"
	for name, o := range map[string]streamjson.Options{
		"spec":        {Resume: id},
		"claude-code": {Resume: id, ClaudeCode: true},
		"fork":        {Resume: id, ForkSession: true, ClaudeCode: true},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.NewServer()
			defer srv.Close()
			b := setup(t, srv, setupOpts{opts: o})
			b.CloseInput() // an empty input
			var lines []out
			for o, ok := b.Recv(); ok; o, ok = b.Recv() {
				lines = append(lines, o)
			}
			err := b.Wait()
			if !errors.Is(err, streamjson.ErrNoConversation) {
				t.Fatalf("Serve returned %v, want ErrNoConversation", err)
			}
			if len(lines) != 1 {
				t.Fatalf("%d output lines, want one result: %v", len(lines), b.All)
			}
			r := lines[0]
			if r.Type != "result" || r.Subtype != "error_during_execution" || !r.IsError || r.SessionID != id ||
				len(r.Errors) != 1 || r.Errors[0] != "No conversation found with session ID: "+id {
				t.Fatalf("result %s", r.raw)
			}
		})
	}
}
