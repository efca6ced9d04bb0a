//go:build !lean

package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/mcpserver"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/tool"
	"github.com/arbor-run/arbor/internal/tree"
	"github.com/arbor-run/arbor/internal/tui"
)

type mcpFlags struct {
	http  string
	token string
	idle  time.Duration
	run   string
	node  string
	goal  string
	yes   bool
	app.Limits
}

func newMCPCmd(g *globals, s Streams) *cobra.Command {
	var f mcpFlags
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the coordination tree to MCP clients (Claude Code, Cursor, …)",
		Long: `Serve arbor's coordination tree as MCP tools, on stdio (default) or over
streamable HTTP (--http 127.0.0.1:PORT).

Root mode (default): the client is the root of a run. spawn, fork and ask
create children that run in arbor's engine with arbor's agent loop, models,
permissions and budgets; wait blocks until they end and returns their
results; complete finishes the run. The first spawn creates the run (named by
--goal); --run RUN attaches to a run an earlier arbor mcp created.

Node mode (--run RUN --node N): the client is node N of a run that another
arbor process drives, and every tool acts with node N's authority, as node N's
own agent would.

A run is driven by one process at a time: while arbor mcp hosts a run,
arbor resume and other arbor mcp --run of it are refused, and the other way
round. Approvals that children need follow --mode and the permission rules;
with --yes they are granted, otherwise refused. Questions of ask nodes are
answered with: arbor answer RUN '#N' "text".

Over HTTP a bind address that is not loopback needs a bearer token (--token
or ` + mcpserver.TokenEnv + `); requests without it get 401.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			g.runsAgents()
			return runMCP(cmd.Context(), g, s, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.http, "http", "", "serve streamable HTTP on this address (host:port) instead of stdio")
	fl.StringVar(&f.token, "token", "", "bearer token HTTP clients must send (env "+mcpserver.TokenEnv+"); required for a non-loopback --http")
	fl.DurationVar(&f.idle, "idle-session", mcpserver.DefaultIdleSession, "with --http: close a client's session after this long without a request (0 = never)")
	fl.StringVar(&f.run, "run", "", "attach to this run instead of creating one on the first spawn")
	fl.StringVar(&f.node, "node", "", "with --run: act as this node (#N) of a run another process drives")
	fl.StringVar(&f.goal, "goal", "", "the goal (title) of the run the first spawn creates")
	fl.BoolVarP(&f.yes, "yes", "y", false, "grant approvals the children's tool calls need (deny rules and workspace limits still apply)")
	fl.Float64Var(&f.BudgetUSD, "budget", 0, "for a new run: stop it when it has cost this many US dollars (0 = no limit)")
	fl.Int64Var(&f.MaxTokens, "max-tokens", 0, "for a new run: stop it when it has used this many tokens (0 = no limit)")
	fl.IntVar(&f.MaxParallel, "max-parallel", 8, "for a new run: agents running at once")
	fl.DurationVar(&f.NodeTimeout, "node-timeout", 0, "for a new run: fail a node whose agent runs longer than this (0 = no limit)")
	fl.IntVar(&f.MaxTurns, "max-turns", 0, "maximum model calls per node turn (default from config, 50)")
	cmd.AddCommand(newMCPListCmd(g))
	return cmd
}

func runMCP(ctx context.Context, g *globals, s Streams, f mcpFlags) error {
	if f.token == "" {
		f.token = os.Getenv(mcpserver.TokenEnv)
	}
	if f.idle < 0 {
		return usageError{fmt.Errorf("--idle-session %s: a negative time", f.idle)}
	}
	if err := f.Check(f.run == ""); err != nil {
		return classify(err)
	}
	var node int64
	if f.node != "" {
		id, err := tree.ParseID(f.node)
		if err != nil {
			return usageError{fmt.Errorf("--node: %w", err)}
		}
		if f.run == "" {
			return usageError{errors.New("--node needs --run: the run the node belongs to")}
		}
		node = id
	}
	if f.http != "" {
		if err := mcpserver.CheckBind(f.http, f.token); err != nil {
			return &exitError{code: ExitUsage, err: err}
		}
	}
	a, err := g.open(ctx)
	if err != nil {
		return err
	}
	defer a.Close()
	e, m, err := a.Engine("", f.MaxTurns)
	if err != nil {
		return classify(err)
	}
	if f.run == "" {
		if err := classify(app.CheckPrice(m, f.BudgetUSD)); err != nil {
			return err
		}
	}
	o := mcpserver.Options{Version: Version, Engine: e, Store: a.Store, Bus: a.Bus}
	// hosted is the run this process hosts and what serves it; a handler
	// may create it while the server shuts down, hence the lock.
	var hosted struct {
		sync.Mutex
		host  *tree.Host
		stops []func()
	}
	defer func() {
		hosted.Lock()
		defer hosted.Unlock()
		// Stop serving answers and approvals before the lease goes.
		for _, stop := range hosted.stops {
			stop()
		}
		if hosted.host != nil {
			hosted.host.Close()
		}
	}()
	open := func(ctx context.Context, id string) (*tree.Host, error) {
		hosted.Lock()
		defer hosted.Unlock()
		h, err := e.Host(ctx, tree.HostOptions{ID: id, Title: f.goal, Model: m.Ref.Ref, Workspace: a.Workspace,
			MaxParallel: f.MaxParallel, BudgetUSD: f.BudgetUSD, MaxTokens: f.MaxTokens, NodeTimeout: f.NodeTimeout})
		if err != nil {
			return nil, err
		}
		// Children's approvals follow --yes; questions go to arbor answer,
		// served while this process owns the run.
		hosted.stops = append(hosted.stops, (&tui.Prompter{Yes: f.yes, ApprovalsOnly: true, RunID: id, Out: s.Err}).Serve(ctx, a.Bus, a.Broker),
			serveAnswers(ctx, a, e, id, s.Err))
		h.Start()
		hosted.host = h
		return h, nil
	}
	switch {
	case node != 0:
		if _, err := a.Store.GetRun(ctx, f.run); err != nil {
			return &exitError{code: ExitFailure, err: fmt.Errorf("run %s: %w", f.run, err)}
		}
		o.Node = node
		o.NodeTools = func(context.Context) ([]tool.Tool, error) { return a.RemoteNodeTools(e, f.run, node), nil }
	case f.run != "":
		r, err := a.Store.GetRun(ctx, f.run)
		if err != nil {
			return &exitError{code: ExitFailure, err: fmt.Errorf("run %s: %w", f.run, err)}
		}
		if nodes, err := a.Store.Nodes(ctx, r.ID); err == nil && len(nodes) > 0 && nodes[0].Kind != tree.KindHost {
			return &exitError{code: ExitFailure, err: fmt.Errorf("run %s is an arbor run, not one an MCP client hosts: continue it with arbor resume %s, or act as one of its nodes with --node", r.ID, r.ID)}
		}
		h, err := open(ctx, r.ID)
		var held *store.LeaseHeldError
		if errors.As(err, &held) {
			return ownedError("run "+r.ID, held, "")
		}
		if err != nil {
			return &exitError{code: ExitFailure, err: err}
		}
		o.Host = h
	default:
		o.Create = func(ctx context.Context) (*tree.Host, error) {
			return open(context.WithoutCancel(ctx), app.NewID())
		}
	}
	srv := mcpserver.New(o)
	defer srv.Close()
	if f.http != "" {
		if err := mcpserver.ServeHTTP(ctx, srv.MCP(), f.http, f.token, f.idle, s.Err); err != nil {
			return &exitError{code: ExitFailure, err: err}
		}
		return nil
	}
	err = mcpserver.ServeStdio(ctx, srv.MCP(), s.In, s.Out, s.Err)
	if err != nil && ctx.Err() == nil && !errors.Is(err, io.EOF) {
		return &exitError{code: ExitFailure, err: fmt.Errorf("mcp: %w", err)}
	}
	return nil
}
