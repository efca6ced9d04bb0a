package streamjson

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/permission"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/tool"
)

// The session of a server: created or resumed on the first turn, with
// the tools the client asked for.

// ErrNoConversation is Serve's error when Options.Resume names no stored
// session.
var ErrNoConversation = errors.New("no conversation found with session ID")

// checkResume fails the server at its start, before any input is read,
// when Options.Resume names no stored session, as Claude Code does: an
// error result in Claude Code's words, then ErrNoConversation (the CLI
// exits with status 1). The session itself is made by the first turn,
// which would otherwise be the first to notice, and an input without one
// would end in silence.
func (s *Server) checkResume(ctx context.Context) error {
	id := s.opts.Resume
	if id == "" {
		return nil
	}
	_, err := s.app.Store.GetSession(ctx, id)
	if err == nil {
		return nil
	}
	msg := "No conversation found with session ID: " + id // Claude Code's words
	if errors.Is(err, store.ErrNotFound) {
		err = fmt.Errorf("%w: %s", ErrNoConversation, id)
	} else {
		err = fmt.Errorf("resume session %s: %w", id, err)
		msg = err.Error()
	}
	s.write(resultMessage{Type: "result", Subtype: "error_during_execution", IsError: true, Errors: []string{msg},
		SessionID: id, PermissionDenials: []permissionDenial{}, ModelUsage: map[string]modelUsage{}, UUID: newUUID()})
	return err
}

// current returns the session, nil before one exists.
func (s *Server) current() *app.Session {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sess
}

// session returns the live session, creating or resuming it on first use.
// Only runner jobs call it, so the session is created once, without a lock
// held across the store's I/O.
func (s *Server) session(ctx context.Context) (*app.Session, error) {
	s.mu.Lock()
	sess, hostShell, in, disallowed := s.sess, s.hostShell, s.init, s.disallowed
	s.mu.Unlock()
	if sess != nil {
		return sess, nil
	}
	model, err := s.resolveAlias(s.opts.Model)
	if err != nil {
		return nil, err
	}
	o := app.SessionOptions{Model: model, MaxTurns: s.opts.MaxTurns,
		System: joinNonEmpty("\n", s.opts.AppendSystemPrompt, in.appendSystem), SystemBase: in.systemBase, Jobs: s.jobs,
		Transcript: len(in.hooks) > 0, ClientHooks: &s.hooks}
	if s.opts.SystemPrompt != "" && o.SystemBase == "" {
		o.SystemBase = s.opts.SystemPrompt
	}
	if hostShell {
		o.Tools = append(o.Tools, s.hostShellTool())
	}
	if s.opts.Tools != nil {
		o.Only = []string{}
		for _, n := range s.opts.Tools {
			o.Only = append(o.Only, tool.FromClaudeCode(n))
		}
	}
	hide := s.hiddenTools(slices.Concat(s.opts.DisallowedTools, disallowed))
	o.Hide = hide
	// Under Claude Code's argv the tools are Claude Code's (Bash, Read
	// with file_path, …); hooks see them so, outside that presentation.
	if s.opts.ClaudeCode || s.opts.Qwen || s.opts.MaxToolCalls != nil || len(in.hooks) > 0 {
		o.Wrap = func(t tool.Tool) tool.Tool {
			if s.opts.MaxToolCalls != nil {
				t = s.capCalls(t)
			}
			if s.opts.ClaudeCode {
				t = tool.AsClaudeCode(t)
			}
			if s.opts.Qwen {
				t = tool.AsQwen(t)
			}
			if len(in.hooks) > 0 {
				t = s.wrapHooks(t)
			}
			return t
		}
	}
	if s.opts.MaxBudgetUSD > 0 {
		o.Gate = s.budgetGate
	}
	switch {
	case s.opts.Resume != "" && s.opts.ForkSession:
		sess, err = s.fork(ctx, s.opts.Resume, o)
	case s.opts.Resume != "":
		sess, err = s.app.ResumeSession(ctx, s.opts.Resume, o)
	case s.sdkLaunch():
		// Claude Code's and qwen's session ids are UUIDs; clients parse
		// them so, and the Qwen Code SDK sends its own (--session-id).
		id := s.opts.SessionID
		if id == "" {
			id = newUUID()
		}
		sess, err = s.app.CreateSession(ctx, id, o)
	default:
		sess, err = s.app.NewSession(ctx, o)
	}
	if err != nil {
		return nil, err
	}
	for _, n := range s.opts.Tools {
		if _, ok := sess.Tools.Lookup(n); ok || hide != nil && hide(tool.FromClaudeCode(n)) {
			continue
		}
		_, ok := sess.Tools.Lookup(tool.FromClaudeCode(n))
		if q := tool.QwenName(n); !ok && s.opts.Qwen && q != "" {
			_, ok = sess.Tools.Lookup(q) // presented under qwen's name
		}
		if !ok {
			flag := "--tools"
			if s.opts.Qwen {
				flag = "--core-tools (the SDK's coreTools)"
			}
			return nil, fmt.Errorf("%s names %q, which is no tool of arbor's (it has %s)", flag, n, strings.Join(sess.Tools.Names(), ", "))
		}
	}
	s.mu.Lock()
	s.sess = sess
	s.mu.Unlock()
	source := "startup"
	if s.opts.Resume != "" {
		source = "resume"
	}
	if err := s.sessionHooks(ctx, sess, source); err != nil {
		return nil, err
	}
	return sess, nil
}

// hiddenTools returns what leaves tools out of the session: the
// disallowed rules that name a tool without a pattern ("Bash", "shell",
// "mcp__github"), as Claude Code removes such a tool from the model's
// tools and init's list; a rule with a pattern ("Bash(rm *)") only denies
// the calls it matches. nil when no rule is bare.
func (s *Server) hiddenTools(disallowed []string) func(name string) bool {
	var bare []permission.Rule
	for _, d := range disallowed {
		if s.opts.ClaudeCode {
			d = tool.RuleFromClaudeCode(d) // the CLI's are rewritten already; again changes nothing
		}
		// The rules were checked when they were added as deny rules.
		if r, err := permission.ParseRule(d, permission.Deny, permission.ScopeSession); err == nil && r.Pattern == "" {
			bare = append(bare, r)
		}
	}
	if bare == nil {
		return nil
	}
	return func(name string) bool {
		return slices.ContainsFunc(bare, func(r permission.Rule) bool { return r.Names(name) })
	}
}

// sessionID is the session id, the one to resume before any turn, "" when
// none exists.
func (s *Server) sessionID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sess == nil {
		return s.opts.Resume
	}
	return s.sess.ID
}
