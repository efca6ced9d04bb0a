package mcpserver_test

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arbor-run/arbor/internal/mcpserver"
	"github.com/arbor-run/arbor/internal/tool"
	"github.com/arbor-run/arbor/internal/tree"
	"github.com/arbor-run/arbor/internal/tree/treetest"
)

// TestAuthorityTable runs the shared table of authority and dependency
// cases (the same as internal/tree's in-process tools) through MCP: #1 as
// a root-mode client, every other node as a node-mode client of its own.
func TestAuthorityTable(t *testing.T) {
	t.Parallel()
	b := setup(t, treetest.Responder(nil))
	h, err := b.engine.Host(b.ctx, tree.HostOptions{ID: "mcp-authority", Workspace: b.app.Workspace})
	if err != nil {
		t.Fatal(err)
	}
	h.Start()
	defer h.Close()
	clients := map[int64]*mcp.ClientSession{}
	client := func(t *testing.T, caller int64) *mcp.ClientSession {
		if cs, ok := clients[caller]; ok {
			return cs
		}
		o := mcpserver.Options{Version: "test", Engine: b.engine, Store: b.app.Store, Host: h}
		if caller != 1 {
			o = mcpserver.Options{Version: "test", Engine: b.engine, Store: b.app.Store, Node: caller,
				NodeTools: func(context.Context) ([]tool.Tool, error) { return h.NodeTools(caller) }}
		}
		s := mcpserver.New(o)
		t.Cleanup(s.Close)
		clients[caller] = b.client(t, s, nil)
		return clients[caller]
	}
	treetest.RunAuthority(t, func(t *testing.T, caller int64, name string, args map[string]any) (string, bool) {
		return call(t, client(t, caller), name, args)
	})
}
