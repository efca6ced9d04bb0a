package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
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

// TestHeadlessContinueIsPerWorkspace: -c continues the conversation used
// last in the current workspace, not a newer one of another workspace
// sharing the store, in the envelope protocol and under Claude Code's
// argv, as Claude Code's --continue looks only at the current directory's
// conversations. A workspace with none behaves as an empty store does: the
// envelope protocol refuses (exit 2), Claude Code's argv starts a new
// conversation. Before, -c took the latest conversation of any workspace.
func TestHeadlessContinueIsPerWorkspace(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServerFunc(func(llmtest.Request) llmtest.Turn { return llmtest.Turn{Text: "ok"} })
	defer srv.Close()
	a := newEnv(t)
	model := a.useProvider("anthropic", srv.URL)
	in := func(name string) *env { // a workspace beside a's, sharing its store
		e := *a
		e.workspace = filepath.Join(a.home, name)
		if err := os.Mkdir(e.workspace, 0o755); err != nil {
			t.Fatal(err)
		}
		return &e
	}
	b, c := in("b"), in("c")
	const userLine = `{"type":"user","message":{"role":"user","content":"hi"}}` + "\n"
	claudeArgv := []string{"headless", "--input-format", "stream-json", "--output-format", "stream-json", "--model", model}
	// sessionOf runs arbor with args in e and returns the session its
	// result line (stream-json) or ready line (envelope) names.
	sessionOf := func(e *env, input string, args ...string) string {
		t.Helper()
		cmd := e.cmd(context.Background(), args...)
		cmd.Stdin = strings.NewReader(input)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%q in %s: %v\nstderr:\n%s", args, e.workspace, err, stderr.String())
		}
		for _, line := range strings.Split(stdout.String(), "\n") {
			var l struct {
				Type      string `json:"type"`
				SessionID string `json:"session_id"`
				Payload   struct {
					SessionID string `json:"session_id"`
				} `json:"payload"`
			}
			if json.Unmarshal([]byte(line), &l) == nil && (l.Type == "result" || l.Type == "ready") {
				return l.SessionID + l.Payload.SessionID
			}
		}
		t.Fatalf("%q in %s: no result or ready line in\n%s", args, e.workspace, stdout.String())
		return ""
	}
	inB := sessionOf(b, "", "headless", "--protocol", "stream-json", "--model", model, "hello from b")
	inA := sessionOf(a, "", "headless", "--protocol", "stream-json", "--model", model, "hello from a")
	if inA == "" || inB == "" || inA == inB {
		t.Fatalf("sessions %q (a) and %q (b)", inA, inB)
	}
	if got := sessionOf(b, "", "headless", "-c", "--model", model); got != inB {
		t.Fatalf("envelope -c in b continued %q, want b's %q (a's is %q)", got, inB, inA)
	}
	if got := sessionOf(b, userLine, append(claudeArgv, "-c")...); got != inB {
		t.Fatalf("Claude Code's -c in b continued %q, want b's %q (a's is %q)", got, inB, inA)
	}
	if got := sessionOf(a, userLine, append(claudeArgv, "--continue")...); got != inA {
		t.Fatalf("Claude Code's --continue in a continued %q, want a's %q", got, inA)
	}
	if got := sessionOf(c, userLine, append(claudeArgv, "-c")...); got == inA || got == inB {
		t.Fatalf("Claude Code's -c in c, which has no conversation, continued %q", got)
	}
	o := in("d").run("headless", "-c", "--model", model)
	if o.code != 2 || !strings.Contains(o.stderr, "no stored conversation in "+filepath.Join(a.home, "d")) {
		t.Fatalf("envelope -c in d, which has no conversation: exit %d\n%s", o.code, o.stderr)
	}
}
