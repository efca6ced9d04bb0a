// Package mcpserver serves arbor's coordination tree to MCP clients
// (`arbor mcp`): the tree tools as MCP tools and the runs as resources.
//
// It has two modes. In root mode the client is the host of a hosted run
// (tree.Host): it gets the root's tree tools plus complete and wait, and
// its children run in arbor's engine. In node mode it acts as one node of
// a run, with exactly that node's tree tools and authority.
//
// Invariants: every tool is a tree tool (tree.Host.ExternalTools or
// tree.Engine.NodeTools), so names, descriptions, schemas and checks are
// the in-process agents' own; the server never drives a run itself — the
// Host it is given (or creates) holds the run's lease, and node tools come
// from whoever drives the run.
package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/tool"
	"github.com/arbor-run/arbor/internal/tree"
)

// Store is what the resources read.
type Store interface {
	GetRun(ctx context.Context, id string) (store.Run, error)
	ListRuns(ctx context.Context, limit int) ([]store.Run, error)
	Nodes(ctx context.Context, runID string) ([]store.Node, error)
}

// Options configure a Server.
type Options struct {
	// Version is reported to clients.
	Version string
	Engine  *tree.Engine
	Store   Store
	// Bus carries the tree's events, for resource updates.
	Bus *agent.Bus

	// Root mode (Node == 0). Host is the hosted run the client works;
	// when nil, Create makes one on the first spawn, fork or ask.
	Host   *tree.Host
	Create func(ctx context.Context) (*tree.Host, error)

	// Node mode: the client works as node Node, with NodeTools' tools.
	Node      int64
	NodeTools func(ctx context.Context) ([]tool.Tool, error)
}

// Server is an MCP server over one engine.
type Server struct {
	o   Options
	srv *mcp.Server
	sub *agent.Subscription

	mu    sync.Mutex // guards host and tools; held while Create makes the run
	host  *tree.Host
	tools map[string]tool.Tool
}

// New returns a server with its tools and resources registered.
func New(o Options) *Server {
	s := &Server{o: o, host: o.Host}
	s.srv = mcp.NewServer(&mcp.Implementation{Name: "arbor", Version: o.Version}, &mcp.ServerOptions{
		Instructions:       instructions(o.Node),
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	infos := o.Engine.ExternalToolInfos()
	if o.Node != 0 {
		infos = o.Engine.ToolInfos(o.Node)
	}
	for _, info := range infos {
		s.srv.AddTool(&mcp.Tool{Name: info.Name, Description: info.Description, InputSchema: json.RawMessage(info.Schema)}, s.handler(info.Name))
	}
	s.addResources()
	if o.Bus != nil {
		s.sub = o.Bus.Subscribe(s.onEvent)
	}
	return s
}

// MCP returns the SDK server, for Run with a transport or an HTTP handler.
func (s *Server) MCP() *mcp.Server { return s.srv }

// Close stops the resource updates. The Host, if any, is the caller's to
// close (HostOf returns the one Create made).
func (s *Server) Close() {
	if s.sub != nil {
		s.sub.Close()
	}
}

// HostOf returns the hosted run the server works, nil before there is one.
func (s *Server) HostOf() *tree.Host {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.host
}

func instructions(node int64) string {
	if node != 0 {
		return fmt.Sprintf("You are node #%d of an arbor coordination tree. These tools act with your node's authority: spawn and fork create your children, stop/pause/resume/modify act on your subtree, complete finishes your task.", node)
	}
	return "arbor runs a coordination tree for you: spawn and fork start child agents that work in parallel (blocked_by orders them and hands them each other's results), ask puts a question to the person, wait blocks until children end and returns their results, read_tree shows the tree, complete finishes the run."
}

// handler runs tree tool name for an MCP call.
func (s *Server) handler(name string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		t, res := s.tool(ctx, name)
		if t != nil {
			if tok := req.Params.GetProgressToken(); tok != nil && req.Session != nil {
				ctx = tree.WithProgress(ctx, func(p tree.WaitProgress) {
					msg := fmt.Sprintf("%d of %d ended", p.Ended, p.Total)
					if p.Last.ID != 0 {
						msg += fmt.Sprintf("; #%d is %s", p.Last.ID, p.Last.State)
					}
					_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
						ProgressToken: tok, Progress: float64(p.Ended), Total: float64(p.Total), Message: msg})
				})
			}
			res = t.Run(ctx, tool.Call{Input: req.Params.Arguments})
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: res.Content}}, IsError: res.IsError}, nil
	}
}

// tool finds tool name: node mode's, or the hosted run's, creating the
// run on its first spawn, fork or ask. A nil tool comes with the error
// result to return.
func (s *Server) tool(ctx context.Context, name string) (tool.Tool, tool.Result) {
	if s.o.Node != 0 {
		ts, err := s.o.NodeTools(ctx)
		if err != nil {
			return nil, tool.Errorf("%v", err)
		}
		return find(ts, name)
	}
	s.mu.Lock()
	created := false
	defer func() {
		s.mu.Unlock()
		if created { // announced outside the lock: it writes to the clients
			s.notify(runsURI)
		}
	}()
	if s.host == nil {
		if name != "spawn" && name != "fork" && name != "ask" || s.o.Create == nil {
			return nil, tool.Errorf("there is no run yet: spawn, fork or ask starts one")
		}
		h, err := s.o.Create(ctx)
		if err != nil {
			return nil, tool.Errorf("could not start a run: %v", err)
		}
		s.host, created = h, true
	}
	if s.tools == nil {
		s.tools = map[string]tool.Tool{}
		for _, t := range s.host.ExternalTools() {
			s.tools[tool.Name(t)] = t
		}
	}
	if t, ok := s.tools[name]; ok {
		return t, tool.Result{}
	}
	return nil, tool.Errorf("no tool %q", name)
}

func find(ts []tool.Tool, name string) (tool.Tool, tool.Result) {
	for _, t := range ts {
		if tool.Name(t) == name {
			return t, tool.Result{}
		}
	}
	return nil, tool.Errorf("no tool %q", name)
}
