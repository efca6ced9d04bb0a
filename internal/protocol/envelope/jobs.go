package envelope

import (
	"context"
	"fmt"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/tool"
)

// Background shell jobs of the current session.
//
// Every session the server opens gets its own tool.Jobs. A job that ends
// on its own is pushed as background_result and queued as a turn that
// hands its result to the agent as a user message; until that turn ends
// it counts as pending. running_jobs is the current session's running
// jobs plus its pending ones; each change of it is a state mutation. A
// result of a session that is no longer current is dropped: switching
// closes the old session's jobs, which kills them without results.

// jobDone is the onDone of jobs, the Jobs of a session the server opened.
func (s *server) jobDone(jobs *tool.Jobs, j tool.Job) {
	content := fmt.Sprintf("%s (`%s`) ended with exit code %d:\n%s", j.ID, j.Command, j.ExitCode, j.Output)
	c := s.ctl
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sessJobs != jobs {
		return
	}
	if !s.submitInternal("deliver", func(ctx context.Context) { s.deliver(ctx, jobs, content) }) {
		return // input has ended
	}
	c.pending++
	c.queued++ // the delivery turn: no idle before it ends
	res := backgroundResult{SessionID: c.sess.ID, TargetAgentID: mainAgent, MessageIndex: c.results, Content: content}
	c.results++
	n := s.jobCountLocked()
	s.wire.push(evBackgroundResult, res, func(st *state) {
		st.busy = true
		st.runningJobs = n
	})
}

// deliver runs the turn that hands a job's result to the agent, unless
// the session it belongs to is no longer current.
func (s *server) deliver(ctx context.Context, jobs *tool.Jobs, content string) {
	s.ctl.mu.Lock()
	stale := s.ctl.sessJobs != jobs
	if stale {
		s.ctl.queued--
		s.idleLocked(s.wire.get().lastOutcome, nil)
	}
	s.ctl.mu.Unlock()
	if stale {
		return
	}
	s.finishWork(s.runTurn(ctx, content, ""), true)
}

// jobCountLocked is running_jobs: the current session's running jobs and
// those ended whose result the agent has not handled yet. ctl.mu must be
// held.
func (s *server) jobCountLocked() int {
	return s.ctl.sessJobs.Running() + s.ctl.pending
}

// syncJobsLocked records a change of running_jobs that no other mutation
// carried (a job started or killed by a tool). ctl.mu must be held.
func (s *server) syncJobsLocked() {
	if n := s.jobCountLocked(); n != s.wire.get().runningJobs {
		s.wire.mutate(func(st *state) { st.runningJobs = n })
	}
}

// finishWork records a turn's outcome (delivered: the turn handed a job
// result to the agent) and, when no other work waits, pushes idle.
func (s *server) finishWork(res agent.Result, delivered bool) {
	if h := s.agents.host(); h != nil {
		// A spawn's events are published once the new node is durable,
		// which may be after the turn that spawned it has ended: the
		// idle decision below counts the live sub-agents from them.
		h.Published()
	}
	s.events.Flush()
	c := s.ctl
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.jobCancelled {
		// A turn that completed or failed as the cancel arrived is
		// cancelled all the same.
		res = agent.Result{Outcome: agent.OutcomeCancelled}
	}
	outcome, errText := "completed", ""
	switch res.Outcome {
	case agent.OutcomeCompleted:
	case agent.OutcomeCancelled:
		outcome = "cancelled"
	default:
		outcome, errText = "error", string(res.Outcome)
		if res.Err != nil {
			errText = res.Err.Error()
		}
	}
	s.wire.rollback(mainAgent, outcome)
	s.continueLoopLocked(&outcome)
	c.queued--
	if delivered && c.pending > 0 {
		c.pending--
	}
	s.idleLocked(outcome, func(st *state) {
		st.lastOutcome = outcome
		if errText != "" {
			st.lastError = errText
		}
	})
}

// idleLocked applies record and pushes idle when no queued work remains
// (else record is a plain mutation). ctl.mu must be held.
func (s *server) idleLocked(outcome string, record func(*state)) {
	c := s.ctl
	n := s.jobCountLocked()
	apply := func(st *state) {
		if record != nil {
			record(st)
		}
		st.runningJobs = n
	}
	if c.queued > 0 {
		s.wire.mutate(apply)
		return
	}
	if live := s.agents.liveCount(); live > 0 {
		// Sub-agents still work: idle comes when the last one's end has
		// been delivered (settleLocked).
		s.wire.mutate(func(st *state) {
			apply(st)
			st.phase, st.phaseDetail = "waiting_agents", plural(live, "sub-agent")
		})
		return
	}
	if s.ix.pendingHandoff() != nil {
		// No idle while a handoff waits for the client's decision; it is
		// owed until then (payIdleLocked). Nothing runs meanwhile.
		s.wire.mutate(func(st *state) {
			apply(st)
			st.busy, st.phase, st.phaseDetail = false, "waiting_handoff", ""
		})
		c.idleOwed = outcome
		return
	}
	suppress := !c.ranSinceIdle
	c.ranSinceIdle = false
	cancelled := c.cancelled
	if cancelled {
		// The client cancelled this work; a turn that completed as the
		// cancel arrived does not make it complete.
		outcome, c.cancelled = "cancelled", false
	}
	s.wire.push(evIdle, idlePayload{LastOutcome: outcome, SuppressUserNotification: suppress, RunningJobs: n}, func(st *state) {
		apply(st)
		if cancelled {
			st.lastOutcome = outcome
		}
		st.busy, st.phase, st.phaseDetail = false, "", ""
	})
	s.quiet.Idle()
}

// plural is "1 thing" or "n things".
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// navigation wraps a job that navigates rather than works — /new,
// /resume, /models <pool> (and models set_current_model_pool),
// /worktree, /compact — so that it ends with idle as in Chord: its
// suppress_user_notification is true unless an agent ran since the last
// idle, and no idle comes while other work is queued, sub-agents run or a
// handoff waits. A session switch (fresh) also clears last_error: it
// belonged to the old session.
//
// A navigation that fails is answered by its error envelope only: no
// idle follows it and last_error is kept.
func (s *server) navigation(fresh bool, j func(ctx context.Context) error) job {
	return func(ctx context.Context) {
		err := j(ctx)
		if ctx.Err() != nil || err != nil {
			return // input ended, or the error answered it
		}
		s.events.Flush() // the navigation's own pushes come first
		c := s.ctl
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.queued > 0 || s.agents.liveCount() > 0 || s.ix.pendingHandoff() != nil {
			return // the work under way ends with its own idle
		}
		s.idleLocked("completed", func(st *state) {
			st.lastOutcome = "completed"
			if fresh {
				st.lastError = ""
			}
		})
	}
}

// submitWaiting submits a navigation j (named cmd, as the client wrote
// it) like submit. Submitted behind running or queued work, it waits for
// that work, and status says so meanwhile: phase "waiting_turn",
// phase_detail cmd (see status), until it starts.
func (s *server) submitWaiting(kind, cmd string, j job) error {
	c := s.ctl
	c.mu.Lock()
	defer c.mu.Unlock()
	behind := c.active || c.queued > 0
	err := s.submit(kind, func(ctx context.Context) {
		c.mu.Lock()
		if behind && len(c.waiting) > 0 {
			c.waiting = c.waiting[1:]
		}
		c.mu.Unlock()
		j(ctx)
	})
	if err != nil {
		return err
	}
	if behind {
		c.waiting = append(c.waiting, cmd)
	}
	// A state mutation whether it waits or not, so that the seqs that
	// follow do not depend on whether the work before it had ended.
	s.wire.mutate(func(*state) {})
	return nil
}

// payIdleLocked sends the idle held back by a pending handoff once that
// handoff is gone, unless new work will end with an idle of its own.
// ctl.mu must be held.
func (s *server) payIdleLocked() {
	owed := s.ctl.idleOwed
	if owed == "" || s.ix.pendingHandoff() != nil {
		return
	}
	s.ctl.idleOwed = ""
	if s.ctl.queued == 0 {
		s.idleLocked(owed, nil)
	}
}
