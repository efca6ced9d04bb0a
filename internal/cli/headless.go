package cli

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/config"
	"github.com/arbor-run/arbor/internal/permission"
	"github.com/arbor-run/arbor/internal/protocol/envelope"
	"github.com/arbor-run/arbor/internal/protocol/streamjson"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/tool"
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
			eo := envelope.Options{Resume: f.resume, NoLocalShell: f.noLocalShell}
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
	fl.BoolVarP(&f.cont, "continue", "c", false, "continue the most recent session")
	fl.StringVarP(&f.worktree, "worktree", "w", "", "work in a git worktree arbor creates and manages (.arbor/worktrees/NAME, branch arbor/NAME); NAME is optional")
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

// autoWorktree stands for -w given without a name.
const autoWorktree = "\x00auto"

func serveEnvelope(ctx context.Context, g *globals, s Streams, o envelope.Options) error {
	a, err := g.open(ctx)
	if err != nil {
		return err
	}
	defer a.Close()
	err = envelope.Serve(ctx, a, s.In, s.Out, s.Err, o)
	var held *store.LeaseHeldError
	if errors.As(err, &held) {
		return ownedError("session "+o.Resume, held, "")
	}
	return err
}

// latestSession is the most recently used stored session (the last one
// written to, not the last one created), for --continue.
func latestSession(ctx context.Context, g *globals) (string, error) {
	a, err := g.open(ctx)
	if err != nil {
		return "", err
	}
	defer a.Close()
	// The newest sessions may be those of tree nodes (sub-agents, arbor
	// run): they are not conversations to continue.
	ss, err := a.Store.ListSessions(ctx, 1000)
	if err != nil {
		return "", err
	}
	slices.SortStableFunc(ss, func(a, b store.Session) int { return b.UpdatedAt.Compare(a.UpdatedAt) })
	for _, s := range ss {
		if !s.OwnedByNode() {
			return s.ID, nil
		}
	}
	return "", usageError{errNoSession}
}

// unsupportedFlags lists the flags of args that runSDK does not define.
func unsupportedFlags(fs *pflag.FlagSet, args []string) []string {
	var bad []string
	for _, a := range args {
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "--") {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if fs.Lookup(name) == nil {
			bad = append(bad, "--"+name)
		}
	}
	return bad
}

// errNoSession: --continue found no conversation to continue.
var errNoSession = errors.New("--continue: there is no stored session yet")

// splitList splits a list of tools or rules separated by commas or spaces
// outside parentheses ("Bash(git log *),Read"), as Claude Code's tool
// flags take; "" is nil.
func splitList(s string) []string {
	var out []string
	depth, start := 0, 0
	flush := func(end int) {
		if f := strings.TrimSpace(s[start:end]); f != "" {
			out = append(out, f)
		}
	}
	for i, r := range s {
		switch {
		case r == '(':
			depth++
		case r == ')' && depth > 0:
			depth--
		case (r == ',' || r == ' ') && depth == 0:
			flush(i)
			start = i + 1
		}
	}
	flush(len(s))
	return out
}

// isUUID reports whether s is a UUID in its canonical text form.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range s {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !strings.ContainsRune("0123456789abcdefABCDEF", c) {
				return false
			}
		}
	}
	return true
}

func serveStreamJSON(ctx context.Context, g *globals, s Streams, o streamjson.Options) error {
	a, err := g.open(ctx)
	if err != nil {
		return err
	}
	defer a.Close()
	for _, t := range o.AllowedTools {
		r, err := permission.ParseRule(t, permission.Allow, permission.ScopeSession)
		if err != nil {
			return usageError{err}
		}
		if err := a.Permissions.AddRule(r); err != nil {
			return err
		}
	}
	for _, t := range o.DisallowedTools {
		r, err := permission.ParseRule(t, permission.Deny, permission.ScopeSession)
		if err != nil {
			return usageError{fmt.Errorf("--disallowedTools: %w", err)}
		}
		if err := a.Permissions.AddRule(r); err != nil {
			return err
		}
	}
	return streamjson.Serve(ctx, a, s.In, s.Out, s.Err, o)
}

// sdkMode reports whether args are the Claude Agent SDK's invocation of its
// CLI (no subcommand; stream-json in and out), which arbor serves as the
// stream-json protocol.
func sdkMode(args []string) bool {
	in, out := false, false
	for i, a := range args {
		next := ""
		if i+1 < len(args) {
			next = args[i+1]
		}
		switch {
		case a == "--input-format" && next == "stream-json", a == "--input-format=stream-json":
			in = true
		case a == "--output-format" && next == "stream-json", a == "--output-format=stream-json":
			out = true
		}
	}
	return in && out
}

// runSDK serves the Claude Agent SDK: it accepts the flags that SDK passes
// to its CLI (both --k=v and --k v), honours the ones arbor has a meaning
// for, and refuses the rest with a usage error (never ignores them).
func runSDK(ctx context.Context, args []string, s Streams) int {
	fs := pflag.NewFlagSet("arbor", pflag.ContinueOnError)
	fs.ParseErrorsAllowlist.UnknownFlags = true
	fs.SetOutput(s.Err)
	var (
		g                              globals
		o                              streamjson.Options
		permMode, allowed, disallowed  string
		outputFormat, inputFormat, ppt string
		tools                          string
		verbose, cont                  bool
	)
	fs.StringVar(&outputFormat, "output-format", "", "")
	fs.StringVar(&inputFormat, "input-format", "", "")
	fs.BoolVar(&verbose, "verbose", false, "")
	fs.StringVar(&ppt, "permission-prompt-tool", "", "")
	fs.StringVar(&g.model, "model", "", "")
	fs.IntVar(&o.MaxTurns, "max-turns", 0, "")
	fs.StringVar(&permMode, "permission-mode", "", "")
	fs.StringVar(&allowed, "allowedTools", "", "")
	fs.StringVar(&disallowed, "disallowedTools", "", "")
	fs.StringVar(&o.AppendSystemPrompt, "append-system-prompt", "", "")
	fs.StringVar(&o.Resume, "resume", "", "")
	fs.BoolVar(&o.PartialMessages, "include-partial-messages", false, "")
	fs.StringVar(&tools, "tools", "", "")
	fs.BoolVar(&cont, "continue", false, "")
	fs.BoolVar(&o.ForkSession, "fork-session", false, "")
	fs.StringVar(&o.SessionID, "session-id", "", "")
	fs.Float64Var(&o.MaxBudgetUSD, "max-budget-usd", 0, "")
	var settingSources string
	fs.StringVar(&settingSources, "setting-sources", "", "")
	var debug bool
	var debugFile string
	fs.BoolVar(&debug, "debug", false, "")
	fs.StringVar(&debugFile, "debug-file", "", "")
	fs.Bool("allow-dangerously-skip-permissions", false, "")
	var mcpConfigs []string
	fs.StringArrayVar(&mcpConfigs, "mcp-config", nil, "")
	fs.BoolVar(&g.strictMCP, "strict-mcp-config", false, "")
	var awaitInit bool
	fs.BoolVar(&awaitInit, "await-initialize", false, "")
	fs.String("initialize-fields", "", "") // which fields the SDK sent there; all are read (awaitInitialize)
	if err := fs.Parse(args); err != nil {
		fmt.Fprintln(s.Err, "arbor:", err)
		return ExitUsage
	}
	// A Claude Code option arbor does not implement is refused, never
	// silently ignored: the program would otherwise run without what it
	// asked for (see docs/headless-stream-json.md, SDK options).
	if bad := unsupportedFlags(fs, args); len(bad) > 0 {
		fmt.Fprintf(s.Err, "arbor: not supported by arbor, so refused rather than ignored: %s\n", strings.Join(bad, ", "))
		return ExitUsage
	}
	if awaitInit {
		li, in, err := awaitInitialize(s.In)
		if err != nil {
			fmt.Fprintln(s.Err, "arbor:", err)
			return ExitFailure // as Claude Code exits
		}
		s.In = in
		disallowed = strings.Join(append(splitList(disallowed), li.Request.DisallowedTools...), ",")
		o.LaunchInit.DisallowedTools = li.Request.DisallowedTools != nil
		if hasJSONValue(li.Request.MCPServers) {
			mcpConfigs = append(mcpConfigs, `{"mcpServers":`+string(li.Request.MCPServers)+`}`)
			o.LaunchInit.MCPServers = true
		}
	}
	if os.Getenv("CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING") == "true" {
		// The SDK's enableFileCheckpointing: arbor keeps no checkpoints for
		// rewindFiles() to go back to.
		fmt.Fprintln(s.Err, "arbor: enableFileCheckpointing (CLAUDE_CODE_ENABLE_SDK_FILE_CHECKPOINTING): arbor keeps no file checkpoints, so refused rather than ignored")
		return ExitUsage
	}
	if ppt != "" && ppt != "stdio" {
		// Approvals come over stdio (canUseTool); an MCP approval tool
		// (permissionPromptToolName) would be silently bypassed.
		fmt.Fprintf(s.Err, "arbor: --permission-prompt-tool %s: arbor asks for approvals over stdio only (canUseTool), so refused rather than ignored\n", ppt)
		return ExitUsage
	}
	if settingSources != "" {
		fmt.Fprintf(s.Err, "arbor: --setting-sources %s: arbor does not read Claude Code's settings files; pass settingSources: [] or leave it out\n", settingSources)
		return ExitUsage
	}
	for _, v := range mcpConfigs {
		servers, err := config.ReadMCPConfig(v)
		if err != nil {
			fmt.Fprintln(s.Err, "arbor:", err)
			return ExitUsage
		}
		if g.mcp == nil {
			g.mcp = map[string]config.MCPServer{}
		}
		maps.Copy(g.mcp, servers)
	}
	g.stderr = s.Err
	o.ClaudeCode = true
	if permMode != "" {
		if _, err := permission.ParseMode(permMode); err != nil {
			fmt.Fprintln(s.Err, "arbor:", err)
			return ExitUsage
		}
		g.mode = permMode
	}
	for _, r := range splitList(allowed) {
		o.AllowedTools = append(o.AllowedTools, tool.RuleFromClaudeCode(r))
	}
	for _, r := range splitList(disallowed) {
		o.DisallowedTools = append(o.DisallowedTools, tool.RuleFromClaudeCode(r))
	}
	if fs.Changed("tools") && tools != "default" {
		o.Tools = splitList(tools)
		if o.Tools == nil {
			o.Tools = []string{} // --tools "": no tools
		}
	}
	if o.SessionID != "" && !isUUID(o.SessionID) {
		fmt.Fprintf(s.Err, "arbor: --session-id %q: a session id is a UUID\n", o.SessionID)
		return ExitUsage
	}
	if o.ForkSession && o.Resume == "" && !cont {
		fmt.Fprintln(s.Err, "arbor: --fork-session needs --resume or --continue")
		return ExitUsage
	}
	if cont && o.Resume == "" {
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
