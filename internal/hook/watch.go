package hook

import "context"

// Watch is told of each SessionStart and PreCompact command hook a Run
// calls (stream-json's hook_started and hook_response lines, and the
// result of Claude Code's /compact; Claude Code reports no other
// event's): called before the command runs, it returns what is called
// with how it ran once it is done, or nil. Other handlers (the Claude
// Agent SDK's callbacks) are not told of, and the tool calls' hooks do
// not look for a Watch.
type Watch func(e Event, target string) (done func(Ran))

// Ran is how a command hook ran: what it printed and how it ended.
type Ran struct {
	// Command is the hook's command line, as configured.
	Command        string
	Stdout, Stderr string
	// ExitCode is the command's exit status when Exited; it did not
	// exit by itself when it timed out or could not start.
	ExitCode int
	Exited   bool
	// Outcome is Claude Code's: "success" (exit 0), "error" (another
	// exit, or no start), "cancelled" (killed at its timeout, or its
	// context ended).
	Outcome string
}

type watchKey struct{}

// WithWatch makes the Runs under ctx tell w of their command hooks.
func WithWatch(ctx context.Context, w Watch) context.Context {
	return context.WithValue(ctx, watchKey{}, w)
}

// watching is ctx's Watch's done for a command hook h of e about to run,
// nil when h is no command or ctx has no Watch.
func watching(ctx context.Context, h Handler, e Event, target string) func(Ran) {
	if e != SessionStart && e != PreCompact {
		return nil
	}
	c, ok := h.(*Command)
	if !ok {
		return nil
	}
	w, _ := ctx.Value(watchKey{}).(Watch)
	if w == nil {
		return nil
	}
	done := w(e, target)
	if done == nil {
		return nil
	}
	return func(r Ran) {
		r.Command = c.Command
		done(r)
	}
}

// ran is how the command ran, for a Watch.
func (r commandResult) ran() Ran {
	out := Ran{Stdout: r.stdout, Stderr: r.stderr, Outcome: "error"}
	switch {
	case r.timedOut:
		out.Outcome = "cancelled"
	case r.startErr == nil:
		out.ExitCode, out.Exited = r.exit, true
		if r.exit == 0 {
			out.Outcome = "success"
		}
	}
	return out
}

// report tells done how the handler ran: out.Ran, or, for a handler that
// gave none, that it failed (err) or was cancelled.
func report(done func(Ran), out Output, err error) {
	switch {
	case out.Ran.Outcome != "":
		done(out.Ran)
	case err != nil:
		done(Ran{Outcome: "cancelled"})
	default:
		done(Ran{Outcome: "error"})
	}
}
