package envelope_test

import (
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
)

// TestProjectSlash: a project's custom command sent as "/name args" is a
// turn with its expanded text (Chord's custom commands), /help lists the
// commands and skills, the session's prompt carries AGENTS.md, and the
// project's SessionStart and UserPromptSubmit hooks add their context.
func TestProjectSlash(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(llmtest.Turn{Text: "reviewed"})
	defer srv.Close()
	b, _ := setupFiles(t, srv, map[string]string{
		"AGENTS.md":                     "ENVELOPE-RULE: keep answers short.\n",
		".claude/commands/review.md":    "---\ndescription: Review a file\n---\nReview $ARGUMENTS for bugs.\n",
		".arbor/skills/deploy/SKILL.md": "---\nname: deploy\ndescription: Deploy the service.\n---\nSteps.\n",
		".claude/settings.json":         `{"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "echo SESSION-CONTEXT"}]}], "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "echo PROMPT-CONTEXT"}]}]}}`,
	})
	b.Send(sendText("/help"))
	if r := b.Next(typ("info")); !strings.Contains(r.P.Message, "/review  Review a file (command)") || !strings.Contains(r.P.Message, "/deploy  Deploy the service. (skill)") {
		t.Fatalf("/help: %s", r.raw)
	}
	b.Send(sendText("/review main.go"))
	b.Next(typ("idle"))
	b.Close()
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	if got := reqs[0].LastUserText(); got != "SESSION-CONTEXT\n\nPROMPT-CONTEXT\n\nReview main.go for bugs." {
		t.Fatalf("the turn's text %q", got)
	}
	if !strings.Contains(reqs[0].System, "ENVELOPE-RULE: keep answers short.") || !strings.Contains(reqs[0].System, "- deploy: Deploy the service.") {
		t.Fatalf("the system prompt lacks AGENTS.md or the skill:\n%s", reqs[0].System)
	}
}
