package tui

import (
	"slices"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/tree"
)

// tickEvery is how often the spinner turns and elapsed times advance.
const tickEvery = 120 * time.Millisecond

// Messages the model handles besides bubbletea's own.
type (
	// eventsMsg carries bus events, in publication order.
	eventsMsg []agent.Event
	// tickMsg advances the clock and the spinner.
	tickMsg time.Time
	// interruptMsg is Ctrl-C however it arrived.
	interruptMsg struct{}
	// mcpMsg is the list of failed MCP servers.
	mcpMsg struct{ failed []MCPFailure }
	// resolvedMsg reports the outcome of a Resolver call.
	resolvedMsg struct {
		id  string
		err error
	}
)

// model is the live view's state. Only Update changes it; render reads it.
type model struct {
	tr          *tracker
	title       string
	resolver    Resolver
	onInterrupt func()

	width, height int
	// now is the view's clock: the latest tick or event time.
	now   time.Time
	frame int

	// pending are the interactions waiting on someone, oldest first; the
	// first is the one shown and answered.
	pending []agent.Interaction
	// input is the text typed for the shown question.
	input []rune
	// notice is a one-line message to the user (a failed answer).
	notice      string
	interrupted bool
	// mcpFailed are the MCP servers that failed, by name.
	mcpFailed []MCPFailure
}

func newModel(o LiveOptions) *model {
	return &model{tr: newTracker(o.RunID), title: o.Title, resolver: o.Resolver, onInterrupt: o.OnInterrupt}
}

func tick() tea.Cmd {
	return tea.Tick(tickEvery, func(t time.Time) tea.Msg { return tickMsg(t) })
}

// Init starts the clock.
func (m *model) Init() tea.Cmd { return tick() }

// Update applies one message.
func (m *model) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case eventsMsg:
		for _, e := range msg {
			m.apply(e)
		}
	case tickMsg:
		m.advance(time.Time(msg))
		m.frame++
		return m, tick()
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
	case interruptMsg:
		m.interrupt()
	case tea.KeyPressMsg:
		return m, m.key(msg)
	case tea.PasteMsg:
		if m.asking() {
			m.input = append(m.input, []rune(msg.Content)...)
		}
	case mcpMsg:
		m.mcpFailed = msg.failed
	case resolvedMsg:
		if msg.err != nil {
			m.notice = "could not answer " + msg.id + ": " + msg.err.Error()
		}
	}
	return m, nil
}

// View renders the model for bubbletea. The trailing newline leaves an
// empty last line: bubbletea erases the line the cursor rests on when it
// stops, and it must not be the totals.
func (m *model) View() tea.View { return tea.NewView(m.render(m.width) + "\n") }

// advance moves the clock forward to t; it never goes back.
func (m *model) advance(t time.Time) {
	if t.After(m.now) {
		m.now = t
	}
}

// apply folds one bus event into the state.
func (m *model) apply(e agent.Event) {
	m.advance(agent.MetaOf(e).At)
	switch e := e.(type) {
	case *tree.NodeChanged:
		m.tr.node(e)
	case *tree.RunFinished:
		m.tr.finish(e)
	case *tree.Notified:
		m.tr.notified(e)
	case *agent.ToolCallStarted:
		m.tr.toolStarted(e)
	case *agent.ToolCallFinished:
		m.tr.toolBlocked(e)
	case *agent.HookMessage:
		m.tr.hookMessage(e)
	case *agent.UsageUpdated:
		m.tr.addUsage(e)
	case *agent.InteractionRequested:
		m.pending = append(m.pending, e.Interaction)
	case *agent.InteractionResolved:
		m.drop(e.ID)
	}
}

// drop forgets interaction id; the typed input goes with it when it was
// the one shown.
func (m *model) drop(id string) {
	for i, in := range m.pending {
		if in.ID == id {
			if i == 0 {
				m.input = nil
			}
			m.pending = slices.Delete(m.pending, i, i+1)
			return
		}
	}
}

func (m *model) interrupt() {
	m.interrupted = true
	if m.onInterrupt != nil {
		m.onInterrupt()
	}
}
