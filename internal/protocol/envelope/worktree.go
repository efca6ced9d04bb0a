package envelope

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/arbor-run/arbor/internal/app"
)

// Worktree switches.
//
// `/worktree NAME` (sent as a message) moves the current session into the
// git worktree NAME that arbor manages (<repo>/.arbor/worktrees/NAME on
// branch arbor/NAME, created when missing, as with -w); a bare `/worktree`
// makes a fresh one; `/worktree off` moves it back to the repository's
// main checkout. The switch runs on the runner, so no turn runs
// meanwhile: the session's background jobs are killed and its sub-agents
// interrupted, the same session is reopened in the new directory (tools,
// permission confinement, project configuration and system prompt follow
// it; the session's rules of scope session are kept), its sub-agents
// continue there, workdir.generation is incremented and workdir_changed
// is pushed. The session id does not change, so session_switched is not
// pushed.

// workdirLocked is status_response.workdir. ctl.mu must be held.
func (s *server) workdirLocked() workdir {
	w := workdir{Path: s.ctl.work.Workspace, Generation: s.ctl.generation}
	if s.ctl.worktree != nil {
		w.WorktreeID = s.ctl.worktree.Name
	}
	return w
}

// mainCheckout is the directory /worktree off returns to and the one new
// worktrees are made from: the repository of the worktree arbor started
// in, or the directory it started in.
func (s *server) mainCheckout() string {
	if s.opts.Worktree != nil {
		return s.opts.Worktree.RepoRoot
	}
	return s.app.Workspace
}

// worktreeSlash parses /worktree's arguments and queues the switch.
func (s *server) worktreeSlash(args []string) error {
	switch {
	case len(args) > 1:
		return fmt.Errorf("%w: usage: /worktree [NAME|off]", errBadCommand)
	case len(args) == 1 && args[0] == "off":
		return s.submitWaiting("worktree", "/worktree off", s.navigation(false, func(ctx context.Context) error { s.switchWorktree(ctx, "", true); return nil }))
	default:
		name := ""
		if len(args) == 1 {
			name = args[0]
		}
		return s.submitWaiting("worktree", "/worktree "+name, s.navigation(false, func(ctx context.Context) error { s.switchWorktree(ctx, name, false); return nil }))
	}
}

// switchWorktree moves the current session into worktree name (off: back
// to the main checkout). Failures are reported with an error envelope and
// change nothing.
func (s *server) switchWorktree(ctx context.Context, name string, off bool) {
	if ctx.Err() != nil {
		return
	}
	var wt *app.Worktree
	dir := s.mainCheckout()
	if !off {
		w, err := app.PrepareWorktree(ctx, s.mainCheckout(), name)
		if err != nil {
			s.commandError("", fmt.Errorf("/worktree: %w", err))
			return
		}
		wt, dir = &w, w.Path
	}
	s.ctl.mu.Lock()
	cur, old := s.ctl.work, s.ctl.worktree
	s.ctl.mu.Unlock()
	if same(cur.Workspace, dir) {
		s.commandError("", fmt.Errorf("/worktree: %w: already working in %s", errBadCommand, dir))
		return
	}
	view, err := s.app.In(dir)
	if err == nil {
		err = roleRules(view, s.wire.get().role) // the checkout's own project rules of the role
	}
	if err != nil {
		if view != nil {
			view.Close()
		}
		s.commandError("", fmt.Errorf("/worktree: %w", err))
		return
	}
	if err := s.rebind(ctx, view, wt); err != nil {
		s.commandError("", fmt.Errorf("/worktree: %w", err))
		if err := s.rebind(ctx, cur, old); err != nil { // back where it was
			fmt.Fprintf(s.diag, "arbor: envelope: /worktree: reopening the session in %s: %v\n", cur.Workspace, err)
		}
		view.Close()
		return
	}
	if cur != s.app { // the view of the worktree it leaves: its sandbox goes with it
		cur.Close()
	}
}

// rebind reopens the current session in view's workdir and makes it
// current, pushing workdir_changed.
func (s *server) rebind(ctx context.Context, view *app.App, wt *app.Worktree) error {
	c := s.ctl
	c.mu.Lock()
	sess, jobs := c.sess, c.sessJobs
	c.mu.Unlock()
	// The run of the session's tree can be hosted only once: release it
	// (its children are interrupted) before reopening.
	jobs.Close()
	s.agents.host().Close()
	c.mu.Lock()
	prev := c.work
	c.work = view
	c.mu.Unlock()
	so := s.sessionOptions() // the current model (ctl.model)
	o, err := s.open(ctx, sess.ID, so)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.work = prev
		return err
	}
	c.sess, c.sessJobs, c.pending, c.worktree = o.sess, o.jobs, 0, wt
	c.generation++
	c.inbox, c.delivering = nil, false
	s.agents.adopt(o)
	n := s.jobCountLocked()
	s.wire.push(evWorkdirChanged, workdirChanged{SessionID: o.sess.ID, workdir: s.workdirLocked()},
		func(st *state) { st.runningJobs = n })
	s.wire.push(evToast, toast{AgentID: mainAgent, Level: "info", Message: "working in " + view.Workspace}, nil)
	return nil
}

// same reports whether two paths name the same directory.
func same(a, b string) bool {
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	if err1 != nil || err2 != nil {
		return filepath.Clean(a) == filepath.Clean(b)
	}
	return ra == rb
}
