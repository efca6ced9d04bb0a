package streamjson_test

import (
	"testing"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/protocol/streamjson"
)

// TestUserMessageWithInvalidUTF8: a user line holding bytes that are not
// UTF-8 runs, each such byte replaced by U+FFFD, and the session goes on,
// as Claude Code 2.1.332 does (its reader decodes stdin so; it sent "hi
// \xff\xfe there" to the model as "hi �� there"). The envelope refuses such a
// line instead: there a command, not a message, would change.
func TestUserMessageWithInvalidUTF8(t *testing.T) {
	t.Parallel()
	for name, o := range map[string]streamjson.Options{"spec": {}, "claude-code": {ClaudeCode: true}} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.NewServer(llmtest.Turn{Text: "one"}, llmtest.Turn{Text: "two"})
			defer srv.Close()
			b := setup(t, srv, setupOpts{opts: o})
			b.Send("{\"type\":\"user\",\"message\":{\"role\":\"user\",\"content\":\"hi \xff\xfe there\"}}", user("next"))
			for _, want := range []string{"one", "two"} {
				if r := b.Next(typ("result", "")); r.IsError || r.Result != want {
					t.Fatalf("result %s, want %q", r.raw, want)
				}
			}
			b.Close()
			reqs := srv.Requests()
			if len(reqs) != 2 || reqs[0].LastUserText() != "hi \uFFFD\uFFFD there" || reqs[1].LastUserText() != "next" {
				t.Fatalf("the model saw %d requests, the first %q", len(reqs), reqs[0].LastUserText())
			}
		})
	}
}
