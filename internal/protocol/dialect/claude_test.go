package dialect_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/protocol/dialect"
)

// TestParseClaudeCodeShortFlags: -r and -c are Claude Code's short forms
// of --resume and --continue; before, they were dropped unnoticed, and
// `-r ID` started a new conversation.
func TestParseClaudeCodeShortFlags(t *testing.T) {
	t.Parallel()
	const id = "3f0c1a52-6a7e-4a38-9c59-8f9a2b0c1d2e"
	streamJSON := []string{"--input-format", "stream-json", "--output-format", "stream-json"}
	for _, tc := range []struct {
		args   []string
		resume string
		cont   bool
	}{
		{args: []string{"-r", id}, resume: id},
		{args: []string{"--resume", id}, resume: id},
		{args: []string{"-c"}, cont: true},
		{args: []string{"-c", "--fork-session"}, cont: true},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			t.Parallel()
			l, _, err := dialect.ParseClaudeCode(slices.Concat(streamJSON, tc.args), strings.NewReader(""))
			if err != nil || l.Resume != tc.resume || l.Continue != tc.cont {
				t.Fatalf("resume %q, continue %v, err %v", l.Resume, l.Continue, err)
			}
		})
	}
}
