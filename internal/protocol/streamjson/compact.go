// Compaction in stream-json: the "/compact [instructions]" prompt, and the
// lines a compaction (manual or automatic) writes, as the Claude Code CLI
// runs and writes them (recorded from it: TestClaudeCodeGoldens/compact);
// and the slash commands offered (compact and the project's).

package streamjson

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/hook"
)

// compaction follows the session's compaction in progress, for translate
// (the bus's goroutine) and compactTurn (the runner's).
type compaction struct {
	mu     sync.Mutex
	active bool                      // between CompactionStarted and CompactionFinished
	held   []*agent.HookMessage      // what hooks said meanwhile, written after the outcome
	last   *agent.CompactionFinished // the latest outcome, for compactTurn
}

// statusLine is a "system" "status" line: status "compacting" as a
// compaction starts, null with its compact_result when it ends.
type statusLine struct {
	Type          string  `json:"type"`    // "system"
	Subtype       string  `json:"subtype"` // "status"
	Status        *string `json:"status"`
	CompactResult string  `json:"compact_result,omitempty"` // "success", "failed"
	CompactError  string  `json:"compact_error,omitempty"`
	SessionID     string  `json:"session_id"`
	UUID          string  `json:"uuid"`
}

// compactBoundary is a "system" "compact_boundary" line: the context the
// model reads starts over from here.
type compactBoundary struct {
	Type      string          `json:"type"`    // "system"
	Subtype   string          `json:"subtype"` // "compact_boundary"
	SessionID string          `json:"session_id"`
	UUID      string          `json:"uuid"`
	Metadata  compactMetadata `json:"compact_metadata"`
}

type compactMetadata struct {
	Trigger    string `json:"trigger"` // "manual", "auto"
	PreTokens  int64  `json:"pre_tokens"`
	PostTokens int64  `json:"post_tokens"`
}

// textLine is a "user" line whose content is text, as Claude Code writes
// the summary that follows a compaction (isSynthetic) and a local
// command's output (isReplay).
type textLine struct {
	Type            string  `json:"type"` // "user"
	Message         textMsg `json:"message"`
	SessionID       string  `json:"session_id"`
	ParentToolUseID *string `json:"parent_tool_use_id"`
	UUID            string  `json:"uuid"`
	IsReplay        bool    `json:"isReplay"`
	IsSynthetic     bool    `json:"isSynthetic,omitempty"`
}

type textMsg struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// compactionEvent writes the lines of the session's compaction events and
// holds what hooks say during a compaction (SessionStart's, source
// "compact") until its outcome is written, in Claude Code's order; it
// reports whether it took e. Qwen's CLI writes no such lines.
func (s *Server) compactionEvent(sid string, e agent.Event) bool {
	if s.opts.Qwen {
		return false
	}
	c := &s.compaction
	switch e := e.(type) {
	case *agent.CompactionStarted:
		c.mu.Lock()
		c.active = true
		c.mu.Unlock()
		compacting := "compacting"
		s.write(statusLine{Type: "system", Subtype: "status", Status: &compacting, SessionID: sid, UUID: newUUID()})
		return true
	case *agent.HookMessage:
		if e.Event == string(hook.PreCompact) {
			// Claude Code shows no PreCompact hook's message: /compact's
			// result line tells how each of them ran (compactTurn).
			return true
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.active {
			c.held = append(c.held, e)
		}
		return c.active
	case *agent.CompactionFinished:
		c.mu.Lock()
		held := c.held
		c.active, c.held, c.last = false, nil, e
		c.mu.Unlock()
		st := statusLine{Type: "system", Subtype: "status", CompactResult: "success", SessionID: sid, UUID: newUUID()}
		switch {
		case e.Refused: // as Claude Code says a PreCompact hook's block
			st.CompactResult, st.CompactError = "failed", "skipped: "+e.Err
		case e.Err != "":
			st.CompactResult, st.CompactError = "failed", e.Err
		}
		s.write(st)
		if e.Trigger == "manual" { // compactTurn's: its turn's init comes now
			s.write(s.initMessage(sid))
		}
		for _, m := range held {
			s.write(informationalMessage{Type: "system", Subtype: "informational", Content: m.Text, Level: m.Level, UUID: newUUID(), SessionID: sid})
		}
		if e.Err == "" {
			s.write(compactBoundary{Type: "system", Subtype: "compact_boundary", SessionID: sid, UUID: newUUID(),
				Metadata: compactMetadata{Trigger: e.Trigger, PreTokens: e.TokensBefore, PostTokens: e.TokensAfter}})
		}
		return true
	}
	return false
}

// compactRun is /compact's local_command_run: Claude Code writes no
// arguments there, whatever the instructions.
var compactRun = localCommandRun{Command: compactSlash.Name}

// preCompactRan collects how a /compact's PreCompact command hooks ran,
// for the command's output, as Claude Code lists them after "Compacted ".
type preCompactRan struct {
	mu    sync.Mutex
	lines []string
}

// watch is next (the SessionStart hooks' lines) with the PreCompact
// hooks collected.
func (p *preCompactRan) watch(next hook.Watch) hook.Watch {
	return func(e hook.Event, target string) func(hook.Ran) {
		if e != hook.PreCompact {
			return next(e, target)
		}
		return func(r hook.Ran) {
			line := fmt.Sprintf("PreCompact [%s] completed successfully", r.Command)
			out := strings.TrimSpace(r.Stdout)
			if r.Outcome != "success" {
				line, out = fmt.Sprintf("PreCompact [%s] failed", r.Command), strings.TrimSpace(r.Stderr)
			}
			if out != "" {
				line += ": " + out
			}
			p.mu.Lock()
			p.lines = append(p.lines, line)
			p.mu.Unlock()
		}
	}
}

// text is the collected lines, one a hook.
func (p *preCompactRan) text() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.lines, "\n")
}

// compactCommand reports whether text is Claude Code's "/compact" and
// its instructions. Qwen's CLI has no such command (it sends the text to
// the model, as arbor does under its argv).
func (s *Server) compactCommand(text string) (instructions string, ok bool) {
	name, args, ok := app.SplitSlash(text)
	if !ok || name != "compact" || s.opts.Qwen {
		return "", false
	}
	return args, true
}

// compactTurn runs "/compact [instructions]" as the turn: the session's
// conversation is compacted now (all of it when the policy's recent
// messages would leave nothing), and the turn ends with a result of no
// model turns. As Claude Code's: after the compaction's status and
// boundary lines, a user line with the summary the model reads from now
// on and one with the command's output; with nothing to compact, an
// assistant line that says so. The project's SessionStart hooks run with
// source "compact" and write their hook_started and hook_response lines.
// The turn's init line follows the compaction's status, as Claude Code
// writes it for a local command.
func (s *Server) compactTurn(ctx context.Context, sess *app.Session, instructions string, start time.Time) {
	before, _, _ := sess.Agent.Usage()
	s.apiTime.Store(0)
	s.mu.Lock()
	if s.modelUsage == nil {
		s.modelUsage = map[string]modelUsage{}
	}
	s.mu.Unlock()
	s.compaction.mu.Lock()
	s.compaction.last = nil
	s.compaction.mu.Unlock()

	ran := &preCompactRan{}
	_, err := sess.Agent.Compact(hook.WithWatch(ctx, ran.watch(s.hookLines(sess.ID))), instructions)
	s.events.Flush()
	s.compaction.mu.Lock()
	done := s.compaction.last
	s.compaction.mu.Unlock()

	sid := sess.ID
	after, cost, _ := sess.Agent.Usage()
	s.mu.Lock()
	mu := maps.Clone(s.modelUsage)
	s.mu.Unlock()
	r := resultMessage{Type: "result", Subtype: "success", SessionID: sid, DurationMS: time.Since(start).Milliseconds(),
		DurationAPIMS: time.Duration(s.apiTime.Load()).Milliseconds(), Usage: usageDelta(before, after), TotalCostUSD: cost,
		ModelUsage: mu, PermissionDenials: []permissionDenial{}, UUID: newUUID(), LocalCommand: "compact",
		StopReason: json.RawMessage("null")}
	if done == nil { // no compaction started: the turn's init comes first
		s.write(s.initMessage(sid))
	}
	interrupted := errors.Is(context.Cause(ctx), errInterrupted)
	var refused *agent.CompactionRefused
	switch {
	case errors.As(err, &refused):
		// As Claude Code ends a /compact a PreCompact hook blocked: the
		// reason as the command's output, and a turn that succeeded.
		s.writeLocalCommandText(sid, refused.Reason, compactRun, true)
		r.Result = refused.Reason
	case interrupted:
		// As an interrupted turn ends (turn.go); the conversation is
		// kept whole.
		s.writeInterrupted(sid, interruptedNote)
		r.Subtype, r.IsError, r.Errors = "error_during_execution", true, []string{interruptedNote}
	case err != nil:
		r.Subtype, r.IsError, r.Errors = "error_during_execution", true, []string{"compaction failed: " + err.Error()}
	case done == nil:
		s.writeLocalCommandText(sid, "Error: No messages to compact", compactRun, true)
	default:
		s.write(textLine{Type: "user", SessionID: sid, UUID: newUUID(), IsSynthetic: true, Message: textMsg{Role: "user", Content: done.Summary}})
		s.write(textLine{Type: "user", SessionID: sid, UUID: newUUID(), IsReplay: true,
			Message: textMsg{Role: "user", Content: "<local-command-stdout>Compacted " + ran.text() + "</local-command-stdout>"}})
	}
	s.endTurn(interrupted)
	s.write(r)
}

// slashCommand is one of initialize's commands (the Claude Agent SDK's
// SlashCommand).
type slashCommand struct {
	Name         string `json:"name"`
	Description  string `json:"description"`
	ArgumentHint string `json:"argumentHint"`
}

// compactSlash is the built-in /compact, as Claude Code lists it; qwen's
// CLI has no such command.
var compactSlash = slashCommand{Name: "compact", Description: "Free up context by summarizing the conversation so far",
	ArgumentHint: "<optional custom summarization instructions>"}

// slashCommands are the project's custom commands and skills; under
// Claude Code's argv the built-in /compact and /rename come first, as
// Claude Code lists them, and shadow a project command of their names.
// (A spec client may send them too, but its listings hold the project's
// only.)
func (s *Server) slashCommands() []slashCommand {
	out := []slashCommand{}
	if s.opts.ClaudeCode {
		out = append(out, compactSlash, renameSlash)
	}
	for _, c := range s.app.SkillsAndCommands() {
		if (c.Name == compactSlash.Name || c.Name == renameSlash.Name || c.Name == "name") && !s.opts.Qwen {
			continue // a built-in command's
		}
		out = append(out, slashCommand{Name: c.Name, Description: c.Description, ArgumentHint: c.ArgHint})
	}
	return out
}
