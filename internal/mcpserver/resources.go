package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/tree"
)

// Resources.
//
// arbor://runs lists the runs of the store (JSON); arbor://runs/{id}/tree
// is one run's tree as read_tree prints it. Both can be subscribed to: a
// client is told (notifications/resources/updated) when a run this
// process drives or hosts changes. Runs driven by other processes are read
// from the store when asked, but announce no updates here.

const (
	runsURI      = "arbor://runs"
	treeTemplate = "arbor://runs/{id}/tree"
)

func treeURI(run string) string { return "arbor://runs/" + run + "/tree" }

// runEntry is one run in arbor://runs.
type runEntry struct {
	ID        string          `json:"id"`
	Goal      string          `json:"goal"`
	Status    store.RunStatus `json:"status"`
	Model     string          `json:"model,omitempty"`
	Result    string          `json:"result,omitempty"`
	Error     string          `json:"error,omitempty"`
	CreatedAt time.Time       `json:"created_at"`
	UpdatedAt time.Time       `json:"updated_at"`
	Tree      string          `json:"tree"`
}

func (s *Server) addResources() {
	s.srv.AddResource(&mcp.Resource{URI: runsURI, Name: "runs", MIMEType: "application/json",
		Description: "The runs of arbor's store, newest first: id, goal, status, result, and the URI of each run's tree."},
		s.readRuns)
	s.srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: treeTemplate, Name: "run tree", MIMEType: "text/plain",
		Description: "One run's coordination tree, one line per node, as read_tree shows it."},
		s.readTree)
}

func (s *Server) readRuns(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	rs, err := s.o.Store.ListRuns(ctx, 0)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	out := make([]runEntry, len(rs))
	for i, r := range rs {
		out[i] = runEntry{ID: r.ID, Goal: r.Goal, Status: r.Status, Model: r.Model, Result: r.Result, Error: r.Error,
			CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt, Tree: treeURI(r.ID)}
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: runsURI, MIMEType: "application/json", Text: string(b)}}}, nil
}

func (s *Server) readTree(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	id, ok := strings.CutPrefix(req.Params.URI, "arbor://runs/")
	if id, ok = strings.CutSuffix(id, "/tree"); !ok || id == "" || strings.Contains(id, "/") {
		return nil, mcp.ResourceNotFoundError(req.Params.URI)
	}
	r, err := s.o.Store.GetRun(ctx, id)
	if err != nil {
		return nil, mcp.ResourceNotFoundError(req.Params.URI)
	}
	nodes, err := s.o.Store.Nodes(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("read run %s: %w", id, err)
	}
	text := fmt.Sprintf("run %s [%s]\n%s", r.ID, r.Status, tree.Render(nodes))
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/plain", Text: text}}}, nil
}

// onEvent turns the tree's events into resource updates. It runs on the
// bus subscription's own goroutine, so writing to clients here holds up
// nobody else.
func (s *Server) onEvent(ev agent.Event) {
	switch ev := ev.(type) {
	case *tree.NodeChanged:
		s.notify(treeURI(ev.RunID))
		if ev.Node.ID == 1 {
			s.notify(runsURI)
		}
	case *tree.RunFinished:
		s.notify(treeURI(ev.RunID))
		s.notify(runsURI)
	}
}

func (s *Server) notify(uri string) {
	_ = s.srv.ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: uri})
}
