package tui

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/tree"
)

// t0 is when the test runs begin.
var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// at is t0 plus s seconds.
func at(s int) agent.Meta { return agent.Meta{At: t0.Add(time.Duration(s) * time.Second)} }

// changed is a NodeChanged of run r1 at second s.
func changed(s int, from tree.NodeState, n tree.NodeView) *tree.NodeChanged {
	return &tree.NodeChanged{Meta: at(s), RunID: "r1", From: from, Node: n}
}

func toolStarted(s int, session, name, input string) *agent.ToolCallStarted {
	m := at(s)
	m.SessionID = session
	return &agent.ToolCallStarted{Meta: m, CallID: "c" + name, Tool: name, Input: json.RawMessage(input)}
}

func usage(s int, session string, in, out int64, usd float64, known bool) *agent.UsageUpdated {
	m := at(s)
	m.SessionID = session
	return &agent.UsageUpdated{Meta: m, Call: llm.Usage{InputTokens: in, OutputTokens: out}, CallCost: usd, CostKnown: known}
}

// resolution is one call of the fake resolver.
type resolution struct {
	id string
	r  agent.Response
}

// fakeResolver records answers; err, when set, is returned by every call.
type fakeResolver struct {
	mu    sync.Mutex
	calls []resolution
	err   error
	got   chan resolution
}

func (f *fakeResolver) Resolve(id string, r agent.Response) error {
	f.mu.Lock()
	f.calls = append(f.calls, resolution{id, r})
	f.mu.Unlock()
	if f.got != nil {
		f.got <- resolution{id, r}
	}
	return f.err
}

// bundle is a model under test with its resolver.
type bundle struct {
	m           *model
	res         *fakeResolver
	interrupted int
}

func setup(t *testing.T) *bundle {
	t.Helper()
	b := &bundle{res: &fakeResolver{}}
	b.m = newModel(LiveOptions{RunID: "r1", Title: "Compare API styles", Resolver: b.res, OnInterrupt: func() { b.interrupted++ }})
	return b
}

// send applies events to the model.
func (b *bundle) send(events ...agent.Event) { b.update(eventsMsg(events)) }

// update applies msg and runs the command it returns, unless it is the
// clock's tick (which would wait).
func (b *bundle) update(msg tea.Msg) {
	_, cmd := b.m.Update(msg)
	if _, tick := msg.(tickMsg); cmd != nil && !tick {
		if next := cmd(); next != nil {
			b.update(next)
		}
	}
}

// keys types s, one key per rune; "\r" is Enter, "\x1b" Esc, "\x7f"
// Backspace.
func (b *bundle) keys(s string) {
	for _, r := range s {
		switch r {
		case '\r':
			b.update(tea.KeyPressMsg{Code: tea.KeyEnter})
		case '\x1b':
			b.update(tea.KeyPressMsg{Code: tea.KeyEscape})
		case '\x7f':
			b.update(tea.KeyPressMsg{Code: tea.KeyBackspace})
		default:
			b.update(tea.KeyPressMsg{Code: r, Text: string(r)})
		}
	}
}

// screen is the rendered view without styling, at width w.
func (b *bundle) screen(w int) string { return ansi.Strip(b.m.render(w)) }

// lineWith returns the screen line containing s, failing when none does.
func lineWith(t *testing.T, screen, s string) string {
	t.Helper()
	for l := range strings.SplitSeq(screen, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	t.Fatalf("no line contains %q in:\n%s", s, screen)
	return ""
}
