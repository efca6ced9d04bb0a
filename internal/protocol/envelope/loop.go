package envelope

import (
	"context"
	"fmt"

	"github.com/arbor-run/arbor/internal/tool"
)

// Loop mode (/loop on|off) and the done tool.
//
// Every session the server opens lists a done tool, but it is inert
// outside a loop: called while the loop is off it answers an error result
// and pushes nothing. While the loop is on, a turn that ends without done
// queues a continuation turn (queued work: no idle in between), at most
// maxLoopContinuations per loop; past the bound the loop turns off and an
// error is pushed. done pushes done_completion, turns the loop off and
// ends the turn, so idle follows. A turn that is cancelled or fails also
// turns the loop off, as does a session switch. Every change of the loop
// flag is a state mutation.

// continuationText is the user message of a loop's continuation turns.
const continuationText = "Continue working toward the goal. When it is fully done, call done with a final report."

// maxLoopContinuations bounds the continuation turns of one loop.
const maxLoopContinuations = 25

type doneArgs struct {
	Report string `json:"report" jsonschema:"description=The final report: what was done and its outcome"`
	Reason string `json:"reason,omitempty" jsonschema:"description=Why the work is finished (optional)"`
}

type doneCompletion struct {
	CallID  string `json:"call_id"`
	Report  string `json:"report"`
	Reason  string `json:"reason"`
	Status  string `json:"status"`
	AgentID string `json:"agent_id"`
	Mode    string `json:"mode"`
}

// doneTool is the done tool of the sessions the server opens.
func (s *server) doneTool() tool.Tool {
	return tool.New("done", "Finish the goal of a /loop with a final report. Only available while the user runs a loop; it ends the loop and your turn.",
		tool.KindInteract, func(_ context.Context, call tool.Call, a doneArgs) tool.Result { return s.done(call.ID, a) })
}

// done runs the done tool: outside a loop it refuses, inside it reports
// the completion and ends the loop.
func (s *server) done(callID string, a doneArgs) tool.Result {
	s.events.Flush() // after the assistant_message that called the tool
	s.ctl.mu.Lock()
	defer s.ctl.mu.Unlock()
	if !s.wire.get().loop {
		return tool.Errorf("done is only available while /loop is on")
	}
	p := doneCompletion{CallID: callID, Report: a.Report, Reason: a.Reason, Status: "completed", AgentID: mainAgent, Mode: "normal"}
	s.wire.push(evDoneCompletion, p, func(st *state) { st.loop = false })
	return tool.Result{Content: "The loop is finished; your report was delivered.", EndTurn: true}
}

// setLoop answers /loop on and /loop off.
func (s *server) setLoop(on bool) {
	msg := "loop off"
	if on {
		msg = "loop on"
	}
	s.ctl.mu.Lock()
	defer s.ctl.mu.Unlock()
	s.ctl.continuations = 0
	s.wire.push(evInfo, infoPayload{AgentID: mainAgent, Message: msg}, func(st *state) { st.loop = on })
}

// continueLoopLocked is called when a turn ends with *outcome: while the
// loop is on it queues a continuation turn and reports true, or ends the
// loop; a loop ended by its bound makes *outcome "error" (the idle that
// follows says so). ctl.mu must be held.
func (s *server) continueLoopLocked(outcome *string) bool {
	if !s.wire.get().loop {
		return false
	}
	if *outcome != "completed" {
		s.wire.push(evInfo, infoPayload{AgentID: mainAgent, Message: "loop off: the turn " + outcomeText(*outcome)},
			func(st *state) { st.loop = false })
		return false
	}
	if s.ctl.continuations >= maxLoopContinuations {
		msg := fmt.Sprintf("loop stopped after %d turns without done", maxLoopContinuations)
		s.wire.push(evError, errorPayload{AgentID: mainAgent, Message: msg}, func(st *state) {
			st.loop = false
			st.lastError = msg
		})
		*outcome = "error"
		return false
	}
	if !s.submitInternal("turn", func(ctx context.Context) { s.finishTurn(s.runTurn(ctx, continuationText, "")) }) {
		s.wire.push(evInfo, infoPayload{AgentID: mainAgent, Message: "loop off: input ended"}, func(st *state) { st.loop = false })
		return false
	}
	s.ctl.continuations++
	s.ctl.queued++
	return true
}

func outcomeText(outcome string) string {
	if outcome == "cancelled" {
		return "was cancelled"
	}
	return "failed"
}
