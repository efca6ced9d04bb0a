// Claude Code's /rename in stream-json: the "/rename <name>" prompt
// names the session, as the real CLI does (recorded:
// TestProjectFilesLikeClaudeCode/rename).

package streamjson

import (
	"context"
	"encoding/json"
	"time"

	"github.com/arbor-run/arbor/internal/app"
)

// renameSlash is the built-in /rename, as Claude Code lists it.
var renameSlash = slashCommand{Name: "rename", Description: "Rename the current conversation", ArgumentHint: "[name]"}

// renameUsage answers a /rename without a name: Claude Code asks its
// model for one, arbor does not.
const renameUsage = "Usage: /rename <name>"

// titleChanged is the "system" "session_title_changed" line.
type titleChanged struct {
	Type      string `json:"type"`    // "system"
	Subtype   string `json:"subtype"` // "session_title_changed"
	Title     string `json:"title"`
	UUID      string `json:"uuid"`
	SessionID string `json:"session_id"`
}

// renameCommand reports whether text is Claude Code's "/rename" (or its
// alias "/name") and the name it gives. Qwen's CLI has no such command:
// there the text goes to the model.
func (s *Server) renameCommand(text string) (name string, ok bool) {
	cmd, args, ok := app.SplitSlash(text)
	if !ok || cmd != renameSlash.Name && cmd != "name" || s.opts.Qwen {
		return "", false
	}
	return args, true
}

// renameTurn names the session, as Claude Code's /rename does: a
// session_title_changed line, the turn's init, the command's answer as a
// local command's assistant line, and a success result whose result is
// that answer. No model turn runs.
func (s *Server) renameTurn(ctx context.Context, sess *app.Session, name string, start time.Time) {
	sid, answer := sess.ID, renameUsage
	if name != "" {
		title, err := s.app.RenameConversation(ctx, sess, name)
		if err != nil {
			s.write(s.initMessage(sid))
			s.write(resultMessage{Type: "result", Subtype: "error_during_execution", IsError: true, Errors: []string{"/rename: " + err.Error()},
				SessionID: sid, DurationMS: time.Since(start).Milliseconds(), PermissionDenials: []permissionDenial{},
				ModelUsage: map[string]modelUsage{}, UUID: newUUID(), LocalCommand: renameSlash.Name, StopReason: json.RawMessage("null")})
			s.endTurn(false)
			return
		}
		s.write(titleChanged{Type: "system", Subtype: "session_title_changed", Title: title, UUID: newUUID(), SessionID: sid})
		answer = "Session renamed to: " + title
	}
	s.write(s.initMessage(sid))
	s.writeLocalCommandText(sid, answer, localCommandRun{Command: renameSlash.Name, Args: name}, false)
	s.write(resultMessage{Type: "result", Subtype: "success", Result: answer, SessionID: sid, DurationMS: time.Since(start).Milliseconds(),
		PermissionDenials: []permissionDenial{}, ModelUsage: map[string]modelUsage{}, UUID: newUUID(), LocalCommand: renameSlash.Name,
		StopReason: json.RawMessage("null")})
	s.endTurn(false)
}
