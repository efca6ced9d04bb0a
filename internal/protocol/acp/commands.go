// Slash commands: the commands a session offers the editor (the
// project's commands and skills, and compact) and a prompt that names
// one.

package acp

import (
	"context"
	"errors"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/app"
)

// compactCommand is arbor's own command, as Claude Code's /compact.
var compactCommand = availableCommand{Name: "compact", Description: "Summarize the conversation so far, to free the model's context",
	Input: &commandInput{Hint: "instructions for the summary (optional)"}}

// commands are the session's slash commands: compact, then the project's
// commands (.claude/commands, with their argument hint) and skills. A
// project command named compact is not offered: the built-in one wins,
// as in Claude Code.
func (ss *session) commands() []availableCommand {
	out := []availableCommand{compactCommand}
	for _, c := range ss.work.SkillsAndCommands() {
		if c.Name == compactCommand.Name {
			continue
		}
		ac := availableCommand{Name: c.Name, Description: c.Description}
		if ac.Description == "" {
			ac.Description = "the project's " + c.Kind
		}
		if c.ArgHint != "" {
			ac.Input = &commandInput{Hint: c.ArgHint}
		}
		out = append(out, ac)
	}
	return out
}

// announceCommands sends the session's commands; it follows the answer
// to session/new or session/load, which gives the editor the session.
func (s *Server) announceCommands(ss *session) {
	s.update(ss.id, sessionUpdate{SessionUpdate: updateCommands, Commands: ss.commands()})
}

// slash handles a prompt that names a command. /compact [instructions]
// compacts the session's conversation now and says how it went: done is
// set, the prompt is over. A project command or skill becomes the prompt
// it stands for. Any other text is the prompt as it is.
func (s *Server) slash(ctx context.Context, ss *session, text string) (prompt string, done bool) {
	name, args, ok := app.SplitSlash(text)
	if !ok {
		return text, false
	}
	if name == compactCommand.Name {
		ran, err := ss.sess.Agent.Compact(ctx, args)
		msg := "Compacted: from now on the model reads a summary of the conversation so far."
		var refused *agent.CompactionRefused
		switch {
		case ctx.Err() != nil:
			return "", true // cancelled: the answer says so
		case errors.As(err, &refused):
			msg = refused.Reason + ". The conversation is kept whole."
		case err != nil:
			msg = "The compaction failed, so the conversation is kept whole: " + err.Error()
		case !ran:
			msg = "Nothing to compact: no messages since the session started or was last compacted."
		}
		s.update(ss.id, chunk(updateAgentChunk, msg))
		return "", true
	}
	if expanded, ok := ss.work.ExpandSlash(name, args); ok {
		return expanded, false
	}
	return text, false
}
