package tui

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"

	tea "charm.land/bubbletea/v2"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/tree"
)

// LiveOptions configure a Live view.
type LiveOptions struct {
	// RunID is the run shown; "" follows the first run whose events arrive.
	RunID string
	// In and Out are the terminal; nil means stdin (or the controlling
	// terminal) and stdout.
	In  io.Reader
	Out io.Writer
	// Resolver receives the answers given in the view.
	Resolver Resolver
	// Title heads the view, typically the run's goal.
	Title string
	// OnInterrupt is called on every Ctrl-C; the caller cancels the run.
	// The view goes on rendering until Quit.
	OnInterrupt func()
}

// Live is the interactive tree view. Handle may be called at any time,
// before, during or after Run; Run may be called once.
type Live struct {
	opts LiveOptions

	mu    sync.Mutex // guards queue, quit, mcp, mcpChanged
	queue []agent.Event
	quit  bool
	// mcp is the latest list of failed MCP servers, not yet shown when
	// mcpChanged.
	mcp        []MCPFailure
	mcpChanged bool
	// wake has room for one signal: "the queue or quit changed".
	wake chan struct{}
}

// NewLive returns a view; nothing is drawn until Run.
func NewLive(o LiveOptions) *Live {
	return &Live{opts: o, wake: make(chan struct{}, 1)}
}

// Handle is a bus subscriber. It queues the events the view shows and
// returns at once.
func (l *Live) Handle(e agent.Event) {
	switch e.(type) {
	case *tree.NodeChanged, *tree.RunFinished, *tree.Notified, *agent.ToolCallStarted, *agent.ToolCallFinished, *agent.UsageUpdated,
		*agent.InteractionRequested, *agent.InteractionResolved:
	default:
		return
	}
	l.mu.Lock()
	l.queue = append(l.queue, e)
	l.mu.Unlock()
	l.signal()
}

// MCPFailure is an MCP server that failed: its tools are not available.
type MCPFailure struct {
	Name, Error string
}

// SetMCPFailures replaces the failed MCP servers the view shows (none
// when fs is empty). Like Handle, it returns at once.
func (l *Live) SetMCPFailures(fs []MCPFailure) {
	l.mu.Lock()
	l.mcp, l.mcpChanged = slices.Clone(fs), true
	l.mu.Unlock()
	l.signal()
}

// Quit ends Run after the events handled so far are shown. It is safe to
// call at any time and more than once.
func (l *Live) Quit() {
	l.mu.Lock()
	l.quit = true
	l.mu.Unlock()
	l.signal()
}

func (l *Live) signal() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// take empties the queue; mcp is the failed servers' list when it changed
// since the last take.
func (l *Live) take() (batch []agent.Event, mcp *mcpMsg, quit bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	batch, l.queue = l.queue, nil
	if l.mcpChanged {
		mcp, l.mcpChanged = &mcpMsg{failed: l.mcp}, false
	}
	return batch, mcp, l.quit
}

// Run shows the view until Quit is called or ctx ends, then draws the final
// state and restores the terminal. It returns nil in both cases and an
// error only when the terminal could not be driven.
func (l *Live) Run(ctx context.Context) error {
	opts := []tea.ProgramOption{
		// The CLI owns SIGINT / SIGTERM; in raw mode Ctrl-C is a key.
		tea.WithoutSignalHandler(),
		tea.WithFilter(func(_ tea.Model, msg tea.Msg) tea.Msg {
			if _, ok := msg.(tea.InterruptMsg); ok {
				return interruptMsg{}
			}
			return msg
		}),
		// Used only when Out is not a terminal; a terminal reports its size.
		tea.WithWindowSize(defaultWidth, defaultHeight),
	}
	if l.opts.In != nil {
		opts = append(opts, tea.WithInput(l.opts.In))
	}
	if l.opts.Out != nil {
		opts = append(opts, tea.WithOutput(l.opts.Out))
	}
	p := tea.NewProgram(newModel(l.opts), opts...)

	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { l.pump(ctx, p, done) })
	_, err := p.Run()
	close(done)
	wg.Wait()
	if err != nil {
		return fmt.Errorf("live view: %w", err)
	}
	return nil
}

// pump hands queued events to the program, in order, and quits it after
// them when asked to. p.Send blocks only while the program is busy, and
// never after it has stopped.
func (l *Live) pump(ctx context.Context, p *tea.Program, done <-chan struct{}) {
	ended := ctx.Done()
	for {
		select {
		case <-done:
			return
		case <-ended:
			ended = nil
			l.Quit()
			continue
		case <-l.wake:
		}
		batch, mcp, quit := l.take()
		if mcp != nil {
			p.Send(*mcp)
		}
		if len(batch) > 0 {
			p.Send(eventsMsg(batch))
		}
		if quit {
			p.Quit()
			return
		}
	}
}
