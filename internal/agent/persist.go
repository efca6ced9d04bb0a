// Step persistence: the Store the loop writes to, and how each step's
// messages, usage and status reach it, waited for or queued (QueueEnd).

package agent

import (
	"context"
	"fmt"
	"time"

	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/store"
)

// Store is what the loop persists. It is a journal of eleven calls, wider
// than the usual small interface because the loop's crash safety depends on
// all of them together; store.Store implements it.
type Store interface {
	AppendMessages(ctx context.Context, sessionID string, msgs ...llm.Message) (int64, error)
	// SaveStep writes a step's messages, usage and status in one
	// transaction: a plain turn costs one commit (the user message, the
	// answer with its usage and the idle status), or two when its answer
	// takes longer than sendFlush (add).
	SaveStep(ctx context.Context, st store.Step) (int64, error)
	Messages(ctx context.Context, sessionID string, afterSeq int64) ([]store.MessageRecord, error)
	StartIntent(ctx context.Context, in store.Intent) error
	FinishIntent(ctx context.Context, sessionID, callID, result string, isError bool) error
	SetIntentPGID(ctx context.Context, sessionID, callID string, pgid int) error
	Intents(ctx context.Context, sessionID string) ([]store.Intent, error)
	AddUsage(ctx context.Context, u store.UsageRecord) error
	SaveCompaction(ctx context.Context, c store.Compaction) error
	LatestCompaction(ctx context.Context, sessionID string) (store.Compaction, error)
	SetSessionStatus(ctx context.Context, id string, status store.SessionStatus) error
}

// StepQueuer is a Store that can queue a step's write and wait for it
// later, keeping it in order with the writes queued after it
// (sqlite.Store.QueueStep).
type StepQueuer interface {
	QueueStep(ctx context.Context, st store.Step) (wait func() (int64, error))
}

// EnsureStored writes the session record of Config.Create now, if the
// agent has not stored it yet; writes other than the loop's own (a
// distillation's usage) need the session first.
func (a *Agent) EnsureStored(ctx context.Context) error {
	if a.create == nil {
		return nil
	}
	return a.save(ctx, store.Step{})
}

// record stores the assistant message of a call to m with its usage and,
// when set, the session status the step ends in, in one transaction.
func (a *Agent) record(ctx context.Context, resp *llm.Response, m modelState, status store.SessionStatus, queue bool) error {
	if len(resp.Message.Parts) == 0 {
		resp.Message.Parts = []llm.Part{llm.TextPart("")}
	}
	resp.Message.Role = llm.RoleAssistant
	rec, updated := a.tally(resp.Usage, m)
	step := store.Step{Messages: []llm.Message{resp.Message}, Usage: &rec, Status: status}
	if !queue || !a.queueSave(context.WithoutCancel(ctx), step) {
		if err := a.save(context.WithoutCancel(ctx), step); err != nil {
			return err
		}
	}
	a.publish(&AssistantMessage{Message: resp.Message, StopReason: resp.StopReason, Model: m.ref, ResponseID: resp.ID})
	a.publish(updated)
	return nil
}

// setStatus stores the session's status unless this agent stored it last.
// A failure is not the turn's: the status is advisory (listings, resume
// hints), while the transcript is what the loop's safety rests on.
func (a *Agent) setStatus(ctx context.Context, status store.SessionStatus) {
	a.settleSend() // its write stores a status too
	if a.status == status {
		return
	}
	if a.waitPending() != nil {
		return
	}
	if err := a.cfg.Store.SetSessionStatus(ctx, a.cfg.SessionID, status); err == nil {
		a.status = status
	}
}

// append stores msgs and adds them to the context.
func (a *Agent) append(ctx context.Context, msgs ...llm.Message) error {
	return a.save(ctx, store.Step{Messages: msgs})
}

// save stores st for this session in one transaction and adds its
// messages to the context.
func (a *Agent) save(ctx context.Context, st store.Step) error {
	if err := a.waitPending(); err != nil {
		return err
	}
	st = a.stepFor(st)
	last, err := a.cfg.Store.SaveStep(ctx, st)
	if err != nil {
		return fmt.Errorf("store messages: %w", err)
	}
	a.wrote(st, last)
	return nil
}

// stepFor completes st as this agent's next write: its session, the
// session's record while it is not stored, and a held message first.
func (a *Agent) stepFor(st store.Step) store.Step {
	a.settleSend()
	st.SessionID = a.cfg.SessionID
	st.Create = a.create
	if a.held {
		st.Messages = append([]llm.Message{a.history[len(a.history)-1].msg}, st.Messages...)
		if st.Status == "" {
			st.Status = store.SessionActive
		}
	}
	return st
}

// wrote records that st (from stepFor) was stored, or queued, with last
// as the session's last seq: its messages join history with their seqs
// (a held one is already there) and it returns their history indexes.
func (a *Agent) wrote(st store.Step, last int64) []int {
	seq := last - int64(len(st.Messages))
	idx := make([]int, 0, len(st.Messages))
	msgs := st.Messages
	if a.held {
		seq++
		a.history[len(a.history)-1].seq = seq
		idx = append(idx, len(a.history)-1)
		msgs, a.held = msgs[1:], false
	}
	for _, m := range msgs {
		seq++
		idx = append(idx, len(a.history))
		a.histMu.Lock()
		a.history = append(a.history, entry{seq: seq, msg: m})
		a.histMu.Unlock()
		for _, p := range m.Parts { // not ToolCalls: it copies them all
			if p.Type == llm.PartToolCall && p.ToolCall != nil {
				a.callIDs[p.ToolCall.ID] = true
			}
		}
	}
	a.create = nil
	if st.Status != "" {
		a.status = st.Status
	}
	return idx
}

// pendingStep is a step whose write was queued (queueSave): its messages
// are the history entries at idx, numbered provisionally as the session's
// next seqs, which its wait confirms.
type pendingStep struct {
	wait func() (int64, error)
	idx  []int
	idle *Idle // announced once the step is stored (finish)
	err  error // a failed wait's error (a wait runs once)
	done bool
}

// queueSave is save for a store that can queue the write (StepQueuer):
// the write is queued, not waited for, and its messages join history at
// once. It reports false, having done nothing, when the store cannot
// queue.
func (a *Agent) queueSave(ctx context.Context, st store.Step) bool {
	q, ok := a.cfg.Store.(StepQueuer)
	if !ok {
		return false
	}
	st = a.stepFor(st)
	last := a.lastStoredSeq() + int64(len(st.Messages))
	a.pending = append(a.pending, &pendingStep{wait: q.QueueStep(ctx, st), idx: a.wrote(st, last)})
	return true
}

// lastStoredSeq is the seq of the last message in history that has one
// (stored or queued), 0 when none has.
func (a *Agent) lastStoredSeq() int64 {
	for i := len(a.history) - 1; i >= 0; i-- {
		if a.history[i].seq > 0 {
			return a.history[i].seq
		}
	}
	return 0
}

// waitPending waits for the queued steps, oldest first, and numbers their
// messages as the store did. A failed write stays: every later write of
// the agent reports it.
func (a *Agent) waitPending() error {
	for len(a.pending) > 0 {
		p := a.pending[0]
		if !p.done {
			last, err := p.wait()
			p.done, p.err = true, err
			if err == nil {
				first := last - int64(len(p.idx)) + 1
				for i, at := range p.idx {
					a.history[at].seq = first + int64(i)
				}
			}
			if p.idle != nil {
				a.publish(p.idle)
				p.idle = nil
			}
		}
		if p.err != nil {
			return fmt.Errorf("store messages: %w", p.err)
		}
		a.pending = a.pending[1:]
	}
	a.pending = nil
	return nil
}

// sendFlush is how long a message of Send's that cannot be made again
// stays held before it is written on its own (add): a model that answers
// sooner has it stored with the answer, one commit for the turn instead
// of two; a real model answers later and finds it stored.
const sendFlush = 50 * time.Millisecond

// sending is the write of a held message that flushLater arranged.
type sending struct {
	timer *time.Timer
	step  store.Step    // the held message, with the active status
	done  chan struct{} // closed once the timer's write ended
	last  int64         // its result
	err   error
}

// flushLater writes the held message sendFlush from now, on the timer's
// goroutine, unless the agent writes first (settleSend).
func (a *Agent) flushLater(ctx context.Context) {
	s := &sending{step: a.stepFor(store.Step{Status: store.SessionActive}), done: make(chan struct{})}
	persist := context.WithoutCancel(ctx)
	s.timer = time.AfterFunc(sendFlush, func() {
		defer close(s.done)
		s.last, s.err = a.cfg.Store.SaveStep(persist, s.step)
	})
	a.sending = s
}

// settleSend ends flushLater's timer before the agent writes anything
// else: a message the timer did not write stays held and goes first in
// that write; one it wrote is recorded as stored. One whose write failed
// stays held, so the next write stores it or fails.
func (a *Agent) settleSend() {
	s := a.sending
	if s == nil {
		return
	}
	a.sending = nil
	if s.timer.Stop() {
		return
	}
	<-s.done
	if s.err == nil {
		a.wrote(s.step, s.last)
	}
}
