package mcpclient

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/arbor-run/arbor/internal/tool"
)

// mcpTool is one tool of a server. Its calls go to whatever session the
// server has when they run.
type mcpTool struct {
	srv    *server
	remote string
	info   tool.Info
}

func newMCPTool(s *server, t *mcp.Tool) *mcpTool {
	schema, note := inputSchema(t.InputSchema)
	desc := t.Description
	if desc == "" {
		desc = t.Title
	}
	return &mcpTool{srv: s, remote: t.Name, info: tool.Info{
		Name: ToolName(s.name, t.Name), Description: description(desc, note), Schema: schema,
		// Unknown effects: permission asks by default, like a command.
		Kind: tool.KindExecute,
	}}
}

func (t *mcpTool) Info() tool.Info { return t.info }

// Target is empty: rules name MCP tools whole (mcp__server,
// mcp__server__*, mcp__server__tool).
func (t *mcpTool) Target(input json.RawMessage) (tool.Target, error) {
	if len(input) > 0 {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(input, &obj); err != nil {
			return tool.Target{}, err
		}
	}
	return tool.Target{}, nil
}

func (t *mcpTool) Run(ctx context.Context, call tool.Call) tool.Result {
	cs, err := t.srv.current()
	if err != nil {
		return tool.Errorf("%s was not called: %v; try again later", t.info.Name, err)
	}
	args := call.Input
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	oversized := t.srv.oversized.Load()
	cctx := ctx
	if d := t.srv.spec.ToolTimeout; d > 0 {
		var cancel context.CancelFunc
		cctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: t.remote, Arguments: args})
	if err != nil {
		if ctx.Err() != nil {
			return tool.Errorf("cancelled")
		}
		if cctx.Err() != nil {
			return tool.Errorf("MCP server %s: %s did not answer within %v (its tool_timeout); the call was cancelled", t.srv.name, t.remote, t.srv.spec.ToolTimeout)
		}
		if errors.Is(err, ErrMessageTooLarge) || t.srv.oversized.Load() != oversized {
			return tool.Errorf("MCP server %s: calling %s failed: its answer was larger than %d MiB, the most arbor reads in one message; ask it for less (the server is restarted)", t.srv.name, t.remote, maxMessage>>20)
		}
		return tool.Errorf("MCP server %s: calling %s failed: %s", t.srv.name, t.remote, t.srv.scrub(err.Error()))
	}
	return convertResult(res)
}
