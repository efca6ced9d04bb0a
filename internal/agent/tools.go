package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/tool"
)

// Result texts the model sees for calls that did not run to the end.
const (
	cancelledResult   = "cancelled: the user interrupted this tool call"
	notRunLoopResult  = "not run: the run was stopped because the same tool call repeated"
	notRunHookResult  = "not run: a hook stopped the turn before this call"
	interruptedResult = "interrupted: the process stopped while this tool was running; it may or may not have taken effect — check before repeating it"
)

// runTools runs calls in order and stores their results as one user
// message. It reports stop when loop detection ends the run and endTurn
// when a tool asked to end the turn. Only storage failures are returned as
// errors.
//
// known, when set, holds intents stored before a crash: a finished one
// gives its stored result, a started one is reported interrupted; neither
// runs again.
func (a *Agent) runTools(ctx context.Context, calls []llm.ToolCall, known map[string]store.Intent) (stop, endTurn bool, err error) {
	persist := context.WithoutCancel(ctx)
	results := make([]llm.Part, 0, len(calls))
	for _, c := range calls {
		var res llm.ToolResult
		in, wasKnown := known[c.ID]
		switch {
		case wasKnown && in.Status == store.IntentFinished:
			res = llm.ToolResult{CallID: c.ID, Content: in.Result, IsError: in.IsError}
		case wasKnown && a.idempotent(c.Name):
			var end bool
			if res, end, err = a.execute(ctx, c, true); err != nil {
				return false, false, err
			}
			endTurn = endTurn || end
		case wasKnown:
			res = llm.ToolResult{CallID: c.ID, Content: interrupted(in), IsError: true}
			if err := a.cfg.Store.FinishIntent(context.WithoutCancel(ctx), a.cfg.SessionID, c.ID, res.Content, true); err != nil {
				return false, false, fmt.Errorf("record interrupted %s: %w", c.Name, err)
			}
		case stop:
			res = llm.ToolResult{CallID: c.ID, Content: notRunLoopResult, IsError: true}
		case a.stopped != nil:
			res = llm.ToolResult{CallID: c.ID, Content: notRunHookResult, IsError: true}
		case ctx.Err() != nil:
			res = llm.ToolResult{CallID: c.ID, Content: cancelledResult, IsError: true}
		default:
			count := a.loop.observe(c)
			if a.loop.limit > 0 && count >= 2*a.loop.limit {
				stop = true
				res = llm.ToolResult{CallID: c.ID, Content: notRunLoopResult, IsError: true}
				break
			}
			var end bool
			res, end, err = a.runOne(ctx, c)
			if err != nil {
				return false, false, err
			}
			endTurn = endTurn || end
			if a.loop.limit > 0 && count >= a.loop.limit {
				a.publish(&LoopWarning{Tool: c.Name, Count: count})
				res.Content += fmt.Sprintf("\n\n[warning: you have made this exact %s call %d times in a row; the result will not change. Try a different approach; repeating it again will stop the run.]", c.Name, count)
			}
		}
		results = append(results, llm.Part{Type: llm.PartToolResult, ToolResult: &res})
	}
	// A tool that ends the turn ends it here: the session is idle from
	// this write on, which needs no write of its own.
	var status store.SessionStatus
	if endTurn && !stop && ctx.Err() == nil {
		status = store.SessionIdle
	}
	if a.cfg.Flush != nil {
		if err := a.cfg.Flush(persist); err != nil {
			return false, false, fmt.Errorf("store the effects of the tools: %w", err)
		}
	}
	step := store.Step{Messages: []llm.Message{{Role: llm.RoleUser, Parts: results}}, Status: status}
	if status == store.SessionIdle && a.cfg.QueueEnd && a.queueSave(persist, step) {
		return stop, endTurn, nil // the caller waits (Result.Stored)
	}
	if err := a.save(persist, step); err != nil {
		return false, false, err
	}
	return stop, endTurn, nil
}

// runOne records the intent, runs the tool and records its result.
func (a *Agent) runOne(ctx context.Context, c llm.ToolCall) (llm.ToolResult, bool, error) {
	if a.idempotent(c.Name) {
		// Running it again after a crash is correct (a call that left no
		// intent is run when the session settles), so it needs none.
		return a.execute(ctx, c, false)
	}
	persist := context.WithoutCancel(ctx)
	err := a.cfg.Store.StartIntent(persist, store.Intent{
		SessionID: a.cfg.SessionID, CallID: c.ID, Tool: c.Name, Input: c.Input,
		Status: store.IntentStarted, StartedAt: time.Now().UTC(),
	})
	if err != nil {
		return llm.ToolResult{}, false, fmt.Errorf("record intent for %s: %w", c.Name, err)
	}
	// The process group of a tool process goes into the intent, so that a
	// resume after a crash can kill what the call left running.
	var (
		mu     sync.Mutex
		pgErrs error
	)
	ctx = tool.WithGroupReporter(ctx, func(pgid int) {
		err := a.cfg.Store.SetIntentPGID(persist, a.cfg.SessionID, c.ID, pgid)
		mu.Lock()
		pgErrs = errors.Join(pgErrs, err)
		mu.Unlock()
	})
	res, end, err := a.execute(ctx, c, true)
	if err != nil {
		return res, end, err
	}
	mu.Lock()
	defer mu.Unlock()
	if pgErrs != nil {
		return llm.ToolResult{}, false, fmt.Errorf("record process group of %s: %w", c.Name, pgErrs)
	}
	return res, end, nil
}

// interrupted returns the result of a call whose intent was started by a
// process that stopped before finishing it. A process group the call
// recorded is killed first if it is still there (tool.KillLeftoverGroup),
// and the model is told so.
func interrupted(in store.Intent) string {
	if in.PGID == 0 {
		return interruptedResult
	}
	killed, err := tool.KillLeftoverGroup(in.PGID, in.StartedAt)
	switch {
	case err != nil:
		return fmt.Sprintf("%s\n[its processes (group %d) may still be running: %v]", interruptedResult, in.PGID, err)
	case killed:
		return interruptedResult + "\n[processes it left running were killed]"
	}
	return interruptedResult
}

// idempotent reports whether the named tool may run again after an
// interruption.
// allIdempotent reports whether every one of calls is of an idempotent
// tool.
func (a *Agent) allIdempotent(calls []llm.ToolCall) bool {
	for _, c := range calls {
		if !a.idempotent(c.Name) {
			return false
		}
	}
	return true
}

func (a *Agent) idempotent(name string) bool {
	t, ok := a.cfg.Tools.Lookup(name)
	return ok && t.Info().Idempotent
}

// execute runs c and, when it has an intent, stores its result there.
func (a *Agent) execute(ctx context.Context, c llm.ToolCall, intent bool) (llm.ToolResult, bool, error) {
	a.publish(&ToolCallStarted{CallID: c.ID, Tool: c.Name, Input: c.Input})
	start := time.Now()
	var out tool.Result
	if c.InvalidInput != "" {
		out = tool.Errorf("the arguments of this %s call are not valid JSON, so it was not run: %.300q; call it again with a JSON object", c.Name, c.InvalidInput)
	} else {
		out = a.cfg.Tools.Run(ctx, c)
	}
	res := llm.ToolResult{CallID: c.ID, Content: a.redact(out.Content), IsError: out.IsError, Images: out.Images}
	if out.Stop != nil && a.stopped == nil {
		a.stopped = out.Stop
	}
	if ctx.Err() != nil {
		res = llm.ToolResult{CallID: c.ID, Content: cancelledResult + "\n" + res.Content, IsError: true}
	}
	if intent {
		if err := a.cfg.Store.FinishIntent(context.WithoutCancel(ctx), a.cfg.SessionID, c.ID, res.Content, res.IsError); err != nil {
			return llm.ToolResult{}, false, fmt.Errorf("record result of %s: %w", c.Name, err)
		}
	}
	a.notices(out.Notices, false)
	a.publish(&ToolCallFinished{CallID: c.ID, Tool: c.Name, Result: res.Content, IsError: res.IsError, Duration: time.Since(start), Blocked: out.Blocked})
	a.notices(out.Notices, true)
	return res, out.EndTurn && !res.IsError, nil
}

// notices publishes a call's notices said after it ran (after) or
// before.
func (a *Agent) notices(ns []tool.Notice, after bool) {
	for _, n := range ns {
		if n.After == after {
			a.publish(&HookMessage{Text: a.redact(n.Text), Level: LevelNotice})
		}
	}
}

// redact replaces every configured secret in s, and the pieces of one a
// cut of long output left (tool.Redact).
func (a *Agent) redact(s string) string { return tool.Redact(s, a.cfg.Secrets) }
