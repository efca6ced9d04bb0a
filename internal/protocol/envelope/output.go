package envelope

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/arbor-run/arbor/internal/protocol"
)

// state is the cached status the server reports; guarded by wire.mu.
// Each field has one writer, which holds its own lock while it changes it
// (so it may read it back consistently): busy, lastOutcome, sessionID,
// role, loop and runningJobs are session control's (control.mu); phase,
// phaseDetail and lastError also change on translate's pushes. The
// pending requests are the interactions' (see interactions).
type state struct {
	busy        bool
	phase       string
	phaseDetail string
	lastError   string
	lastOutcome string
	sessionID   string
	role        string
	updatedAt   time.Time
	runningJobs int
	// loop is set while /loop is on (see loop.go).
	loop bool
}

// wire is the output: the outbox, the seq counter, the client's
// subscriptions and the cached state. Its lock is the last of every lock
// order: it is held only to change the state, take a seq and queue the
// line, never while calling out or writing to stdout, so any goroutine
// holding any other lock may push, and a client that stops reading
// stdout stalls nothing but its own output.
type wire struct {
	out  *protocol.Outbox
	diag io.Writer

	// mu guards the fields below and is held while queueing a seq'd line,
	// so envelopes leave in seq order.
	mu   sync.Mutex
	seq  uint64
	st   state
	subs map[string]bool // nil = every subscribable event
	// partial marks the agents (by agent id) whose streamed text has not
	// been committed by an assistant_message yet.
	partial map[string]bool
}

// newWire starts the output to out; Serve closes w.out.
func newWire(out, diag io.Writer) *wire {
	o := protocol.NewOutbox(out, func(err error) { fmt.Fprintf(diag, "arbor: envelope: write: %v\n", err) })
	return &wire{out: o, diag: diag, partial: map[string]bool{}}
}

// write encodes payload into an envelope and queues it. A seq'd line is
// queued under w.mu (pushLocked, status); a line without seq carries no
// state and is queued by whoever answers.
func (w *wire) write(typ string, seq uint64, payload any) {
	raw, err := json.Marshal(payload)
	if err != nil {
		fmt.Fprintf(w.diag, "arbor: envelope: encode %s: %v\n", typ, err)
		return
	}
	if err := w.out.Put(Envelope{Type: typ, Seq: seq, Payload: raw}); err != nil {
		fmt.Fprintf(w.diag, "arbor: envelope: %v\n", err)
	}
}

// fail writes a command error envelope (no seq: it carries no state).
func (w *wire) fail(code, msg string) {
	w.write(typeError, 0, errorPayload{Message: msg, Code: code})
}

// get returns a copy of the cached state.
func (w *wire) get() state {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.st
}

// mutate applies fn to the cached state (nil = no change) and takes a seq
// for it.
func (w *wire) mutate(fn func(*state)) uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.mutateLocked(fn)
}

func (w *wire) mutateLocked(fn func(*state)) uint64 {
	if fn != nil {
		fn(&w.st)
		w.st.updatedAt = time.Now().UTC()
	}
	w.seq++
	return w.seq
}

// push changes the state with fn (nil = no change) and, when the client
// subscribed to typ, writes the event with the new seq.
func (w *wire) push(typ string, payload any, fn func(*state)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pushLocked(typ, payload, fn)
}

func (w *wire) pushLocked(typ string, payload any, fn func(*state)) {
	seq := w.mutateLocked(fn)
	if w.subs == nil || w.subs[typ] {
		w.write(typ, seq, payload)
	}
}

// subscribe replaces the subscriptions and answers subscribe_response.
func (w *wire) subscribe(subs map[string]bool, events []string) {
	w.mu.Lock()
	w.subs = subs
	w.mu.Unlock()
	w.write(typeSubscribeResponse, 0, subscribeResponse{Events: events})
}

// status writes a snapshot of the cached state with a fresh seq; p holds
// what the other parts report (workdir, pending requests), jobs the
// running_jobs count, recorded first when it changed unnoticed.
//
// waiting, when not "", is a navigation queued behind other work: the
// snapshot is then busy with phase "waiting_turn" and the command in
// phase_detail, whatever the work's own phase.
func (w *wire) status(p statusPayload, jobs int, waiting string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if jobs != w.st.runningJobs {
		w.mutateLocked(func(st *state) { st.runningJobs = jobs })
	}
	st := w.st
	p.SessionID, p.Busy, p.Phase, p.PhaseDetail = st.sessionID, st.busy, st.phase, st.phaseDetail
	if waiting != "" {
		p.Busy, p.Phase, p.PhaseDetail = true, "waiting_turn", waiting
	}
	p.LastError, p.LastOutcome, p.CurrentRole, p.UpdatedAt, p.RunningJobs = st.lastError, st.lastOutcome, st.role, st.updatedAt, st.runningJobs
	w.seq++
	w.write(typeStatusResponse, w.seq, p)
}

// streamed records that agentID streams text; the main agent's first
// delta of a step pushes activity streaming.
func (w *wire) streamed(agentID string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.partial[agentID] = true
	if agentID == mainAgent && w.st.phase != "streaming" {
		w.pushLocked(evActivity, activity{AgentID: mainAgent, Type: "streaming"}, phase("streaming", ""))
	}
}

// committed pushes an agent's assistant_message, which commits its
// streamed text.
func (w *wire) committed(agentID string, p assistantMessage) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.partial, agentID)
	w.pushLocked(evAssistantMessage, p, nil)
}

// rollback pushes assistant_rollback when agentID streamed text that no
// assistant_message committed (its turn was cancelled or failed).
func (w *wire) rollback(agentID, reason string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.partial[agentID] {
		delete(w.partial, agentID)
		w.pushLocked(evAssistantRollback, assistantRollback{AgentID: agentID, Reason: reason}, nil)
	}
}

func phase(p, detail string) func(*state) {
	return func(st *state) { st.phase, st.phaseDetail = p, detail }
}
