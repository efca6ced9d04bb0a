package tree_test

import (
	"encoding/json"
	"testing"

	"github.com/arbor-run/arbor/internal/tool"
	"github.com/arbor-run/arbor/internal/tree"
	"github.com/arbor-run/arbor/internal/tree/treetest"
)

// TestAuthorityTable runs the shared table of authority and dependency
// cases against the in-process tree tools: the host's for #1, each node's
// own (what its agent gets) for the others. internal/mcpserver runs the
// same table through MCP.
func TestAuthorityTable(t *testing.T) {
	t.Parallel()
	b := setup(t, script{})
	h, err := b.engine.Host(b.ctx, tree.HostOptions{ID: "hosted-authority", SessionID: "hosted-authority", Workspace: b.app.Workspace})
	if err != nil {
		t.Fatal(err)
	}
	h.Start()
	defer h.Close()
	treetest.RunAuthority(t, func(t *testing.T, caller int64, name string, args map[string]any) (string, bool) {
		ts := h.Tools()
		if caller != 1 {
			if ts, err = h.NodeTools(caller); err != nil {
				t.Fatalf("tools of #%d: %v", caller, err)
			}
		}
		input, _ := json.Marshal(args)
		for _, tl := range ts {
			if tl.Info().Name == name {
				res := tl.Run(b.ctx, tool.Call{Input: input})
				return res.Content, res.IsError
			}
		}
		t.Fatalf("#%d has no tool %s", caller, name)
		return "", false
	})
}
