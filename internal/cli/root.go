// Package cli is arbor's command line: one cobra command per file, each a
// thin front end over internal/app. Run returns the process exit code:
// 0 success, 1 agent or model error, 2 usage or configuration error,
// 130 interrupted.
package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/arbor-run/arbor/internal/permission"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/config"
	"github.com/arbor-run/arbor/internal/protocol"
	"github.com/arbor-run/arbor/internal/protocol/acp"
	"github.com/arbor-run/arbor/internal/protocol/dialect"
)

// Exit codes.
const (
	ExitOK          = 0
	ExitFailure     = 1
	ExitUsage       = 2
	ExitInterrupted = 130
)

// Streams are the process's standard streams.
type Streams struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
}

// exitError carries an exit code out of a command.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}
func (e *exitError) Unwrap() error { return e.err }

// globals are the persistent flags every command shares.
type globals struct {
	model     string
	mode      string
	store     string
	workspace string
	stderr    io.Writer
	// mcp holds stream-json's --mcp-config servers and --strict-mcp-config.
	mcp       map[string]config.MCPServer
	strictMCP bool
	// sandbox is --sandbox; sandboxDefault is the mode of a command that
	// runs agents (auto) when neither the flag, ARBOR_SANDBOX nor the
	// config sets one ("" is off).
	sandbox, sandboxDefault string
	// sandboxSettings are the Claude Agent SDK's sandbox option;
	// settingSources its --setting-sources (nil: every project file);
	// addDirs an SDK's additional directories.
	sandboxSettings *config.Sandbox
	settingSources  []string
	addDirs         []string
	cluster         config.Cluster // arbor worker's --lease-ttl, --heartbeat, --poll
}

// runsAgents marks a command whose agents' commands are sandboxed by
// default (sandbox.mode auto).
func (g *globals) runsAgents() { g.sandboxDefault = "auto" }

func (g *globals) open(ctx context.Context) (*app.App, error) { return g.openApp(ctx, false) }

// openStored is open for a command that works on what is already stored:
// a SQLite store that is named but missing is refused, not created
// (app.Options.ExistingStore).
func (g *globals) openStored(ctx context.Context) (*app.App, error) { return g.openApp(ctx, true) }

func (g *globals) openApp(ctx context.Context, existingStore bool) (*app.App, error) {
	a, err := app.Open(ctx, app.Options{
		Workspace: g.workspace,
		Overrides: config.Overrides{Model: g.model, Store: g.store, Mode: g.mode, Sandbox: g.sandbox, SandboxSettings: g.sandboxSettings,
			MCPServers: g.mcp, StrictMCP: g.strictMCP, AddDirs: g.addDirs, Cluster: g.cluster},
		SandboxDefault: g.sandboxDefault, ProjectSources: g.settingSources, Diag: g.stderr, ExistingStore: existingStore,
	})
	if err != nil {
		return nil, classify(err)
	}
	for _, w := range a.Warnings() {
		fmt.Fprintln(g.stderr, "arbor: warning:", w)
	}
	return a, nil
}

// classify maps configuration mistakes to exit code 2.
func classify(err error) error {
	var ee *exitError
	if errors.As(err, &ee) {
		return err
	}
	if errors.Is(err, config.ErrNoModel) || errors.Is(err, config.ErrMissingKey) ||
		errors.Is(err, config.ErrInvalid) || errors.Is(err, app.ErrUsage) || errors.Is(err, permission.ErrRuleFile) {
		return &exitError{code: ExitUsage, err: err}
	}
	return err
}

// Run executes the command line args and returns the exit code.
func Run(ctx context.Context, args []string, s Streams) int {
	if d := dialect.Recognize(args); d != dialect.Spec {
		return runSDK(ctx, d, args, s)
	}
	root := newRoot(s)
	root.SetArgs(args)
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.Err)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(s.Err, "arbor:", ee.err)
		}
		return ee.code
	}
	fmt.Fprintln(s.Err, "arbor:", err)
	// cobra's error for a word that is no command has no type of its own.
	if isUsage(err) || strings.HasPrefix(err.Error(), "unknown command ") {
		return ExitUsage
	}
	return ExitFailure
}

// usageError marks cobra's own flag and argument errors.
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

func isUsage(err error) bool {
	var u usageError
	return errors.As(err, &u)
}

func newRoot(s Streams) *cobra.Command {
	g := &globals{stderr: s.Err}
	root := &cobra.Command{
		Use:   "arbor",
		Short: "LLM agents that build and run their own task trees",
		Long: `arbor runs an LLM agent on a goal in your workspace. The agent reads, edits
and runs things with tools; writes and shell commands ask for your approval
unless --mode or a permission rule allows them. Sessions are stored, so they
can be listed, inspected and continued.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageError{err} })
	pf := root.PersistentFlags()
	pf.StringVarP(&g.model, "model", "m", "", "model as provider/name (anthropic/claude-sonnet-4-5, openai/gpt-5, ollama/qwen3) or script:FILE")
	pf.StringVar(&g.mode, "mode", "", "permission mode: default, auto-edit, trust, plan (read-only) or dont-ask (deny what would ask)")
	pf.StringVar(&g.store, "store", "", "database: a SQLite file (default $XDG_STATE_HOME/arbor/arbor.db) or a postgres:// URL; env ARBOR_STORE")
	pf.StringVarP(&g.workspace, "workspace", "C", "", "workspace directory (default: the current directory)")
	pf.StringVar(&g.sandbox, "sandbox", "", "confine the shell commands of agents: off, auto (the default of commands that run agents) or required; env ARBOR_SANDBOX (docs/sandbox.md)")
	root.AddCommand(commands(g, s)...)
	usageArgs(root)
	return root
}

// usageArgs marks the argument errors of cmd and its subcommands as usage
// errors (exit 2), like flag errors.
func usageArgs(cmd *cobra.Command) {
	if check := cmd.Args; check != nil {
		cmd.Args = func(c *cobra.Command, args []string) error {
			if err := check(c, args); err != nil && !isUsage(err) {
				return usageError{err}
			} else if err != nil {
				return err
			}
			return nil
		}
	}
	for _, sub := range cmd.Commands() {
		usageArgs(sub)
	}
}

// isTerminal reports whether stream (a reader or writer) is an
// interactive terminal, not merely a character device such as /dev/null.
func isTerminal(stream any) bool {
	f, ok := stream.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// newACPCmd is `arbor acp`: an agent for editors (docs/acp.md).
func newACPCmd(g *globals, s Streams) *cobra.Command {
	return &cobra.Command{Use: "acp", Short: "Serve an editor over the Agent Client Protocol on stdin/stdout (docs/acp.md)", Long: acp.Help, Args: cobra.NoArgs, RunE: func(cmd *cobra.Command, _ []string) error {
		g.runsAgents()
		a, err := g.open(cmd.Context())
		if err != nil {
			return err
		}
		defer a.Close()
		in, restore := protocol.Pollable(s.In)
		defer restore()
		return acp.Serve(cmd.Context(), a, in, s.Out, s.Err, acp.Options{Model: g.model, Version: Version})
	}}
}

// writeJSON writes v to w as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
