package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
)

// TestHeadlessResumeOfNoStoredSession: `-r ID` naming no stored session
// fails at once, whatever the input, with a non-zero exit and the reason
// on stderr, in every protocol; the stream-json ones also say it in a
// result line, as Claude Code does ("No conversation found with session
// ID: …", exit 1). Before, under Claude Code's argv -r was dropped (a
// line started a new conversation) and an empty input exited 0 in silence.
func TestHeadlessResumeOfNoStoredSession(t *testing.T) {
	t.Parallel()
	const id = "3f0c1a52-6a7e-4a38-9c59-8f9a2b0c1d2e"
	srv := llmtest.NewServer()
	defer srv.Close()
	e := newEnv(t)
	model := e.useProvider("anthropic", srv.URL)
	for _, tc := range []struct {
		name   string
		args   []string
		result bool // a stream-json result line says why
	}{
		{"claude-code-argv", []string{"headless", "--input-format", "stream-json", "--output-format", "stream-json", "--model", model, "-r", id}, true},
		{"stream-json", []string{"headless", "--protocol", "stream-json", "--model", model, "-r", id}, true},
		{"envelope", []string{"headless", "--model", model, "-r", id}, false},
	} {
		for _, input := range []string{"", `{"type":"user","message":{"role":"user","content":"hi"}}` + "\n"} {
			c := e.cmd(context.Background(), tc.args...)
			c.Stdin = strings.NewReader(input)
			var stdout, stderr bytes.Buffer
			c.Stdout, c.Stderr = &stdout, &stderr
			var ee *exec.ExitError
			if err := c.Run(); !errors.As(err, &ee) || ee.ExitCode() != 1 {
				t.Fatalf("%s, input %q: exit %v, want status 1; stderr:\n%s", tc.name, input, err, stderr.String())
			}
			if !strings.Contains(strings.ToLower(stderr.String()), id) || !strings.Contains(stderr.String(), "found") {
				t.Fatalf("%s, input %q: stderr does not say the session was not found:\n%s", tc.name, input, stderr.String())
			}
			var r struct {
				Type      string   `json:"type"`
				IsError   bool     `json:"is_error"`
				Errors    []string `json:"errors"`
				SessionID string   `json:"session_id"`
			}
			switch {
			case !tc.result && stdout.Len() != 0:
				t.Fatalf("%s: stdout %q, want nothing", tc.name, stdout.String())
			case tc.result && (strings.Count(stdout.String(), "\n") != 1 || json.Unmarshal(stdout.Bytes(), &r) != nil ||
				r.Type != "result" || !r.IsError || r.SessionID != id || len(r.Errors) != 1 || r.Errors[0] != "No conversation found with session ID: "+id):
				t.Fatalf("%s, input %q: stdout %q, want one error result", tc.name, input, stdout.String())
			}
		}
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("the model saw %d requests", n)
	}
}
