package tui

import (
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/tree"
)

// Plain prints a run as lines, one per node transition, tool call and the
// run's end (the format is in the package doc). It is for output that is
// not a terminal: logs, pipes, CI.
type Plain struct {
	mu sync.Mutex // guards w and tr
	w  io.Writer
	tr *tracker
}

// NewPlain returns a Plain writing the lines of run runID to w; an empty
// runID follows the first run whose events arrive.
func NewPlain(w io.Writer, runID string) *Plain {
	return &Plain{w: w, tr: newTracker(runID)}
}

// Handle is a bus subscriber. It writes at most one line per event and
// never waits on anything but w.
func (p *Plain) Handle(e agent.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var line string
	switch e := e.(type) {
	case *tree.NodeChanged:
		// A change within one state (a draft stored, a session assigned)
		// is tracked but not printed unless the engine gave a reason.
		if _, ok := p.tr.node(e); ok && (e.From != e.Node.State || e.Reason != "") {
			line = transitionLine(e)
		}
	case *tree.RunFinished:
		if p.tr.finish(e) {
			line = finishedLine(e)
		}
	case *tree.Notified:
		if id, ok := p.tr.notified(e); ok {
			line = fmt.Sprintf("#%d ✉ #%d: %s", id, e.To, firstLine(e.Message, textCut))
		}
	case *agent.ToolCallStarted:
		if id, ok := p.tr.toolStarted(e); ok {
			line = fmt.Sprintf("#%d → %s %s", id, e.Tool, brief(e.Input))
		}
	case *agent.ToolCallFinished:
		if id, ok := p.tr.toolBlocked(e); ok {
			line = fmt.Sprintf("#%d ⊘ %s", id, strings.Join(e.Blocked, "; "))
		}
	case *agent.HookMessage:
		if id, ok := p.tr.hookMessage(e); ok {
			line = fmt.Sprintf("#%d ℹ %s", id, firstLine(e.Text, textCut))
		}
	}
	if line != "" {
		// A failed write (a closed pipe) is not the run's problem.
		_, _ = io.WriteString(p.w, strings.TrimRight(line, " ")+"\n")
	}
}

// transitionLine renders a node's creation or transition.
func transitionLine(e *tree.NodeChanged) string {
	n := e.Node
	var b strings.Builder
	if e.From == "" {
		fmt.Fprintf(&b, "#%d + %s %s %s", n.ID, n.State, tag(n), firstLine(label(n), textCut))
	} else {
		fmt.Fprintf(&b, "#%d %s → %s  %s %s", n.ID, e.From, n.State, tag(n), firstLine(label(n), textCut))
	}
	if n.State == tree.StatePending && len(n.BlockedBy) > 0 {
		b.WriteString(" blocked_by=" + ids(n.BlockedBy, ","))
	}
	if e.From == "" && n.Model != "" {
		b.WriteString(" model=" + n.Model)
	}
	if e.From == "" && n.Runner != "" {
		b.WriteString(" runner=" + n.Runner)
	}
	if e.From == "" {
		return b.String()
	}
	if n.State == tree.StateComplete {
		b.WriteString("  result: " + firstLine(n.Result, textCut))
	}
	if n.Error != "" {
		b.WriteString("  error: " + firstLine(n.Error, textCut))
	}
	if e.Reason != "" {
		b.WriteString("  reason: " + firstLine(e.Reason, textCut))
	}
	return b.String()
}

// finishedLine renders the end of a run.
func finishedLine(e *tree.RunFinished) string {
	line := "run " + e.RunID + " " + string(e.Outcome)
	if e.Error != "" {
		line += ": " + firstLine(e.Error, textCut)
	}
	return line
}
