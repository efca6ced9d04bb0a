package app_test

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/config"
	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/testutil"
	"github.com/arbor-run/arbor/internal/tool"
)

// TestHookMessages: what a session's project hooks say for the person
// (systemMessage) is published as HookMessage events of that session, as
// Claude Code words it, from every point a hook runs at; a prompt with no
// session yet (arbor run's goal) and a session's end have their hooks'
// words on Options.Diag.
func TestHookMessages(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	ws := filepath.Join(home, "repo")
	hooks := `{"hooks": {`
	for i, e := range []string{"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop", "Notification", "SessionEnd"} {
		if i > 0 {
			hooks += ","
		}
		hooks += `"` + e + `": [{"hooks": [{"type": "command", "command": "./hooks/say.sh ` + e + `"}]}]`
	}
	writeFiles(t, ws, map[string]string{
		".claude/settings.json": hooks + "}}",
		"hooks/say.sh":          "#!/bin/sh\ncat >/dev/null\necho \"{\\\"systemMessage\\\": \\\"SYSMSG-$1\\\"}\"\n",
	})
	srv := llmtest.NewServer(call("c1", "shell", `{"command":"echo hi"}`), llmtest.Turn{Text: "done"})
	defer srv.Close()
	var diag testutil.SyncBuffer
	a := openIn(t, home, ws, srv.URL, app.Options{Overrides: config.Overrides{Mode: "default", Sandbox: "off"}, Diag: &diag})
	var (
		mu       sync.Mutex
		said     []string
		notified = make(chan struct{})
	)
	sub := a.Bus.Subscribe(func(e agent.Event) {
		switch e := e.(type) {
		case *agent.InteractionRequested:
			_ = a.Broker.Resolve(e.Interaction.ID, agent.Response{Approval: &tool.Approval{Allow: true}})
		case *agent.HookMessage:
			mu.Lock()
			defer mu.Unlock()
			if e.Level != agent.LevelNotice {
				t.Errorf("%+v: want level notice", e)
			}
			if strings.HasPrefix(e.Text, "Notification") { // run on a bus subscription of its own
				close(notified)
				return
			}
			said = append(said, e.SessionID+" "+e.Text)
		}
	})
	defer sub.Close()
	s, err := a.NewSession(context.Background(), app.SessionOptions{Model: "anthropic/claude-test"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.PromptContext(context.Background(), s.ID, "startup", "go"); err != nil {
		t.Fatal(err)
	}
	if res := s.Agent.Send(context.Background(), llm.UserText("go")); res.Text != "done" {
		t.Fatalf("result %+v", res)
	}
	select {
	case <-notified:
	case <-time.After(30 * time.Second): // hang guard
		t.Fatal("no Notification hook's message")
	}
	sub.Flush()
	var want []string
	for _, w := range []string{"SessionStart:startup says: SYSMSG-SessionStart", "UserPromptSubmit says: SYSMSG-UserPromptSubmit",
		"PreToolUse:Bash says: SYSMSG-PreToolUse", "PostToolUse:Bash says: SYSMSG-PostToolUse", "Stop says: SYSMSG-Stop"} {
		want = append(want, s.ID+" "+w)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(said, want) {
		t.Fatalf("hook messages\n%q\nwant\n%q", said, want)
	}
	if _, err := a.PromptContext(context.Background(), "", "", "goal"); err != nil {
		t.Fatal(err)
	}
	if got := diag.String(); !strings.Contains(got, "arbor: UserPromptSubmit says: SYSMSG-UserPromptSubmit\n") {
		t.Fatalf("diag %q; want the message of a prompt with no session", got)
	}
	a.EndSession(context.Background(), s.ID, "other") // the session is over: to stderr
	if got := diag.String(); !strings.Contains(got, "arbor: SessionEnd:other says: SYSMSG-SessionEnd\n") {
		t.Fatalf("diag %q; want the SessionEnd hook's message", got)
	}
}
