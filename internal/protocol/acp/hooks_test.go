package acp_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
)

// TestProjectHooks: an ACP session runs its project's prompt hooks as
// the envelope and stream-json do: SessionStart at its first prompt and
// UserPromptSubmit at each, their context before the prompt; a hook that
// blocks refuses the prompt (stop reason refusal, its reason shown to the
// person); closing the session runs SessionEnd.
func TestProjectHooks(t *testing.T) {
	t.Parallel()
	b := setup(t, llmtest.Turn{Text: "hello"})
	settings := `{"hooks": {
	  "SessionStart": [{"hooks": [{"type": "command", "command": "echo START-CTX"}]}],
	  "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "if grep -q deploy; then echo 'no deploys today' >&2; exit 2; fi; echo PROMPT-CTX"}]}],
	  "SessionEnd": [{"hooks": [{"type": "command", "command": "cat > ended.json"}]}]}}`
	if err := os.MkdirAll(filepath.Join(b.ws, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(b.ws, ".claude", "settings.json"), []byte(settings), 0o644); err != nil {
		t.Fatal(err)
	}
	sid := b.newSession(t)
	b.Send(promptLine(3, sid, "say hi"))
	if o := b.Next(id(3)); o.Error != nil || !strings.Contains(string(o.Result), `"stopReason":"end_turn"`) {
		t.Fatalf("the first prompt answered %s", o.raw)
	}
	b.Send(promptLine(4, sid, "deploy now"))
	if o := b.Next(id(4)); o.Error != nil || !strings.Contains(string(o.Result), `"stopReason":"refusal"`) {
		t.Fatalf("the blocked prompt answered %s; want stop reason refusal", o.raw)
	}
	shown := false
	for _, o := range b.All {
		shown = shown || o.Params.Update.SessionUpdate == "agent_message_chunk" && strings.Contains(o.raw, "no deploys today")
	}
	if !shown {
		t.Fatal("the hook's reason was not shown")
	}
	b.Close()
	reqs := b.srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d model requests; want the first prompt's only", len(reqs))
	}
	if got := reqs[0].LastUserText(); !strings.Contains(got, "START-CTX") || !strings.Contains(got, "PROMPT-CTX") || !strings.Contains(got, "say hi") {
		t.Fatalf("the first prompt reached the model as %q; want both hooks' context and the prompt", got)
	}
	if ended, err := os.ReadFile(filepath.Join(b.ws, "ended.json")); err != nil || !strings.Contains(string(ended), `"hook_event_name":"SessionEnd"`) {
		t.Fatalf("the SessionEnd hook read %q (%v)", ended, err)
	}
}
