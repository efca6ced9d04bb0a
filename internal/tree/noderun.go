package tree

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/tool"
)

// runAgent runs one turn of node id's agent: its first turn, a synthesis
// turn, or the continuation of a turn interrupted by a crash or a pause.
// The agent is built once per process and node, then reused.
func (r *run) runAgent(ctx context.Context, id int64) {
	r.mu.Lock()
	n := *r.nodes[id]
	ag := r.agents[id]
	fresh := r.fresh[id]
	delete(r.fresh, id)
	r.mu.Unlock()
	if n.Runner != "" {
		r.runExternal(ctx, id, n)
		return
	}
	if n.SessionID == "" { // activated by an older arbor
		n.SessionID = sessionID(r.id, id)
	}
	if r.e.o.Remote != nil {
		turn, release, here := ctx, func() {}, false
		if r.e.o.RunHere != nil {
			turn, release, here = r.e.o.RunHere(ctx, id, n.Attempts)
		}
		if !here {
			r.runRemote(ctx, id, n, fresh)
			return
		}
		defer release()
		ctx = turn
	}
	if ag == nil {
		var err error
		ag, err = r.e.o.Agents.NewAgent(ctx, r.agentSpec(id, n, fresh))
		if err != nil {
			r.endTurn(ctx, id, agent.Result{Outcome: agent.OutcomeFailed, Err: err})
			return
		}
		r.mu.Lock()
		if !r.nodes[id].State.Terminal() { // stopped meanwhile: it never runs again
			r.agents[id] = ag
		}
		v := view(*r.nodes[id])
		started := r.remote[id] // a turn of it ran elsewhere
		r.mu.Unlock()
		if !started {
			r.e.o.Bus.Publish(&AgentStarted{RunID: r.id, Node: v})
		}
	}
	r.endTurn(ctx, id, Turn(ctx, ag, r.turnInput(id, n)))
}

// agentSpec is the spec of node n's agent, whose tree tools defer the
// nodes they create to the step's flush.
func (r *run) agentSpec(id int64, n store.Node, fresh bool) AgentSpec {
	return AgentSpec{
		RunID: r.id, NodeID: id, SessionID: n.SessionID, Model: n.Model,
		Title: fmt.Sprintf("#%d %s", id, n.Goal), System: r.systemPrompt(),
		Tools: r.toolsFor(id, true), Gate: r.gateFor(id), Charge: r.chargeFor(id),
		Flush: r.flushFor(id), Fresh: fresh, QueueEnd: true,
	}
}

// turnInput is what node n's next turn goes on from.
func (r *run) turnInput(id int64, n store.Node) TurnInput {
	return TurnInput{
		Notice: n.Notice, HasDraft: n.HasDraft, ContextQuery: n.ContextQuery != "",
		Prompt:       func(ctx context.Context) (string, error) { return r.firstPrompt(ctx, id, n) },
		RecoverDraft: func(d string) { r.recoverDraft(id, d) },
	}
}

// TurnInput is what a node's turn goes on from, besides its agent's
// transcript.
type TurnInput struct {
	// Notice is the node's pending notice (a synthesis, its children's
	// notes), sent unless the transcript already ends with it.
	Notice string
	// HasDraft: the node's complete was recorded; the turn has ended.
	HasDraft bool
	// ContextQuery: the first prompt is distilled, on the node's session,
	// which must be stored first.
	ContextQuery bool
	// Prompt makes the node's first message (called on its first turn
	// only); RecoverDraft is told the result complete stored before a
	// crash left it off the node.
	Prompt       func(ctx context.Context) (string, error)
	RecoverDraft func(draft string)
}

// Turn runs one turn of a node's agent ag from where its transcript
// stands: its first turn, a notice, the continuation of a turn a crash or
// a pause interrupted, or nothing when the turn had ended. The engine
// runs it for the nodes of its own process; a cluster's node worker runs
// it for a turn handed to it (Remote).
func Turn(ctx context.Context, ag *agent.Agent, in TurnInput) agent.Result {
	switch {
	case len(ag.History()) == 0: // the first turn (perhaps again, after a crash)
		if in.ContextQuery {
			// The distillation records its usage on the session.
			if err := ag.EnsureStored(ctx); err != nil {
				return agent.Result{Outcome: agent.OutcomeFailed, Err: err}
			}
		}
		prompt, err := in.Prompt(ctx)
		if err != nil {
			return agent.Result{Outcome: agent.OutcomeFailed, Err: err}
		}
		return ag.Send(ctx, llm.UserText(prompt))
	case in.Notice != "" && !delivered(ag.History(), in.Notice):
		return ag.Send(ctx, llm.UserText(in.Notice))
	case in.HasDraft:
		return agent.Result{Outcome: agent.OutcomeCompleted, EndedByTool: true}
	case recoverDraft(ag.History()) != nil:
		// complete ran and its result was stored, but the process stopped
		// before the turn's end wrote the draft (tools.go, complete).
		in.RecoverDraft(*recoverDraft(ag.History()))
		return agent.Result{Outcome: agent.OutcomeCompleted, EndedByTool: true}
	case ag.NeedsContinue():
		return ag.Continue(ctx)
	default:
		return agent.Result{Outcome: agent.OutcomeCompleted, Text: lastText(ag.History())}
	}
}

// recoverDraft sets node id's draft to d while its turn is open.
func (r *run) recoverDraft(id int64, d string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if m := r.nodes[id]; m.State == StateActive || m.State == StateSynthesizing {
		c := *m
		c.Draft, c.HasDraft = d, true
		r.nodes[id] = &c
	}
}

// firstPrompt is node id's first message: its prompt with the context it
// starts from (results of its dependencies, a fork's history, a
// context_query's distillation), which is prepared now and stored on the
// node.
func (r *run) firstPrompt(ctx context.Context, id int64, n store.Node) (string, error) {
	if n.ContextQuery != "" || len(n.BlockedBy) > 0 || n.Spawn == "fork" {
		text, err := r.startContext(ctx, &n)
		if err != nil {
			return "", err
		}
		r.mu.Lock()
		if m := *r.nodes[id]; m.State == StateActive {
			m.Context = text
			if n.ContextQuery == "" {
				// Made again the same from the stored results after a
				// crash: it goes with the run's next commit.
				r.stageLocked([]change{{node: m, from: m.State}})
			} else {
				r.commitLocked([]change{{node: m, from: m.State}})
			}
		}
		r.unlock()
		n.Context = text
	}
	return r.initialPrompt(n), nil
}

// recoverDraft returns the result passed to complete when the transcript
// ends with that call's successful result (the turn it ended was not
// written to the node yet), else nil.
func recoverDraft(h []llm.Message) *string {
	if len(h) < 2 || h[len(h)-1].Role != llm.RoleUser || h[len(h)-2].Role != llm.RoleAssistant {
		return nil
	}
	ok := map[string]bool{}
	for _, p := range h[len(h)-1].Parts {
		if p.Type == llm.PartToolResult && p.ToolResult != nil && !p.ToolResult.IsError {
			ok[p.ToolResult.CallID] = true
		}
	}
	var draft *string
	for _, c := range h[len(h)-2].ToolCalls() {
		var a completeArgs
		if c.Name == "complete" && ok[c.ID] && json.Unmarshal(c.Input, &a) == nil {
			draft = &a.Result
		}
	}
	return draft
}

// delivered reports whether notice is already the conversation's last user
// text (it was sent before a crash).
func delivered(h []llm.Message, notice string) bool {
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].Role == llm.RoleUser && h[i].Text() != "" {
			return strings.Contains(h[i].Text(), notice)
		}
	}
	return false
}

func lastText(h []llm.Message) string {
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].Role == llm.RoleAssistant && h[i].Text() != "" {
			return h[i].Text()
		}
	}
	return ""
}

// sessionID is the id of node's agent session. Nothing parses it: the
// stored session records its owner (store.Session.RunID and NodeID).
func sessionID(run string, node int64) string { return fmt.Sprintf("%s.%d", run, node) }

// endTurn applies the outcome of a node's turn. A node whose state changed
// meanwhile (stopped, paused) keeps that state: late exits never overwrite.
func (r *run) endTurn(ctx context.Context, id int64, res agent.Result) {
	r.release(id) // a call that failed or was cancelled never settled
	r.mu.Lock()
	defer r.unlock()
	if res.Stored != nil {
		// The turn's last write, queued before the commit below: one
		// wait (unlock) for both, and nothing of this hold is announced
		// or started before both are durable.
		r.flight = append(r.flight, res.Stored)
	}
	// The turn's end and what it starts (dependents' activations, a
	// synthesis) are one commit.
	r.batching = true
	defer r.endBatchLocked()
	delete(r.running, id)
	n := r.nodes[id]
	if r.finished || (n.State != StateActive && n.State != StateSynthesizing) {
		r.scheduleLocked()
		return
	}
	cause := context.Cause(ctx)
	switch {
	case r.ctx.Err() != nil || errors.Is(cause, errInterrupted):
		return // the run is shutting down; the node resumes with it
	case errors.Is(cause, errTimeout):
		r.failLocked(id, fmt.Sprintf("timed out after %dms", r.meta.NodeTimeout))
	case res.Outcome == agent.OutcomeFailed && errors.Is(res.Err, ErrBudgetExhausted):
		r.finishBudgetLocked(res.Err)
		return
	case res.Outcome == agent.OutcomeFailed && errors.Is(res.Err, ErrNodeBudget):
		r.failLocked(id, firstLine(res.Err.Error()))
	case res.Outcome == agent.OutcomeFailed && llm.Retryable(res.Err) && n.Attempts+1 < r.e.o.MaxAttempts:
		r.setLocked(id, "retrying after: "+res.Err.Error(), func(m *store.Node) { m.Attempts++ })
	case res.Outcome == agent.OutcomeCancelled:
		r.failLocked(id, "cancelled: "+errText(cause))
	case res.Outcome != agent.OutcomeCompleted:
		msg := string(res.Outcome)
		if res.Err != nil {
			msg = res.Err.Error()
		}
		r.failLocked(id, msg)
	default:
		r.turnDoneLocked(id, res)
	}
	r.scheduleLocked()
}

func errText(err error) string {
	if err == nil {
		return "unknown cause"
	}
	return err.Error()
}

// turnDoneLocked decides what a finished turn means: wait for children,
// synthesize their results, or complete.
func (r *run) turnDoneLocked(id int64, res agent.Result) {
	n := r.nodes[id]
	result := res.Text
	if n.HasDraft {
		result = n.Draft
	}
	switch {
	case !r.childrenDoneLocked(id):
		r.setLocked(id, "", func(m *store.Node) {
			m.State, m.Draft, m.HasDraft, m.Notice = StateWaiting, result, true, ""
		})
	case len(r.children[id]) > n.Synthesized:
		r.startSynthesisLocked(id)
		r.launchLocked(id, r.runAgent)
	default:
		r.setLocked(id, "", func(m *store.Node) {
			m.State, m.Result, m.Notice = StateComplete, result, ""
		})
	}
}

// startSynthesisLocked moves a node whose children all ended into
// synthesis: the message with their results is stored as the node's
// notice in the same transition, so a crash cannot skip it.
func (r *run) startSynthesisLocked(id int64) {
	kids := r.children[id]
	var b strings.Builder
	fmt.Fprintf(&b, "All %d of your child tasks have ended. Their results:\n", len(kids))
	for _, c := range kids {
		k := r.nodes[c]
		fmt.Fprintf(&b, "\n#%d %s (%s) %s\n", k.ID, k.Kind, k.State, k.Goal)
		switch k.State {
		case StateComplete:
			b.WriteString(k.Result + "\n")
		default:
			b.WriteString("error: " + k.Error + "\n")
		}
	}
	if notes := r.notes[id]; len(notes) > 0 {
		b.WriteString("\nProgress notes they sent you on the way:\n")
		for _, n := range notes {
			b.WriteString("- " + n + "\n")
		}
		delete(r.notes, id)
	}
	b.WriteString("\nSynthesize these into your own result and call complete(result). " +
		"If something is missing you may spawn more children; you will be woken again when they end.")
	r.setLocked(id, "", func(m *store.Node) {
		m.State, m.Synthesized, m.HasDraft, m.Notice = StateSynthesizing, len(kids), false, b.String()
	})
}

// failLocked fails node id and cancels what still runs under it: that
// work was for the failed node, and nothing can use its results now.
func (r *run) failLocked(id int64, msg string) {
	r.setLocked(id, msg, func(m *store.Node) { m.State, m.Error = StateFailed, msg })
	for _, c := range r.children[id] {
		r.cascadeLocked(c, StateCancelled, fmt.Sprintf("parent #%d failed", id), errStopped,
			func(n *store.Node) bool { return !n.State.Terminal() },
			func(n *store.Node) { n.Error = fmt.Sprintf("parent #%d failed: %s", id, firstLine(msg)) })
	}
}

// askNode puts an ask node's question to a person through the broker.
func (r *run) askNode(ctx context.Context, id int64) {
	r.mu.Lock()
	n := *r.nodes[id]
	r.mu.Unlock()
	q := tool.Question{CallID: askCallID(id), AskNode: id, Question: n.Question, Options: n.Options, Default: n.Default}
	ans, err := r.e.o.Broker.For(r.id).Ask(ctx, q)

	r.mu.Lock()
	defer r.unlock()
	delete(r.running, id)
	if r.finished || r.nodes[id].State != StateActive {
		r.scheduleLocked()
		return
	}
	if err != nil {
		return // the run is shutting down or the node was stopped
	}
	r.answerLocked(id, ans)
	r.scheduleLocked()
}

// askCallID is the call id of ask node id's question. Nothing parses it:
// consumers read the question's AskNode.
func askCallID(id int64) string { return fmt.Sprintf("ask:#%d", id) }

func (r *run) answerLocked(id int64, ans tool.Answer) {
	n := r.nodes[id]
	text := ans.Text
	if ans.Declined || text == "" {
		text = n.Default
		if text == "" {
			text = "(the person declined to answer)"
		}
	}
	r.setLocked(id, "answered", func(m *store.Node) { m.State, m.Result = StateComplete, text })
}
