package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/store"
)

// CompactionPolicy says when the context is compacted: when its estimated
// size passes Threshold of the model's window, every message but the last
// KeepRecent (adjusted so that no tool result loses its call) is replaced,
// in the model's context only, by a summary the model writes.
type CompactionPolicy struct {
	Threshold  float64 // default 0.8
	KeepRecent int     // default 6
	Disabled   bool
}

func (p CompactionPolicy) withDefaults() CompactionPolicy {
	if p.Threshold <= 0 || p.Threshold > 1 {
		p.Threshold = 0.8
	}
	if p.KeepRecent <= 0 {
		p.KeepRecent = 6
	}
	return p
}

const compactionSystem = `You compact conversations between a user and an AI coding agent.
Write a summary that lets the agent continue the work without the original turns:
the user's goals and constraints, decisions taken, files read or changed (with paths),
commands run and their important results, open problems and next steps.
Be specific and complete; omit pleasantries. Answer with the summary only.`

// estimateTokens approximates the tokens of what the next call sends: four
// characters a token, or the last call's real input size if larger.
func (a *Agent) estimateTokens() int64 {
	n := len(a.System()) + len(a.summary)
	for _, e := range a.history {
		for _, p := range e.msg.Parts {
			n += len(p.Text)
			if p.ToolCall != nil {
				n += len(p.ToolCall.Name) + len(p.ToolCall.Input)
			}
			if p.ToolResult != nil {
				n += len(p.ToolResult.Content)
			}
		}
	}
	return int64(n / 4)
}

// Compact summarizes the older part of the context now, whatever its size:
// all but the policy's KeepRecent messages or, when that leaves nothing
// to compact, the whole conversation (a person who asks for a compaction
// gets one, as from Claude Code's /compact). It is a no-op on an empty
// conversation. Instructions, when not "", are the person's for the
// summary. It reports whether a compaction ran (it may have failed, or
// been refused: *CompactionRefused).
func (a *Agent) Compact(ctx context.Context, instructions string) (ran bool, err error) {
	return a.compact(ctx, a.estimateTokens(), a.currentModel(), Compaction{Trigger: "manual", Instructions: instructions})
}

func (a *Agent) maybeCompact(ctx context.Context, m modelState) {
	p := a.cfg.Compaction
	if p.Disabled {
		return
	}
	est := a.estimateTokens()
	window := float64(m.window)
	if float64(est) >= p.Threshold*window && a.compactionCut() > 0 {
		if a.autoRefused {
			return // refused earlier in this turn
		}
		_, err := a.compact(ctx, est, m, Compaction{Trigger: "auto"}) // a failed compaction is reported and the step goes on
		var refused *CompactionRefused
		a.autoRefused = errors.As(err, &refused)
		a.pressureWarned = false
		return
	}
	// Warn once, at three quarters of the threshold, before compaction
	// changes the context under the user's feet — also when the context
	// jumped past the threshold with nothing old enough to compact.
	if !a.pressureWarned && float64(est) >= 0.75*p.Threshold*window {
		a.pressureWarned = true
		a.publish(&ContextPressure{EstimatedTokens: est, Window: m.window})
	}
}

func (a *Agent) compact(ctx context.Context, est int64, m modelState, c Compaction) (bool, error) {
	a.settleSend() // the session exists before the summary's usage
	cut := a.compactionCut()
	if cut <= 0 && c.Trigger == "manual" {
		cut = len(a.history)
	}
	if cut <= 0 {
		return false, nil
	}
	c.Model = m.name
	// Started before the hooks are asked, as Claude Code's status says
	// "compacting" before its PreCompact hooks run (and may refuse it).
	a.publish(&CompactionStarted{EstimatedTokens: est, Window: m.window, Trigger: c.Trigger})
	if a.cfg.Hooks != nil {
		if why := a.cfg.Hooks.Compacting(ctx, c); why != "" {
			a.publish(&CompactionFinished{TokensBefore: est, TokensAfter: est, Trigger: c.Trigger, Err: why, Refused: true})
			return true, &CompactionRefused{Reason: why}
		}
	}
	summary, err := a.summarize(ctx, a.history[:cut], m, c.Instructions)
	if err == nil && a.cfg.Hooks != nil {
		if extra := a.cfg.Hooks.Compacted(ctx, c); extra != "" {
			summary += "\n\n" + a.redact(extra)
		}
	}
	if err == nil {
		err = a.cfg.Store.SaveCompaction(context.WithoutCancel(ctx), store.Compaction{
			SessionID: a.cfg.SessionID, UpToSeq: a.history[cut-1].seq, Summary: summary, CreatedAt: time.Now().UTC(),
		})
	}
	if err != nil {
		a.publish(&CompactionFinished{TokensBefore: est, TokensAfter: est, Trigger: c.Trigger, Err: err.Error()})
		return true, err
	}
	upTo := a.history[cut-1].seq
	a.histMu.Lock()
	a.history = append([]entry(nil), a.history[cut:]...)
	a.histMu.Unlock()
	a.summary = summary
	a.publish(&CompactionFinished{UpToSeq: upTo, TokensBefore: est, TokensAfter: a.estimateTokens(), Trigger: c.Trigger,
		Summary: summaryPreamble + summary})
	return true, nil
}

// CompactionRefused is the error of a compaction that TurnHooks.Compacting
// refused: it did not run, and the context is as it was.
type CompactionRefused struct{ Reason string }

func (e *CompactionRefused) Error() string { return e.Reason }

// compactionCut returns how many leading messages to compact: all but the
// last KeepRecent, moved earlier until the kept part starts with an
// assistant message or a user message that carries no tool results.
func (a *Agent) compactionCut() int {
	for cut := len(a.history) - a.cfg.Compaction.KeepRecent; cut > 0; cut-- {
		m := a.history[cut].msg
		if m.Role == llm.RoleAssistant || !hasToolResults(m) {
			return cut
		}
	}
	return 0
}

func hasToolResults(m llm.Message) bool {
	for _, p := range m.Parts {
		if p.Type == llm.PartToolResult {
			return true
		}
	}
	return false
}

// summarize asks model m for a summary of old (and of the previous
// summary, which old follows).
func (a *Agent) summarize(ctx context.Context, old []entry, m modelState, instructions string) (string, error) {
	var b strings.Builder
	if a.summary != "" {
		b.WriteString("Summary of even earlier turns:\n" + a.summary + "\n\n")
	}
	b.WriteString("Conversation to summarize:\n")
	for _, e := range old {
		renderMessage(&b, e.msg)
	}
	if instructions != "" {
		b.WriteString("\nThe user's instructions for this summary: " + instructions + "\n")
	}
	req := &llm.Request{
		Model:    m.name,
		System:   compactionSystem,
		Messages: []llm.Message{llm.UserText(b.String())},
	}
	if err := a.gate(ctx, int64((len(compactionSystem)+b.Len())/4), m); err != nil {
		return "", fmt.Errorf("compaction summary: %w", err)
	}
	resp, err := llm.Collect(m.provider.Stream(WithSession(ctx, a.cfg.SessionID), req))
	if err != nil {
		return "", fmt.Errorf("compaction summary: %w", err)
	}
	// The summary is a model call like any other: recorded on the
	// session and charged to the budgets.
	if err := a.account(ctx, resp.Usage, m); err != nil {
		return "", fmt.Errorf("compaction summary: %w", err)
	}
	text := strings.TrimSpace(resp.Message.Text())
	if text == "" {
		return "", fmt.Errorf("compaction summary: the model returned no text")
	}
	return text, nil
}

const renderCap = 2000

func renderMessage(b *strings.Builder, m llm.Message) {
	for _, p := range m.Parts {
		switch p.Type {
		case llm.PartText:
			fmt.Fprintf(b, "%s: %s\n", strings.ToUpper(string(m.Role)), clip(p.Text))
		case llm.PartToolCall:
			fmt.Fprintf(b, "ASSISTANT called %s(%s)\n", p.ToolCall.Name, clip(string(p.ToolCall.Input)))
		case llm.PartToolResult:
			fmt.Fprintf(b, "TOOL RESULT: %s\n", clip(p.ToolResult.Content))
		}
	}
}

func clip(s string) string {
	if len(s) <= renderCap {
		return s
	}
	return s[:renderCap] + fmt.Sprintf(" […%d more bytes]", len(s)-renderCap)
}
