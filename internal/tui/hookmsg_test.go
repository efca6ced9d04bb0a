package tui

import (
	"bytes"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/tree"
)

// TestHookMessages: what a node's hooks say for the person is a line of
// the plain output and the node's latest activity in the live view.
func TestHookMessages(t *testing.T) {
	t.Parallel()
	root := tree.NodeView{ID: 1, Kind: tree.KindGoal, Goal: "Fix the tests", State: tree.StateActive, SessionID: "s1"}
	said := func(sid, text string) *agent.HookMessage {
		return &agent.HookMessage{Meta: agent.Meta{SessionID: sid, At: t0}, Text: text, Level: agent.LevelNotice}
	}

	var out bytes.Buffer
	p := NewPlain(&out, "r1")
	for _, e := range []agent.Event{changed(0, "", root), said("s1", "PreToolUse:Bash says: tests are slow\nmore"), said("s-other", "Stop says: not ours")} {
		p.Handle(e)
	}
	if got, want := out.String(), "#1 + active goal Fix the tests\n#1 ℹ PreToolUse:Bash says: tests are slow\n"; got != want {
		t.Fatalf("plain output %q, want %q", got, want)
	}

	b := setup(t)
	b.send(changed(0, "", root), said("s1", "Stop says: remember the changelog"))
	if l := lineWith(t, b.screen(120), "says:"); !strings.HasPrefix(l, "  → ℹ Stop says: remember the changelog") {
		t.Fatalf("live view line %q", l)
	}
}
