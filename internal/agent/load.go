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
// assistant message and storing its tool results (a crash or a kill), the
// calls are left to settle on the next Send or Continue: a call whose result
// was stored gets that result, a call whose intent was recorded but never
// finished is reported as interrupted (never run twice) after the process
// group its intent recorded, if still alive, is killed, and a call that
// never started runs then.
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
	a.histMu.Lock()
	defer a.histMu.Unlock()
	a.history = a.history[:0]
	a.held = false
	for _, in := range intents {
		a.callIDs[in.CallID] = true
	}
	for _, r := range recs {
		a.history = append(a.history, entry{seq: r.Seq, msg: r.Message})
		for _, c := range r.Message.ToolCalls() {
			a.callIDs[c.ID] = true
		}
	}
	a.unsettled = unsettled(a.history, intents)
	return nil
}

// SetTotals seeds the usage totals, as loaded from the stored session.
func (a *Agent) SetTotals(u llm.Usage, cost float64, known bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.usage, a.cost, a.costKnown = u, cost, known
}

// History returns the messages of the current context (after compaction).
// It may be called from any goroutine, while a turn runs too.
func (a *Agent) History() []llm.Message {
	a.histMu.RLock()
	defer a.histMu.RUnlock()
	out := make([]llm.Message, len(a.history))
	for i, e := range a.history {
		out[i] = e.msg
	}
	return out
}

// unsettled returns the intents (by call id) of the last message's tool
// calls when that message is an assistant message without results yet.
func unsettled(h []entry, intents []store.Intent) map[string]store.Intent {
	if len(h) == 0 {
		return nil
	}
	last := h[len(h)-1].msg
	if last.Role != llm.RoleAssistant || len(last.ToolCalls()) == 0 {
		return nil
	}
	out := map[string]store.Intent{}
	for _, in := range intents {
		out[in.CallID] = in
	}
	return out
}

// settle gives the tool calls left unanswered by a crash their results
// (see Load) and stores them. It reports whether a settled call ended the
// turn.
func (a *Agent) settle(ctx context.Context) (endTurn bool, err error) {
	if a.unsettled == nil {
		return false, nil
	}
	known := a.unsettled
	a.unsettled = nil
	calls := a.history[len(a.history)-1].msg.ToolCalls()
	_, endTurn, err = a.runTools(ctx, calls, known)
	return endTurn, err
}
