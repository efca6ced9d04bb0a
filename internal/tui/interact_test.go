package tui

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/tool"
	"github.com/arbor-run/arbor/internal/tree"
)

func approvalRequested(id, session string) *agent.InteractionRequested {
	m := at(10)
	m.SessionID = session
	return &agent.InteractionRequested{Meta: m, Interaction: agent.Interaction{
		ID: id, Kind: agent.KindApproval, SessionID: session,
		Approval: &tool.ApprovalRequest{
			CallID: "call_1", Tool: "shell", Kind: tool.KindExecute,
			Input:  json.RawMessage(`{"command":"go test ./..."}`),
			Target: tool.Target{Command: "go test ./..."}, Reason: "shell asks in default mode", SuggestedRule: "shell(go test*)",
		},
	}}
}

func questionRequested(id, session string, q tool.Question) *agent.InteractionRequested {
	m := at(10)
	m.SessionID = session
	return &agent.InteractionRequested{Meta: m, Interaction: agent.Interaction{ID: id, Kind: agent.KindQuestion, SessionID: session, Question: &q}}
}

// withWorker gives the bundle a running node #2 on session s2.
func withWorker(b *bundle) {
	b.send(changed(1, "", tree.NodeView{ID: 2, Kind: tree.KindTask, Spawn: "spawn", Goal: "Run the tests", State: tree.StateActive, SessionID: "s2"}))
}

func TestApproval(t *testing.T) {
	t.Parallel()

	for _, tc := range []struct {
		key  string
		want tool.Approval
	}{
		{"y", tool.Approval{Allow: true}},
		{"n", tool.Approval{}},
		{"a", tool.Approval{Allow: true, RememberScope: "session"}},
		{"Y", tool.Approval{Allow: true}},
	} {
		t.Run(tc.key, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			withWorker(b)
			b.send(approvalRequested("req_1", "s2"))
			s := b.screen(100)
			lineWith(t, s, "? #2 shell wants to run: go test ./...")
			lineWith(t, s, "(shell asks in default mode)")
			lineWith(t, s, "[y] yes  [n] no  [a] always for this session (shell(go test*))")

			b.keys("x") // not an answer
			if len(b.res.calls) != 0 {
				t.Fatalf("resolved on x: %+v", b.res.calls)
			}
			b.keys(tc.key)
			if len(b.res.calls) != 1 {
				t.Fatalf("calls %+v", b.res.calls)
			}
			c := b.res.calls[0]
			if c.id != "req_1" || c.r.Approval == nil || c.r.Answer != nil || !reflect.DeepEqual(*c.r.Approval, tc.want) {
				t.Fatalf("resolved %s with %+v", c.id, c.r.Approval)
			}
			if s := b.screen(100); strings.Contains(s, "wants to run") {
				t.Fatalf("still shown:\n%s", s)
			}
			b.keys(tc.key) // nothing left to answer
			if len(b.res.calls) != 1 {
				t.Fatalf("calls %+v", b.res.calls)
			}
		})
	}
}

func TestQuestion(t *testing.T) {
	t.Parallel()

	q := tool.Question{CallID: "call_9", Question: "Which database?", Options: []string{"PostgreSQL", "SQLite", "MySQL"}, Default: "SQLite"}
	for _, tc := range []struct {
		name  string
		q     tool.Question
		typed string
		want  tool.Answer
	}{
		{"number picks an option", q, "3\r", tool.Answer{Text: "MySQL"}},
		{"text is the answer", q, "DuckDB, embedded\r", tool.Answer{Text: "DuckDB, embedded"}},
		{"empty takes the default", q, "\r", tool.Answer{Text: "SQLite"}},
		{"blank takes the default", q, "  \r", tool.Answer{Text: "SQLite"}},
		{"empty without default declines", tool.Question{Question: "Anything else?"}, "\r", tool.Answer{Declined: true}},
		{"number out of range is text", q, "4\r", tool.Answer{Text: "4"}},
		{"several numbers need multi-select", q, "1,2\r", tool.Answer{Text: "1,2"}},
		{"multi-select picks several", tool.Question{Question: "Which?", Options: []string{"a", "b", "c"}, MultiSelect: true}, "1, 3\r", tool.Answer{Text: "a, c"}},
		{"backspace edits", q, "12\x7f\r", tool.Answer{Text: "PostgreSQL"}},
		{"esc declines", q, "Postg\x1b", tool.Answer{Declined: true}},
		{"y is text, not an approval", q, "y\r", tool.Answer{Text: "y"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			withWorker(b)
			b.send(questionRequested("req_7", "s2", tc.q))
			b.keys(tc.typed)
			if len(b.res.calls) != 1 {
				t.Fatalf("calls %+v", b.res.calls)
			}
			c := b.res.calls[0]
			if c.id != "req_7" || c.r.Answer == nil || c.r.Approval != nil || *c.r.Answer != tc.want {
				t.Fatalf("resolved %s with %+v, want %+v", c.id, c.r.Answer, tc.want)
			}
		})
	}

	t.Run("shown with options, default and input", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		withWorker(b)
		b.send(questionRequested("req_7", "s2", q))
		b.keys("Du")
		b.update(tea.PasteMsg{Content: "ck"})
		s := b.screen(100)
		lineWith(t, s, "? #2 Which database?")
		lineWith(t, s, "  1. PostgreSQL")
		if l := lineWith(t, s, "  2. SQLite"); !strings.Contains(l, "(default)") {
			t.Fatalf("default not marked: %q", l)
		}
		lineWith(t, s, "Enter alone: SQLite")
		lineWith(t, s, "  > Duck█")
	})

	t.Run("ask node", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.send(
			changed(1, "", tree.NodeView{ID: 5, Kind: tree.KindAsk, Question: "Deploy on Friday?", Options: []string{"yes", "no"}, State: tree.StateActive}),
			questionRequested("req_3", "", tool.Question{CallID: "ask:#5", AskNode: 5, Question: "Deploy on Friday?", Options: []string{"yes", "no"}, Default: "no"}),
		)
		s := b.screen(100)
		if l := lineWith(t, s, "#5 "); !strings.HasPrefix(l, "? #5 ask Deploy on Friday?") {
			t.Fatalf("node line %q", l)
		}
		lineWith(t, s, "? #5 Deploy on Friday?")
		b.keys("1\r")
		if c := b.res.calls; len(c) != 1 || c[0].id != "req_3" || c[0].r.Answer.Text != "yes" {
			t.Fatalf("calls %+v", c)
		}
	})
}

func TestInteractionQueue(t *testing.T) {
	t.Parallel()

	t.Run("oldest first, resolved elsewhere disappears", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		withWorker(b)
		b.send(
			approvalRequested("req_1", "s2"),
			questionRequested("req_2", "s2", tool.Question{Question: "Which port?"}),
		)
		s := b.screen(100)
		lineWith(t, s, "wants to run")
		lineWith(t, s, "(+1 more waiting)")
		if strings.Contains(s, "Which port?") {
			t.Fatalf("second shown first:\n%s", s)
		}
		b.keys("80") // approval keys only: ignored
		// answered with `arbor answer` from another shell
		b.send(&agent.InteractionResolved{Meta: at(11), ID: "req_1", Kind: agent.KindApproval, Resolution: "answered"})
		s = b.screen(100)
		if strings.Contains(s, "wants to run") || strings.Contains(s, "more waiting") {
			t.Fatalf("resolved interaction still shown:\n%s", s)
		}
		lineWith(t, s, "? #2 Which port?")
		lineWith(t, s, "  > █")
		b.keys("8080\r")
		if c := b.res.calls; len(c) != 1 || c[0].id != "req_2" || c[0].r.Answer.Text != "8080" {
			t.Fatalf("calls %+v", c)
		}
		// the broker's own InteractionResolved for our answer is harmless
		b.send(&agent.InteractionResolved{Meta: at(12), ID: "req_2", Kind: agent.KindQuestion, Resolution: "answered"})
		if s := b.screen(100); strings.Contains(s, "?") {
			t.Fatalf("screen:\n%s", s)
		}
	})

	t.Run("stale answer shows the error", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		b.res.err = agent.ErrUnknownInteraction
		b.send(approvalRequested("req_1", "s9"))
		if l := lineWith(t, b.screen(100), "wants to run"); !strings.HasPrefix(l, "? shell") {
			t.Fatalf("interaction of an unknown session: %q", l)
		}
		b.keys("y")
		lineWith(t, b.screen(100), "! could not answer req_1: unknown or already resolved interaction")
	})

	t.Run("no resolver", func(t *testing.T) {
		t.Parallel()
		m := newModel(LiveOptions{RunID: "r1"})
		m.Update(eventsMsg{approvalRequested("req_1", "s2")})
		if _, cmd := m.Update(tea.KeyPressMsg{Code: 'y', Text: "y"}); cmd != nil {
			t.Fatal("a command without a resolver")
		}
		if !strings.Contains(m.render(100), "no one to hand the answer to") {
			t.Fatal("no notice")
		}
	})

	t.Run("ctrl-c interrupts and the view goes on", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		withWorker(b)
		b.update(tea.KeyPressMsg{Code: 'c', Mod: tea.ModCtrl})
		if b.interrupted != 1 {
			t.Fatalf("interrupted %d times", b.interrupted)
		}
		lineWith(t, b.screen(100), "cancelling…")
		b.update(interruptMsg{})
		if b.interrupted != 2 {
			t.Fatalf("interrupted %d times", b.interrupted)
		}
		b.send(&tree.RunFinished{Meta: at(20), RunID: "r1", Outcome: "cancelled", Error: "cancelled by the user"})
		s := b.screen(100)
		lineWith(t, s, "run cancelled: cancelled by the user")
		if strings.Contains(s, "cancelling…") {
			t.Fatalf("screen:\n%s", s)
		}
	})
}
