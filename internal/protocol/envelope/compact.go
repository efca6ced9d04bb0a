package envelope

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/app"
)

// compaction is what the server knows of the main agent's compactions and
// context notices: /compact (on the runner) and translate share it. Its
// lock comes after ctl.mu and before wire.mu; it is never held with the
// sub-agents' or the interactions' lock.
type compaction struct {
	mu sync.Mutex // guards the fields below
	// manual is set while /compact runs; started counts the compactions
	// started, so /compact can tell that nothing happened; plan is the
	// plan_id of the running compaction.
	manual  bool
	started int
	plan    string
	// notices counts the context_notice pushes.
	notices int
}

// compactNow runs a manual compaction on the runner; the agent's
// events report it, and a skipped compaction_status says when there was
// too little to compact.
func (s *server) compactNow(ctx context.Context) {
	if ctx.Err() != nil {
		return
	}
	s.events.Flush() // earlier compactions are not this one
	c := s.cmp
	c.mu.Lock()
	c.manual = true
	before := c.started
	c.mu.Unlock()
	var err error
	s.cancellable(ctx, func(ctx context.Context, sess *app.Session) { _, err = sess.Agent.Compact(ctx, "") })
	s.events.Flush()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.manual = false
	if err == nil && c.started == before {
		s.wire.push(evCompactionStatus, compactionStatus{Status: "skipped", Trigger: "manual", Reason: "nothing to compact"}, nil)
	}
}

// compactionEvent pushes the main agent's compaction and context events.
func (s *server) compactionEvent(e agent.Event) {
	s.ctl.mu.Lock()
	cancelled := s.ctl.jobCancelled // the work running it was cancelled
	s.ctl.mu.Unlock()
	c := s.cmp
	c.mu.Lock()
	defer c.mu.Unlock()
	trigger := "usage_driven"
	if c.manual {
		trigger = "manual"
	}
	switch e := e.(type) {
	case *agent.CompactionStarted:
		c.started++
		c.plan = planID(e.Seq) // the terminal status names the same plan
		s.wire.push(evActivity, activity{AgentID: mainAgent, Type: "compacting"}, phase("compacting", ""))
		s.wire.push(evCompactionStatus, compactionStatus{Status: "started", Trigger: trigger, PlanID: c.plan}, nil)
	case *agent.CompactionFinished:
		p := compactionStatus{Status: "succeeded", Trigger: trigger, Reason: e.Err, PlanID: c.plan}
		switch {
		case e.Refused: // a PreCompact hook blocked it: it did not run
			p.Status = "skipped"
		case e.Err != "" && (cancelled || strings.Contains(e.Err, context.Canceled.Error())):
			// Stopped by a cancel: its internal error text is not shown.
			p.Status, p.Reason = "cancelled", "cancelled"
		case e.Err != "":
			p.Status = "failed"
		}
		s.wire.push(evCompactionStatus, p, phase("", ""))
	case *agent.ContextPressure:
		n := c.notices
		c.notices++
		s.wire.push(evContextNotice, contextNotice{SessionID: e.SessionID, Level: "warn", MessageIndex: n,
			Message: fmt.Sprintf("the context holds about %d tokens of the model's %d: older turns will soon be summarized", e.EstimatedTokens, e.Window)}, nil)
	}
}

// planID names a compaction by the bus seq of the event that reports it.
func planID(seq uint64) string { return fmt.Sprintf("compaction-%d", seq) }
