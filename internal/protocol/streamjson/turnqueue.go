package streamjson

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/arbor-run/arbor/internal/tool"
)

// turnQueue follows the user turns from submission to their end, so that
// an interrupt that arrives right behind a prompt, before its turn
// started, ends that turn (as Claude Code and qwen do) instead of
// cancelling nothing; and it counts the session's turns for
// MaxSessionTurns. Its fields are guarded by Server.mu.
type turnQueue struct {
	last    int          // the last turn number given out
	waiting []int        // turns submitted and not started, in order
	running int          // the running turn, 0 when none
	stopped map[int]bool // turns interrupted before they started
	started int          // turns started in this process
	// interrupted is whether the last turn that ended was interrupted
	// (continue_last_turn's question).
	interrupted bool
}

// addTurn numbers a submitted turn; the reader calls it, in input order.
func (s *Server) addTurn() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := &s.turnq
	q.last++
	q.waiting = append(q.waiting, q.last)
	return q.last
}

// startTurn marks turn seq running (the runner calls it first thing).
func (s *Server) startTurn(seq int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := &s.turnq
	q.waiting = slices.DeleteFunc(q.waiting, func(n int) bool { return n == seq })
	q.running = seq
	q.started++
}

// dropTurn forgets a turn the runner refused.
func (s *Server) dropTurn(seq int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.turnq.waiting = slices.DeleteFunc(s.turnq.waiting, func(n int) bool { return n == seq })
}

// endTurn marks the running turn ended.
func (s *Server) endTurn(interrupted bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.turnq.running, s.turnq.interrupted = 0, interrupted
}

// interruptQueued takes an interrupt when no turn runs but one waits: the
// first waiting turn will end as interrupted when it starts. It reports
// whether it took it; if not, the running job is the interrupt's.
func (s *Server) interruptQueued() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := &s.turnq
	if q.running != 0 || len(q.waiting) == 0 {
		return false
	}
	if q.stopped == nil {
		q.stopped = map[int]bool{}
	}
	q.stopped[q.waiting[0]] = true
	return true
}

// turnRefused ends turn t before it calls the model when it was
// interrupted before it started, or when it is past MaxSessionTurns; it
// reports whether it did.
func (s *Server) turnRefused(t userTurn, sid string, start time.Time) bool {
	s.mu.Lock()
	stopped, n := s.turnq.stopped[t.seq], s.turnq.started
	delete(s.turnq.stopped, t.seq)
	s.mu.Unlock()
	switch {
	case stopped:
		s.writeInterrupted(sid, interruptedNote)
		s.write(resultMessage{Type: "result", Subtype: "error_during_execution", IsError: true, Errors: []string{interruptedNote},
			SessionID: sid, DurationMS: time.Since(start).Milliseconds(), PermissionDenials: []permissionDenial{},
			ModelUsage: map[string]modelUsage{}, UUID: newUUID()})
		s.endTurn(true)
		return true
	case s.opts.MaxSessionTurns > 0 && n > s.opts.MaxSessionTurns:
		msg := fmt.Sprintf("Reached maximum number of session turns (%d; --max-session-turns)", s.opts.MaxSessionTurns)
		s.write(resultMessage{Type: "result", Subtype: "error_max_turns", IsError: true, Errors: []string{msg},
			SessionID: sid, DurationMS: time.Since(start).Milliseconds(), PermissionDenials: []permissionDenial{},
			ModelUsage: map[string]modelUsage{}, UUID: newUUID()})
		s.endTurn(false)
		return true
	}
	return false
}

// errToolBudget ends a turn whose call went past MaxToolCalls.
type errToolBudget struct{ max int }

func (e errToolBudget) Error() string {
	return fmt.Sprintf("Run aborted: tool-call budget of %d exceeded (--max-tool-calls)", e.max)
}

// capCalls refuses t's calls once the process made MaxToolCalls of them;
// the refused call ends its turn (as qwen's run budget does).
func (s *Server) capCalls(t tool.Tool) tool.Tool {
	return &cappedTool{Tool: t, s: s}
}

type cappedTool struct {
	tool.Tool
	s *Server
}

var _ tool.Namer = (*cappedTool)(nil)

// Name implements tool.Namer: the capped tool's name, without its schema.
func (c *cappedTool) Name() string { return tool.Name(c.Tool) }

func (c *cappedTool) Run(ctx context.Context, call tool.Call) tool.Result {
	limit := *c.s.opts.MaxToolCalls
	if c.s.toolCalls.Add(1) > int64(limit) {
		err := errToolBudget{max: limit}
		c.s.runner.Cancel(err)
		return tool.Errorf("%v", err)
	}
	return c.Tool.Run(ctx, call)
}
