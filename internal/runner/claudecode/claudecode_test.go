package claudecode

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestArgs: a first turn starts the node's session, a later one resumes
// the same session; prompts always come to arbor over stdio and
// permissions are never skipped.
func TestArgs(t *testing.T) {
	first := Args(Options{Model: "claude-sonnet-4-5"}, Turn{SessionKey: "run.2"}, "{}")
	later := Args(Options{}, Turn{SessionKey: "run.2", Resume: true}, "{}")
	uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	id := SessionUUID("run.2")
	if !uuid.MatchString(id) || id == SessionUUID("run.3") {
		t.Fatalf("session uuid %q", id)
	}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{first, []string{"--session-id", id, "--model", "claude-sonnet-4-5"}},
		{later, []string{"--resume", id}},
	} {
		joined := strings.Join(c.args, " ")
		for _, w := range append(c.want, "--permission-prompt-tool stdio", "--input-format stream-json", "--output-format stream-json", "--mcp-config {}") {
			if !strings.Contains(joined, w) {
				t.Fatalf("args %q lack %q", joined, w)
			}
		}
		if slices.Contains(c.args, "--dangerously-skip-permissions") {
			t.Fatalf("args %q skip permissions", joined)
		}
	}
	if slices.Contains(later, "--session-id") || slices.Contains(first, "--resume") {
		t.Fatalf("first %q later %q", first, later)
	}
}
