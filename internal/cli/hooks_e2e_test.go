package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/store"
)

// TestRunKeepsHookContextOutOfTheGoal: what the project's SessionStart
// and UserPromptSubmit hooks add reaches the root's model beside the goal,
// and the run's goal stays as the person wrote it (the list of runs, the
// tree and the web view show it). The run's end runs its SessionEnd hook.
func TestRunKeepsHookContextOutOfTheGoal(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	settings := `{"hooks": {
	  "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "echo 'branch: main'"}]}],
	  "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "echo '{\"hookSpecificOutput\":{\"hookEventName\":\"UserPromptSubmit\",\"additionalContext\":\"ticket ABC-1\"}}'"}]}],
	  "SessionEnd": [{"hooks": [{"type": "command", "command": "cat > ended.json"}]}]}}`
	if err := os.MkdirAll(filepath.Join(e.workspace, ".claude"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.workspace, ".claude", "settings.json"), []byte(settings), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := llmtest.NewServer(llmtest.Turn{Text: "Fixed."})
	defer srv.Close()
	model := e.useProvider("anthropic", srv.URL)

	o := e.run("run", "--model", model, "--yes", "fix the tests")
	if o.code != 0 {
		t.Fatalf("exit %d\nstderr:\n%s", o.code, o.stderr)
	}
	// The run's end ran the SessionEnd hook.
	if ended, err := os.ReadFile(filepath.Join(e.workspace, "ended.json")); err != nil || !strings.Contains(string(ended), `"reason":"other"`) {
		t.Fatalf("the SessionEnd hook read %q (%v)", ended, err)
	}
	first := srv.Requests()[0].LastUserText()
	for _, want := range []string{"fix the tests", "branch: main", "ticket ABC-1"} {
		if !strings.Contains(first, want) {
			t.Fatalf("the root's first message lacks %q:\n%s", want, first)
		}
	}
	if strings.Index(first, "fix the tests") > strings.Index(first, "ticket ABC-1") {
		t.Fatalf("the goal should come before the hooks' context:\n%s", first)
	}

	out := e.run("tree", "--json", runID(t, o.stderr))
	var shown struct {
		Run   store.Run    `json:"run"`
		Nodes []store.Node `json:"nodes"`
	}
	if out.code != 0 || json.Unmarshal([]byte(out.stdout), &shown) != nil || len(shown.Nodes) != 1 {
		t.Fatalf("tree --json: exit %d %q %s", out.code, out.stdout, out.stderr)
	}
	if shown.Run.Goal != "fix the tests" || shown.Nodes[0].Goal != "fix the tests" {
		t.Fatalf("run goal %q, root goal %q; want the goal as written", shown.Run.Goal, shown.Nodes[0].Goal)
	}
	if !strings.Contains(shown.Nodes[0].Prompt, "ticket ABC-1") {
		t.Fatalf("the root's instructions %q should keep the hooks' context", shown.Nodes[0].Prompt)
	}
}
