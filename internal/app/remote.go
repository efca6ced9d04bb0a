package app

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/arbor-run/arbor/internal/owner"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/tool"
	"github.com/arbor-run/arbor/internal/tree"
)

// Node mode of arbor mcp (RemoteNodeTools).
//
// `arbor mcp --run RUN --node N` never drives RUN: the process that owns
// the run (its lease) runs every tool call as node N's own agent would,
// and this process forwards the calls over the owner's answer socket
// (named in the lease). A run nobody drives has no node to act as: the
// tools say how to start it.

// RemoteNodeTools returns node's tree tools of run id, which forward each
// call to the process that drives the run.
func (a *App) RemoteNodeTools(e *tree.Engine, id string, node int64) []tool.Tool {
	infos := e.ToolInfos(node)
	out := make([]tool.Tool, len(infos))
	for i, info := range infos {
		out[i] = &forwarded{info: info, a: a, run: id, node: node}
	}
	return out
}

// forwarded is a tree tool run by the owner of the run.
type forwarded struct {
	info tool.Info
	a    *App
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
	content, isError, err := owner.Client{Socket: addr}.Tool(ctx, f.node, f.info.Name, c.Input)
	var refused *owner.RemoteError
	switch {
	case errors.As(err, &refused):
		return tool.Errorf("%s", refused.Message)
	case errors.Is(err, owner.ErrUnreachable):
		return tool.Errorf("the process driving run %s (pid %d on %s) cannot be reached: %v", f.run, l.PID, l.Host, err)
	case err != nil:
		return tool.Errorf("the process driving run %s did not answer %s: %v", f.run, f.info.Name, err)
	}
	return tool.Result{Content: content, IsError: isError}
}
