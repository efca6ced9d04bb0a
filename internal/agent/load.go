package agent

import (
	"context"
	"errors"
	"fmt"

	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/store"
)

// Load rebuilds the context from the store: the latest compaction summary
// and the messages after it. If the session stopped between storing an
// assistant message and storing its tool results (a crash or a kill), Load
// completes the transcript: a call whose result was stored gets that
// result, a call whose intent was recorded but never finished is reported
// as interrupted (and its intent finished so), and a call that never
// started is reported as not run. Nothing is run again.
func (a *Agent) Load(ctx context.Context) error {
	sid := a.cfg.SessionID
	var after int64
	a.summary = ""
	c, err := a.cfg.Store.LatestCompaction(ctx, sid)
	switch {
	case err == nil:
		after, a.summary = c.UpToSeq, c.Summary
	case !errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("load session %s: %w", sid, err)
	}
	recs, err := a.cfg.Store.Messages(ctx, sid, after)
	if err != nil {
		return fmt.Errorf("load session %s: %w", sid, err)
	}
	intents, err := a.cfg.Store.Intents(ctx, sid)
	if err != nil {
		return fmt.Errorf("load session %s: %w", sid, err)
	}
	a.history = a.history[:0]
	for _, in := range intents {
		a.callIDs[in.CallID] = true
	}
	for _, r := range recs {
		a.history = append(a.history, entry{seq: r.Seq, msg: r.Message})
		for _, c := range r.Message.ToolCalls() {
			a.callIDs[c.ID] = true
		}
	}
	return a.repair(ctx, intents)
}

// SetTotals seeds the usage totals, as loaded from the stored session.
func (a *Agent) SetTotals(u llm.Usage, cost float64, known bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.usage, a.cost, a.costKnown = u, cost, known
}

// History returns the messages of the current context (after compaction).
func (a *Agent) History() []llm.Message {
	out := make([]llm.Message, len(a.history))
	for i, e := range a.history {
		out[i] = e.msg
	}
	return out
}

func (a *Agent) repair(ctx context.Context, intents []store.Intent) error {
	if len(a.history) == 0 {
		return nil
	}
	last := a.history[len(a.history)-1].msg
	calls := last.ToolCalls()
	if last.Role != llm.RoleAssistant || len(calls) == 0 {
		return nil
	}
	byCall := make(map[string]store.Intent, len(intents))
	for _, in := range intents {
		byCall[in.CallID] = in
	}
	parts := make([]llm.Part, 0, len(calls))
	for _, c := range calls {
		res := llm.ToolResult{CallID: c.ID, Content: notStartedResult, IsError: true}
		if in, ok := byCall[c.ID]; ok {
			switch in.Status {
			case store.IntentFinished:
				res = llm.ToolResult{CallID: c.ID, Content: in.Result, IsError: in.IsError}
			default:
				res.Content = interruptedResult
				if err := a.cfg.Store.FinishIntent(ctx, a.cfg.SessionID, c.ID, interruptedResult, true); err != nil {
					return fmt.Errorf("repair session %s: %w", a.cfg.SessionID, err)
				}
			}
		}
		parts = append(parts, llm.Part{Type: llm.PartToolResult, ToolResult: &res})
	}
	return a.append(ctx, llm.Message{Role: llm.RoleUser, Parts: parts})
}
