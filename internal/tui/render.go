package tui

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/tree"
)

// The size assumed until the terminal reports its own, and for output
// that is not a terminal.
const (
	defaultWidth  = 100
	defaultHeight = 40
)

var (
	styleDim    = lipgloss.NewStyle().Faint(true)
	styleBold   = lipgloss.NewStyle().Bold(true)
	styleGreen  = lipgloss.NewStyle().Foreground(lipgloss.Green)
	styleRed    = lipgloss.NewStyle().Foreground(lipgloss.Red)
	styleYellow = lipgloss.NewStyle().Foreground(lipgloss.Yellow)
	styleCyan   = lipgloss.NewStyle().Foreground(lipgloss.Cyan)
	styleBlue   = lipgloss.NewStyle().Foreground(lipgloss.Blue)
	styleAsk    = lipgloss.NewStyle().Foreground(lipgloss.Magenta).Bold(true)

	spinner = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}
)

// glyph is a node's state mark, styled.
func glyph(n tree.NodeView) string {
	switch n.State {
	case tree.StateActive:
		if n.Kind == tree.KindAsk {
			return styleAsk.Render("?")
		}
		return styleCyan.Render("●")
	case tree.StateSynthesizing:
		return styleCyan.Render("●")
	case tree.StatePending:
		return styleDim.Render("○")
	case tree.StateWaiting:
		return styleBlue.Render("◐")
	case tree.StatePaused:
		return styleYellow.Render("⏸")
	case tree.StateComplete:
		return styleGreen.Render("✓")
	case tree.StateFailed:
		return styleRed.Render("✗")
	case tree.StateCancelled:
		return styleDim.Render("⊘")
	}
	return "·"
}

// running reports whether a node's agent (or its answerer) is at work.
func running(state tree.NodeState) bool {
	return state == tree.StateActive || state == tree.StateSynthesizing || state == tree.StateWaiting
}

// render draws the whole view at the given width. When the model knows the
// terminal height, the tree is shortened to fit: detail lines go first,
// then the nodes past the budget.
func (m *model) render(width int) string {
	if width <= 0 {
		width = defaultWidth
	}
	head, foot := m.header(width), m.footer(width)
	body := m.treeLines(width, true)
	if m.height > 0 {
		// View adds one empty line below.
		budget := max(m.height-1-len(head)-len(foot), 1)
		if len(body) > budget {
			body = m.treeLines(width, false)
		}
		if len(body) > budget {
			more := len(body) - budget + 1
			body = append(body[:budget-1], styleDim.Render(fmt.Sprintf("… %d more nodes", more)))
		}
	}
	lines := append(append(head, body...), foot...)
	for i, l := range lines {
		lines[i] = ansi.Truncate(l, width, "…")
	}
	return strings.Join(lines, "\n")
}

func (m *model) header(width int) []string {
	run := "run " + m.tr.runID
	if m.title == "" {
		return []string{styleBold.Render("arbor " + run)}
	}
	title := ansi.Truncate(firstLine(m.title, width), max(width-len(run)-2, 10), "…")
	return []string{styleBold.Render(title) + "  " + styleDim.Render(run)}
}

// treeLines draws one line per node, depth first, and, with details, the
// result, error or current tool call under it.
func (m *model) treeLines(width int, details bool) []string {
	nodes, depths := m.tr.ordered()
	lines := make([]string, 0, len(nodes))
	for i, n := range nodes {
		indent := strings.Repeat("  ", depths[i])
		lines = append(lines, m.nodeLine(n, indent, width))
		if !details {
			continue
		}
		if d := detail(n); d != "" {
			lines = append(lines, indent+"  "+d)
		}
	}
	return lines
}

func (m *model) nodeLine(n *nodeState, indent string, width int) string {
	v := n.view
	left := indent + glyph(v) + " " + styleBold.Render("#"+strconv.FormatInt(v.ID, 10)) + " " + styleDim.Render(tag(v)) + " "
	var right []string
	if v.State == tree.StatePending && len(v.BlockedBy) > 0 {
		right = append(right, styleYellow.Render("blocked-by: "+ids(v.BlockedBy, ", ")))
	}
	if running(v.State) && !n.started.IsZero() {
		clock := elapsed(m.now.Sub(n.started))
		if v.State != tree.StateWaiting {
			clock = spinner[m.frame%len(spinner)] + " " + clock
		}
		if v.State == tree.StateSynthesizing {
			clock = "synthesizing " + clock
		}
		right = append(right, styleCyan.Render(clock))
	}
	if v.Model != "" {
		right = append(right, styleDim.Render(v.Model))
	}
	if v.Runner != "" {
		right = append(right, styleDim.Render("runner: "+v.Runner))
	}
	if u := m.tr.usageOf(n); u.usage.Total() > 0 {
		right = append(right, styleDim.Render(tokens(u.usage.Total())+" tok "+cost(u.cost, !u.costUnknown)))
	}
	suffix := strings.Join(right, "  ")
	room := width - ansi.StringWidth(left) - ansi.StringWidth(suffix) - 2
	goal := ansi.Truncate(firstLine(label(v), width), max(room, 12), "…")
	if suffix == "" {
		return left + goal
	}
	return left + goal + "  " + suffix
}

// detail is the dimmed line under a node: its result, error or latest
// tool call.
func detail(n *nodeState) string {
	v := n.view
	switch {
	case v.State == tree.StateComplete && strings.TrimSpace(v.Result) != "":
		return styleDim.Render("└ " + firstLine(v.Result, 200))
	case v.Error != "":
		return styleRed.Faint(true).Render("└ error: " + firstLine(v.Error, 200))
	case running(v.State) && n.lastTool != "":
		return styleDim.Render("→ " + n.lastTool)
	}
	return ""
}

func (m *model) footer(width int) []string {
	lines := []string{"", m.totals()}
	switch f := m.tr.finished; {
	case f != nil && f.Outcome == store.RunComplete:
		lines = append(lines, styleGreen.Render("run complete"))
	case f != nil:
		s := "run " + string(f.Outcome)
		if f.Error != "" {
			s += ": " + firstLine(f.Error, width)
		}
		lines = append(lines, styleRed.Render(s))
	case m.interrupted:
		lines = append(lines, styleYellow.Render("cancelling… (Ctrl-C)"))
	}
	for _, f := range m.mcpFailed {
		lines = append(lines, styleRed.Render("✗ MCP server "+f.Name+" failed: "+firstLine(f.Error, width)+" (its tools are not available)"))
	}
	if m.notice != "" {
		lines = append(lines, styleRed.Render("! "+m.notice))
	}
	return append(lines, m.interaction()...)
}

// totals is the line of run-wide figures.
func (m *model) totals() string {
	u := m.tr.total()
	done := 0
	for _, n := range m.tr.nodes {
		if n.view.State.Terminal() {
			done++
		}
	}
	end := m.now
	if f := m.tr.finished; f != nil && !f.At.IsZero() {
		end = f.At
	}
	var took time.Duration
	if !m.tr.begun.IsZero() {
		took = end.Sub(m.tr.begun)
	}
	return styleDim.Render(fmt.Sprintf("tokens %s · %s · %d/%d done · %s",
		tokens(u.usage.Total()), cost(u.cost, !u.costUnknown), done, len(m.tr.nodes), elapsed(took)))
}

// interaction draws the shown interaction with its keys.
func (m *model) interaction() []string {
	in, ok := m.current()
	if !ok {
		return nil
	}
	who := ""
	if id, ok := m.nodeOfInteraction(in); ok {
		who = "#" + strconv.FormatInt(id, 10) + " "
	}
	lines := []string{""}
	switch {
	case in.Kind == agent.KindApproval && in.Approval != nil:
		a := in.Approval
		what := a.Target.Main()
		if what == "" {
			what = brief(a.Input)
		}
		lines = append(lines, styleAsk.Render("? ")+who+styleBold.Render(a.Tool)+" wants to run: "+firstLine(what, 200))
		if a.Reason != "" {
			lines = append(lines, styleDim.Render("  ("+a.Reason+")"))
		}
		always := "[a] always for this session"
		if a.SuggestedRule != "" {
			always += " (" + a.SuggestedRule + ")"
		}
		lines = append(lines, "  [y] yes  [n] no  "+always)
	case in.Kind == agent.KindQuestion && in.Question != nil:
		q := in.Question
		for i, l := range strings.Split(strings.TrimSpace(q.Question), "\n") {
			if i == 0 {
				l = styleAsk.Render("? ") + who + l
			} else {
				l = "  " + l
			}
			lines = append(lines, l)
		}
		for i, o := range q.Options {
			mark := ""
			if o == q.Default {
				mark = styleDim.Render(" (default)")
			}
			lines = append(lines, fmt.Sprintf("  %d. %s%s", i+1, o, mark))
		}
		lines = append(lines, styleDim.Render("  "+questionHint(q.Options, q.MultiSelect, q.Default)))
		lines = append(lines, "  > "+string(m.input)+"█")
	}
	if !in.Deadline.IsZero() {
		lines = append(lines, styleDim.Render("  answer within "+elapsed(in.Deadline.Sub(m.now))))
	}
	if n := len(m.pending) - 1; n > 0 {
		lines = append(lines, styleDim.Render(fmt.Sprintf("  (+%d more waiting)", n)))
	}
	return lines
}

// questionHint says what the keys do for a question.
func questionHint(options []string, multi bool, def string) string {
	var parts []string
	switch {
	case multi:
		parts = append(parts, "numbers (1,3) or text")
	case len(options) > 0:
		parts = append(parts, "a number or text")
	default:
		parts = append(parts, "type the answer")
	}
	if def != "" {
		parts = append(parts, "Enter alone: "+firstLine(def, 40))
	} else {
		parts = append(parts, "Enter alone declines")
	}
	return strings.Join(append(parts, "Esc declines"), " · ")
}

// nodeOfInteraction finds the node an interaction belongs to: an ask
// node's question carries it (AskNode), anything else comes from a node's
// agent session.
func (m *model) nodeOfInteraction(in agent.Interaction) (int64, bool) {
	if in.Question != nil && in.Question.AskNode != 0 {
		return in.Question.AskNode, true
	}
	_, id, ok := m.tr.nodeOf(in.SessionID)
	return id, ok
}
