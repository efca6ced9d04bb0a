package app

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/llm"
)

// TestTranscriptAppendsAndRewritesAfterACompaction: new messages are
// appended; a context that no longer starts as written (a compaction's
// summary) writes the file anew.
func TestTranscriptAppendsAndRewritesAfterACompaction(t *testing.T) {
	t.Parallel()
	tr := &transcript{path: filepath.Join(t.TempDir(), "t", "s.jsonl")}
	lines := func() []string {
		b, err := os.ReadFile(tr.path)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(strings.TrimSpace(string(b)), "\n")
	}
	h := []llm.Message{llm.UserText("one"), {Role: llm.RoleAssistant, Parts: []llm.Part{llm.TextPart("two")}}}
	for _, step := range []struct {
		history []llm.Message
		want    []string
	}{
		{h[:1], []string{"one"}},
		{h, []string{"one", "two"}},
		{h, []string{"one", "two"}}, // nothing new
		{append(h, llm.UserText("three")), []string{"one", "two", "three"}},
		{[]llm.Message{llm.UserText("summary"), llm.UserText("four")}, []string{"summary", "four"}},
		{[]llm.Message{llm.UserText("summary 2"), llm.UserText("five"), llm.UserText("six")}, []string{"summary 2", "five", "six"}},
	} {
		if err := tr.sync("s", "/ws", step.history); err != nil {
			t.Fatal(err)
		}
		got := lines()
		if len(got) != len(step.want) {
			t.Fatalf("after %d messages: %d lines %q, want %q", len(step.history), len(got), got, step.want)
		}
		for i, w := range step.want {
			if !strings.Contains(got[i], `"text":"`+w+`"`) {
				t.Fatalf("line %d %s, want %q", i, got[i], w)
			}
		}
	}
	if fi, err := os.Stat(tr.path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the transcript's mode %v (%v), want 0600: it holds the conversation", fi.Mode(), err)
	}
}
