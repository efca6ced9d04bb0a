package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net"

	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/tool"
	"github.com/arbor-run/arbor/internal/tree"
)

// Node mode of arbor mcp.
//
// `arbor mcp --run RUN --node N` never drives RUN: the process that owns
// the run (its lease) runs every tool call as node N's own agent would,
// and this process forwards the calls over the owner's answer socket
// (named in the lease). A run nobody drives has no node to act as: the
// tools say how to start it.

// remoteTools returns node's tree tools, which forward each call to the
// owner of run id.
func remoteTools(ctx context.Context, a *app.App, e *tree.Engine, id string, node int64) ([]tool.Tool, error) {
	infos := e.ToolInfos(node)
	out := make([]tool.Tool, len(infos))
	for i, info := range infos {
		out[i] = &forwarded{info: info, a: a, run: id, node: node}
	}
	return out, nil
}

// forwarded is a tree tool run by the owner of the run.
type forwarded struct {
	info tool.Info
	a    *app.App
	run  string
	node int64
}

func (f *forwarded) Info() tool.Info                             { return f.info }
func (f *forwarded) Target(json.RawMessage) (tool.Target, error) { return tool.Target{}, nil }

func (f *forwarded) Run(ctx context.Context, c tool.Call) tool.Result {
	l, err := f.a.Store.GetLease(ctx, store.RunLeaseKey(f.run))
	if err != nil {
		return tool.Errorf("run %s is not being driven by any process, so node #%d cannot act; start it with: arbor resume %s", f.run, f.node, f.run)
	}
	addr := l.Addr
	if addr == "" {
		addr = f.a.AnswerSocket(f.run)
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", addr)
	if err != nil {
		return tool.Errorf("the process driving run %s (pid %d on %s) cannot be reached: %v", f.run, l.PID, l.Host, err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	if err := json.NewEncoder(conn).Encode(answerRequest{Node: f.node, Tool: f.info.Name, Args: c.Input}); err != nil {
		return tool.Errorf("send %s to the process driving run %s: %v", f.info.Name, f.run, err)
	}
	var rep answerReply
	if err := json.NewDecoder(conn).Decode(&rep); err != nil {
		return tool.Errorf("the process driving run %s did not answer %s: %v", f.run, f.info.Name, err)
	}
	if rep.Error != "" {
		return tool.Errorf("%s", rep.Error)
	}
	return tool.Result{Content: rep.Content, IsError: rep.IsError}
}

// runNodeTool runs a forwarded tool call in the owner of the run.
func runNodeTool(ctx context.Context, e *tree.Engine, runID string, req answerRequest) answerReply {
	ts, err := e.NodeTools(runID, req.Node)
	if err != nil {
		return answerReply{Error: err.Error()}
	}
	for _, t := range ts {
		if t.Info().Name == req.Tool {
			res := t.Run(ctx, tool.Call{Input: req.Args})
			return answerReply{OK: true, Content: res.Content, IsError: res.IsError}
		}
	}
	return answerReply{Error: fmt.Sprintf("node #%d has no tool %q", req.Node, req.Tool)}
}
