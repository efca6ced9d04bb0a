package envelope

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/arbor-run/arbor/internal/store"
)

// slashError marks a slash command's failure: its message names the
// command, so the error envelope carries it without a "send:" prefix.
type slashError struct{ err error }

func (e *slashError) Error() string { return e.err.Error() }
func (e *slashError) Unwrap() error { return e.err }

const helpText = `Commands:
  /models [status]   show the model and the configured pools
  /models <pool>     switch to the first model of a pool
  /role [status]     show the roles
  /role <name>       switch the role
  /stats             tokens and cost of this session
  /compact           compact the conversation now
  /rename [TITLE]    name the session (clear its name without TITLE)
  /new               start a new session
  /resume <id>       switch to a stored session
  /loop on|off       keep the agent working until it calls done
  /worktree [NAME]   move the session into git worktree NAME (new if omitted)
  /worktree off      move it back to the main checkout
  /mcp               MCP servers, their status and tools
  /help              this list`

// slash runs a slash command sent as a message. Commands that drive the
// agent or swap the session are queued behind the running turn.
func (s *server) slash(text string) error {
	fields := strings.Fields(text)
	name, args := fields[0], fields[1:]
	switch name {
	case "/models":
		switch {
		case len(args) == 0 || len(args) == 1 && args[0] == "status":
			return s.models(modelsCmd{Action: "status"})
		case args[0] == "--agent":
			return fmt.Errorf("/models --agent: %w: arbor has no named agents", errUnavailable)
		case len(args) == 1:
			return s.models(modelsCmd{Action: "set_current_model_pool", Pool: args[0]})
		default:
			return fmt.Errorf("%w: usage: /models [status|<pool>]", errBadCommand)
		}
	case "/role":
		switch {
		case len(args) == 0 || len(args) == 1 && args[0] == "status":
			s.role(roleCmd{Action: "list"})
		case len(args) == 1:
			s.role(roleCmd{Action: "set", Role: args[0]})
		default:
			return fmt.Errorf("%w: usage: /role [status|<name>]", errBadCommand)
		}
	case "/help":
		s.wire.push(evInfo, infoPayload{AgentID: mainAgent, Message: helpText + s.projectHelp()}, nil)
	case "/mcp":
		s.wire.push(evInfo, infoPayload{AgentID: mainAgent, Message: s.mcpText()}, nil)
	case "/stats":
		s.wire.push(evInfo, infoPayload{AgentID: mainAgent, Message: s.stats()}, nil)
	case "/rename":
		return s.rename(strings.TrimSpace(strings.TrimPrefix(text, "/rename")))
	case "/compact":
		return s.submitWaiting("compact", "/compact", s.navigation(false, func(ctx context.Context) error { s.compactNow(ctx); return nil }))
	case "/new":
		return s.submitWaiting("switch", "/new", s.navigation(true, func(ctx context.Context) error { return s.switchSession(ctx, "") }))
	case "/resume":
		if len(args) != 1 {
			return fmt.Errorf("/resume without a session id %w", errTUIOnly)
		}
		id := args[0]
		return s.submitWaiting("switch", "/resume "+id, s.navigation(true, func(ctx context.Context) error { return s.switchSession(ctx, id) }))
	case "/worktree":
		return s.worktreeSlash(args)
	case "/export":
		return fmt.Errorf("/export %w", errTUIOnly)
	case "/loop":
		if len(args) != 1 || args[0] != "on" && args[0] != "off" {
			return fmt.Errorf("%w: usage: /loop on|off", errBadCommand)
		}
		s.setLoop(args[0] == "on")
	default:
		return fmt.Errorf("%w %s", errUnknownSlash, name)
	}
	return nil
}

// rename names the current session, as Chord's /rename does, and says
// so with Chord's toast; "" clears its name.
func (s *server) rename(title string) error {
	s.ctl.mu.Lock()
	sess := s.ctl.sess
	s.ctl.mu.Unlock()
	title, err := s.app.RenameConversation(context.Background(), sess, title)
	if err != nil {
		return &slashError{err: fmt.Errorf("/rename: %w", err)}
	}
	msg := "Session title cleared"
	if title != "" {
		msg = "Session title set to: " + title
	}
	s.wire.push(evToast, toast{AgentID: mainAgent, Level: "info", Message: msg}, nil)
	return nil
}

// stats describes the tokens and cost of the current session.
func (s *server) stats() string {
	s.ctl.mu.Lock()
	sess, model := s.ctl.sess, s.ctl.model // sess.Model is the runner's
	s.ctl.mu.Unlock()
	u, cost, known := sess.Agent.Usage() // a locked snapshot: the one use of the agent off the runner
	costText := "unknown (the model has no price)"
	if known {
		costText = fmt.Sprintf("$%.4f", cost)
	}
	return fmt.Sprintf("Session %s (model %s)\nTokens: %d input, %d output, %d cache read, %d cache write\nCost: %s",
		sess.ID, model, u.InputTokens, u.OutputTokens, u.CacheReadTokens, u.CacheWriteTokens, costText)
}

// switchSession opens a new session (id "") or resumes a stored one and
// makes it current, on the runner so that no turn runs meanwhile.
// A resumed session keeps its own model; a new one takes the current one.
// A pending handoff is dropped (handoff_cancelled). A failure is reported
// with an error envelope and returned. The session left ends (its
// SessionEnd hooks run) as Claude Code's /clear and /resume end theirs:
// reason "clear" for a new session, "resume" for a stored one; the
// session entered starts (its SessionStart hooks, at its first turn)
// with the same word as its source.
func (s *server) switchSession(ctx context.Context, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var (
		o   opened
		err error
	)
	cur := s.current()
	if id != "" && id == cur.ID {
		err = fmt.Errorf("already in session %s", id)
	} else {
		so := s.sessionOptions()
		if id != "" {
			so.Model = ""
		}
		o, err = s.open(ctx, id, so)
		if errors.Is(err, store.ErrNotFound) {
			err = fmt.Errorf("no stored session %s", id)
		}
	}
	if err != nil {
		name := "/new"
		if id != "" {
			name = "/resume"
		}
		err = fmt.Errorf("%s: %w", name, err)
		s.commandError("", err)
		return err
	}
	sess := o.sess
	reason := "clear" // SessionEnd's for the session left, SessionStart's for this one
	if id != "" {
		reason = "resume"
	}
	// Events of the trees closed so far (a resumed session's own, among
	// them) are handled before its tree becomes current again.
	s.events.Flush()
	c := s.ctl
	c.mu.Lock()
	old, oldHost := c.sessJobs, s.agents.host()
	c.sess, c.sessJobs, c.pending, c.results = sess, o.jobs, 0, 0
	if c.model != sess.Model.Ref.Ref {
		c.model, c.pool = sess.Model.Ref.Ref, ""
	}
	c.inbox, c.delivering = nil, false
	s.ix.mu.Lock()
	s.cancelHandoffLocked()
	s.ix.confirms, s.ix.questions = nil, nil
	s.wire.push(evSessionSwitched, sessionSwitched{SessionID: sess.ID}, func(st *state) {
		st.sessionID = sess.ID
		st.phase, st.phaseDetail = "", ""
		st.runningJobs = 0
		st.loop = false
	})
	s.ix.mu.Unlock()
	s.agents.adopt(o)
	// Its SessionStart hooks run at its next turn, with Claude Code's
	// source: "clear" after its /clear, "resume" after a resume.
	if c.sources == nil {
		c.sources = map[string]string{}
	}
	c.sources[sess.ID] = reason
	// An idle owed to the dropped handoff's turn is not paid here: /new
	// and /resume end with their own idle (navigation), an accepted plan
	// with its turn's.
	c.idleOwed = ""
	c.mu.Unlock()
	// The old jobs are killed without results; closing waits for their
	// goroutines, one of which may be queueing a result behind this job.
	// The old tree's children are interrupted, to continue when that
	// session is resumed.
	s.closers.Go(old.Close)
	s.hostClosers.Go(oldHost.Close)
	s.endSession(ctx, cur.ID, reason)
	return nil
}

// builtinSlash are the names slash handles.
var builtinSlash = map[string]bool{"models": true, "role": true, "help": true, "mcp": true, "stats": true, "compact": true,
	"new": true, "resume": true, "rename": true, "worktree": true, "export": true, "loop": true}

// projectSlash expands "/name args" when name is one of the project's
// custom commands (.arbor/commands, .claude/commands) or skills, as
// Chord expands its custom commands in send; built-in names win.
func (s *server) projectSlash(text string) (string, bool) {
	rest, ok := strings.CutPrefix(text, "/")
	if !ok {
		return "", false
	}
	name, args, _ := strings.Cut(rest, " ")
	if builtinSlash[name] {
		return "", false
	}
	return s.app.ExpandSlash(name, strings.TrimSpace(args))
}

// projectHelp lists the project's commands and skills for /help.
func (s *server) projectHelp() string {
	var b strings.Builder
	for _, c := range s.app.SkillsAndCommands() {
		if b.Len() == 0 {
			b.WriteString("\nProject commands and skills:")
		}
		fmt.Fprintf(&b, "\n  /%s  %s (%s)", c.Name, c.Description, c.Kind)
	}
	return b.String()
}
