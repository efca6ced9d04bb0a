package acp

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/llm"
)

// prompt queues a prompt turn on its session's runner; the answer (its
// stop reason) is sent when the turn ends, after its updates.
func (s *Server) prompt(m message) {
	var p promptRequest
	ss := s.sessionParams(m, &p, &p.SessionID)
	if ss == nil {
		return
	}
	text := promptText(p.Prompt)
	if strings.TrimSpace(text) == "" {
		s.send(s.conn.fail(m.ID, codeInvalidParams, "session/prompt: the prompt holds no text"))
		return
	}
	typed, gen := promptTyped(p.Prompt), ss.generation()
	err := ss.runner.Submit(app.Job{Kind: "turn", Run: func(ctx context.Context) {
		s.promptRuns()
		defer s.promptEnds() // after its answer is queued
		if ss.generation() != gen {
			s.send(s.conn.respond(m.ID, promptResponse{StopReason: stopCancelled}))
			return
		}
		// A slash command: /compact runs now, a project command or
		// skill becomes its prompt (commands.go).
		text, done := s.slash(ctx, ss, text)
		if done {
			s.events.Flush() // the compaction's updates go before its answer
			stop := stopEndTurn
			if ctx.Err() != nil {
				stop = stopCancelled
			}
			s.send(s.conn.respond(m.ID, promptResponse{StopReason: stop}))
			return
		}
		// The project's SessionStart (at the session's first prompt) and
		// UserPromptSubmit hooks; a block refuses the prompt.
		hooked, err := ss.work.PromptHooks(ctx, ss.sess.ID, ss.takeSource(), text)
		if err != nil {
			s.update(ss.id, chunk(updateAgentChunk, err.Error()))
			s.send(s.conn.respond(m.ID, promptResponse{StopReason: stopRefusal}))
			return
		}
		// Named as typed, not as a command expands it nor with the files
		// attached; the editor's list of sessions learns the title at once.
		if title := ss.work.NameConversation(ctx, ss.sess, typed); title != "" {
			s.update(ss.id, sessionUpdate{SessionUpdate: updateSessionInfo, Title: title})
		}
		res := ss.sess.Agent.Send(ctx, llm.UserText(ss.takeEnded()+hooked))
		s.events.Flush() // the turn's updates go before its answer
		stop, rerr := stopReason(res)
		if rerr != nil {
			s.send(s.conn.fail(m.ID, rerr.Code, rerr.Message))
			return
		}
		s.send(s.conn.respond(m.ID, promptResponse{StopReason: stop}))
	}})
	if err != nil {
		s.send(s.conn.fail(m.ID, codeInternalError, fmt.Sprintf("session/prompt: %v", err)))
	}
}

// promptRuns counts a prompt turn that starts (a trim armed by the end
// of another does not run during it).
func (s *Server) promptRuns() {
	s.quiet.Busy()
	s.mu.Lock()
	s.prompts++
	s.mu.Unlock()
}

// promptEnds counts a prompt turn that ended; when it was the last one
// running, the connection waits for its client and may give memory back.
func (s *Server) promptEnds() {
	s.mu.Lock()
	s.prompts--
	last := s.prompts == 0
	s.mu.Unlock()
	if last {
		s.quiet.Idle()
	}
}

// takeEnded returns the results of the children that ended since the
// last prompt, as lines to put before the prompt's text.
func (ss *session) takeEnded() string {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if len(ss.ended) == 0 {
		return ""
	}
	out := strings.Join(ss.ended, "\n") + "\n\n"
	ss.ended = nil
	return out
}

// stopReason maps a turn's outcome to ACP's stop reason; a failed turn is
// an error answer naming what failed.
func stopReason(r agent.Result) (string, *rpcError) {
	switch r.Outcome {
	case agent.OutcomeCompleted:
		return stopEndTurn, nil
	case agent.OutcomeCancelled:
		return stopCancelled, nil
	case agent.OutcomeMaxTurns, agent.OutcomeLoop:
		return stopMaxTurns, nil
	}
	msg := "the turn failed"
	if r.Err != nil {
		msg = r.Err.Error()
	}
	code := codeInternalError
	if errors.Is(r.Err, context.Canceled) {
		return stopCancelled, nil
	}
	return "", &rpcError{Code: code, Message: msg}
}

// promptTyped is what the person typed of a prompt: its text, a link
// (an editor's @-mention) by its name, no attached file's content.
func promptTyped(blocks []contentBlock) string {
	var b strings.Builder
	for _, bl := range blocks {
		switch bl.Type {
		case "text":
			b.WriteString(bl.Text)
		case "resource_link":
			b.WriteString(bl.Name)
		}
	}
	return b.String()
}

// promptText flattens a prompt's blocks into the text the model sees:
// text as is, embedded resources with their text, links by their URI.
func promptText(blocks []contentBlock) string {
	var b strings.Builder
	for _, bl := range blocks {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		switch bl.Type {
		case "text":
			b.WriteString(bl.Text)
		case "resource":
			if bl.Resource != nil {
				fmt.Fprintf(&b, "<file uri=%q>\n%s\n</file>", bl.Resource.URI, bl.Resource.Text)
			}
		case "resource_link":
			fmt.Fprintf(&b, "[%s](%s)", bl.Name, bl.URI)
		default:
			fmt.Fprintf(&b, "[%s block omitted]", bl.Type)
		}
	}
	return b.String()
}
