package cli

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/config"
	"github.com/arbor-run/arbor/internal/procs"
	"github.com/arbor-run/arbor/internal/protocol"
	"github.com/arbor-run/arbor/internal/protocol/dialect"
	"github.com/arbor-run/arbor/internal/protocol/envelope"
	"github.com/arbor-run/arbor/internal/protocol/streamjson"
	"github.com/arbor-run/arbor/internal/store"
)

type headlessFlags struct {
	protocol     string
	sessionDir   string
	cont         bool
	worktree     string
	approvalMode string
	resume       string
	allowedTools []string
	maxTurns     int
	partial      bool
	appendSystem string
	noLocalShell bool
}

func newHeadlessCmd(g *globals, s Streams) *cobra.Command {
	f := &headlessFlags{}
	cmd := &cobra.Command{
		Use:   `headless [flags] ["prompt"]`,
		Short: "Serve a JSONL protocol on stdin/stdout for another program",
		Long: `Run arbor for another program over JSONL on stdin/stdout. The default
--protocol envelope (spec 000) takes JSON commands and writes {type, seq,
payload} envelopes, the first being ready; see docs/headless-envelope.md. With --protocol stream-json (spec 001/003, a dialect of the Claude Code SDK's
stream-json protocol) arbor reads user, control_request, control_response
and registry_request lines and writes system, stream_event, assistant, user,
control_request, control_response and result lines. With a prompt argument
it runs that one turn and exits. Diagnostics go to stderr.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			g.runsAgents()
			procs.One(os.Getenv) // done in its initialiser unless flags came first
			if f.sessionDir != "" {
				g.workspace = f.sessionDir
			}
			if f.cont {
				id, err := latestSession(cmd.Context(), g)
				if err != nil {
					return err
				}
				f.resume = id
			}
			if f.approvalMode != "" {
				g.mode = f.approvalMode
			}
			eo := envelope.Options{Resume: f.resume, Model: g.model, NoLocalShell: f.noLocalShell}
			if cmd.Flags().Changed("worktree") {
				dir := g.workspace
				if dir == "" {
					dir = "."
				}
				name := f.worktree
				if name == autoWorktree {
					name = ""
					// "-w NAME": the envelope protocol takes no prompt, so a
					// lone argument is the worktree's name.
					if f.protocol == "envelope" && len(args) == 1 {
						name, args = args[0], nil
					}
				}
				wt, err := app.PrepareWorktree(cmd.Context(), dir, name)
				if err != nil {
					return &exitError{code: ExitUsage, err: err}
				}
				g.workspace, eo.Worktree = wt.Path, &wt
			}
			switch f.protocol {
			case "envelope":
				if len(args) > 0 {
					return usageError{errors.New("the envelope protocol takes no prompt argument: send it as a send command")}
				}
				return serveEnvelope(cmd.Context(), g, s, eo)
			case "stream-json":
			default:
				return usageError{fmt.Errorf("unknown --protocol %q: envelope or stream-json", f.protocol)}
			}
			o := streamjson.Options{Model: g.model, Resume: f.resume, MaxTurns: f.maxTurns,
				AllowedTools: f.allowedTools, PartialMessages: f.partial, AppendSystemPrompt: f.appendSystem}
			if len(args) == 1 {
				o.Prompt = args[0]
			}
			return serveStreamJSON(cmd.Context(), g, s, o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.protocol, "protocol", "envelope", "wire protocol: envelope (spec 000) or stream-json (spec 001/003)")
	fl.StringVarP(&f.sessionDir, "session-dir", "d", "", "work in DIR")
	fl.BoolVarP(&f.cont, "continue", "c", false, "continue the most recent conversation of this workspace")
	fl.StringVarP(&f.worktree, "worktree", "w", "", "work in a git worktree arbor creates and manages (.arbor/worktrees/NAME, branch arbor/NAME); `NAME` is optional")
	fl.Lookup("worktree").NoOptDefVal = autoWorktree
	fl.StringVar(&f.approvalMode, "approval-mode", "", "permission mode: default, auto-edit, trust (also the Claude names acceptEdits, bypassPermissions)")
	fl.StringVarP(&f.resume, "resume", "r", "", "continue stored session ID")
	fl.StringSliceVar(&f.allowedTools, "allowed-tools", nil, "tools (or rules like shell(git *)) allowed without asking")
	fl.IntVar(&f.maxTurns, "max-turns", 0, "maximum model calls per turn")
	fl.BoolVar(&f.partial, "include-partial-messages", true, "send stream_event lines with text, thinking and tool deltas")
	fl.StringVar(&f.appendSystem, "append-system-prompt", "", "text added to the system prompt")
	fl.BoolVar(&f.noLocalShell, "no-local-shell", false, "refuse the envelope protocol's local_shell command")
	return cmd
}

// autoWorktree stands for -w given without a name; no worktree name can
// be it (app.PrepareWorktree takes letters, digits, '.', '_' and '-').
const autoWorktree = "(generated)"

func serveEnvelope(ctx context.Context, g *globals, s Streams, o envelope.Options) error {
	a, err := g.open(ctx)
	if err != nil {
		return err
	}
	defer a.Close()
	in, restore := protocol.Pollable(s.In)
	defer restore()
	err = envelope.Serve(ctx, a, in, s.Out, s.Err, o)
	var held *store.LeaseHeldError
	if errors.As(err, &held) {
		return ownedError("session "+o.Resume, held, "")
	}
	return classify(err) // no model, a bad config: exit 2, as arbor run
}

// latestSession is the most recently used stored conversation of the
// workspace (the last one written to, not the last one created), for
// --continue.
func latestSession(ctx context.Context, g *globals) (string, error) {
	a, err := g.open(ctx)
	if err != nil {
		return "", err
	}
	defer a.Close()
	s, err := store.LatestConversation(ctx, a.Store, a.Workspace)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return "", usageError{fmt.Errorf("%w in %s", errNoSession, a.Workspace)}
	case err != nil:
		return "", err
	}
	return s.ID, nil
}

// errNoSession: --continue found no conversation to continue.
var errNoSession = errors.New("--continue: there is no stored conversation")

func serveStreamJSON(ctx context.Context, g *globals, s Streams, o streamjson.Options) error {
	a, err := g.open(ctx)
	if err != nil {
		return err
	}
	defer a.Close()
	if err := a.Permissions.AddSessionRules(o.AllowedTools, o.DisallowedTools); err != nil {
		return usageError{err}
	}
	in, restore := protocol.Pollable(s.In)
	defer restore()
	return streamjson.Serve(ctx, a, in, s.Out, s.Err, o)
}

// runSDK serves the Claude Agent SDK or the Qwen Code SDK (d), which
// launched arbor as its CLI (dialect.Parse reads the flags it passes).
func runSDK(ctx context.Context, d dialect.Dialect, args []string, s Streams) int {
	l, in, err := dialect.Parse(d, args, s.In)
	if err != nil {
		fmt.Fprintln(s.Err, "arbor:", err)
		if errors.Is(err, dialect.ErrUsage) {
			return ExitUsage
		}
		return ExitFailure // as Claude Code exits
	}
	s.In = in
	g := globals{model: l.Model, mode: l.PermissionMode, mcp: l.MCPServers, strictMCP: l.StrictMCP, stderr: s.Err,
		sandboxSettings: l.Sandbox.Config(), settingSources: l.SettingSources, addDirs: l.AddDirs}
	if l.SandboxRequired {
		g.sandbox = "required"
	}
	o := streamjson.LaunchOptions(d, l)
	if l.Continue && o.Resume == "" {
		id, err := latestSession(ctx, &g)
		switch {
		case errors.Is(err, errNoSession):
			// Claude Code starts a new conversation when there is none.
		case err != nil:
			fmt.Fprintln(s.Err, "arbor:", err)
			return ExitFailure
		default:
			o.Resume = id
		}
	}
	if err := serveStreamJSON(ctx, &g, s, o); err != nil {
		fmt.Fprintln(s.Err, "arbor:", err)
		if errors.Is(err, config.ErrNoModel) || errors.Is(err, config.ErrInvalid) {
			return ExitUsage
		}
		return ExitFailure
	}
	return ExitOK
}
