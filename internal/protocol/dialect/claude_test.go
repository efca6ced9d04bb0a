package dialect_test

import (
	"errors"
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
		{args: []string{"-p", "-d", "--print"}},
		{args: []string{"-pc"}, cont: true},
		{args: []string{"-pr", id}, resume: id},
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

// TestParseClaudeCodeRefusesUnknownShortFlags: a short flag arbor has no
// meaning for is refused by name, as a long one is; pflag alone drops it
// unnoticed, so -w (a worktree) ran without one.
func TestParseClaudeCodeRefusesUnknownShortFlags(t *testing.T) {
	t.Parallel()
	streamJSON := []string{"--input-format", "stream-json", "--output-format", "stream-json"}
	for _, tc := range []struct {
		args []string
		bad  string
	}{
		{[]string{"-w"}, "-w"},
		{[]string{"-n", "name"}, "-n"},
		{[]string{"-pw"}, "-w"},
		{[]string{"-v"}, "-v"},
	} {
		_, _, err := dialect.ParseClaudeCode(slices.Concat(streamJSON, tc.args), strings.NewReader(""))
		if !errors.Is(err, dialect.ErrUsage) || !strings.Contains(err.Error(), tc.bad) {
			t.Errorf("%q: %v; want a usage error naming %s", tc.args, err, tc.bad)
		}
	}
	// A flag's value that looks like a flag is a value.
	if l, _, err := dialect.ParseClaudeCode(slices.Concat(streamJSON, []string{"--append-system-prompt", "-x be brief"}), strings.NewReader("")); err != nil || l.AppendSystemPrompt != "-x be brief" {
		t.Errorf("a value starting with '-': %+v %v", l.AppendSystemPrompt, err)
	}
}
