package envelope_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
)

// TestContextNotice: a context nearing its compaction size is announced
// once with context_notice.
func TestContextNotice(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(llmtest.Turn{Text: "noted"}, llmtest.Turn{Text: "still here"})
	defer srv.Close()
	b, _ := setupFiles(t, srv, map[string]string{
		// A window of 1,000 tokens: compaction at 800, the notice from 600.
		".arbor/config.yaml": "providers:\n  anthropic:\n    models:\n      claude-test:\n        context_window: 1000\n",
	})
	b.Send(sendText(strings.Repeat("lorem ipsum ", 120))) // ~360 tokens, plus ~340 of system prompt: about 700, mid-way between 600 and 800
	n := b.Next(typ("context_notice"))
	var p struct {
		SessionID    string `json:"session_id"`
		Level        string `json:"level"`
		Message      string `json:"message"`
		MessageIndex int    `json:"message_index"`
	}
	if err := json.Unmarshal(n.Payload, &p); err != nil || p.Level != "warn" || p.SessionID == "" || p.MessageIndex != 0 || !strings.Contains(p.Message, "of the model's 1000") {
		t.Fatalf("context_notice %s %v", n.raw, err)
	}
	b.Next(typ("idle"))
	b.Send(sendText("and again"))
	b.Next(typ("idle"))
	b.Close()
	notices := 0
	for _, o := range b.All {
		if o.Type == "context_notice" {
			notices++
		}
	}
	if notices != 1 {
		t.Fatalf("the notice is sent once per context, got %d", notices)
	}
	b.checkSeq()
}
