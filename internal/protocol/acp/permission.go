package acp

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/tool"
)

// The options of a permission request, by id.
const (
	optAllow       = "allow"
	optAllowAlways = "allow_always"
	optReject      = "reject"
)

var permissionOptions = []permissionOption{
	{OptionID: optAllow, Name: "Allow", Kind: "allow_once"},
	{OptionID: optAllowAlways, Name: "Always allow in this session", Kind: "allow_always"},
	{OptionID: optReject, Name: "Reject", Kind: "reject_once"},
}

// interaction asks the client about one of the session's interactions on
// a goroutine of its own, which Serve waits for: an approval becomes
// session/request_permission. A question (ask_user is not offered, but a
// tree node's may reach here) is declined at once: ACP's stable protocol
// has no way to put one to the user.
func (s *Server) interaction(ss *session, in agent.Interaction) {
	if in.Kind != agent.KindApproval || in.Approval == nil {
		if in.Kind == agent.KindQuestion {
			_ = s.app.Broker.Resolve(in.ID, agent.Response{Answer: &tool.Answer{Declined: true}})
		}
		return
	}
	ctx, cancel := context.WithCancel(s.ctx)
	s.mu.Lock()
	if s.closing { // Serve waits for its work already: nobody can answer
		s.mu.Unlock()
		cancel()
		_ = s.app.Broker.Resolve(in.ID, agent.Response{Approval: &tool.Approval{Message: "the client disconnected"}})
		return
	}
	s.asks[in.ID] = cancel
	s.work.Add(1) // under mu: before Serve sets closing, so before its Wait
	s.mu.Unlock()
	go func() {
		defer s.work.Done()
		defer func() {
			cancel()
			s.mu.Lock()
			delete(s.asks, in.ID)
			s.mu.Unlock()
		}()
		req := *in.Approval
		a := s.askPermission(ctx, ss, req, strings.TrimPrefix(in.SessionID, ss.id+"."))
		// The interaction may have ended meanwhile (the prompt was
		// cancelled): then there is nothing to resolve.
		if err := s.app.Broker.Resolve(in.ID, agent.Response{Approval: &a}); err != nil && !errors.Is(err, agent.ErrUnknownInteraction) {
			fmt.Fprintf(s.diag, "arbor: acp: permission %s: %v\n", in.ID, err)
		}
	}()
}

// askPermission puts req to the client and returns its answer; a client
// that cannot answer (it disconnected) refuses.
// node names the sub-agent (its node id) whose call it is, or is the
// session's id for the session's own calls.
func (s *Server) askPermission(ctx context.Context, ss *session, req tool.ApprovalRequest, node string) tool.Approval {
	call := ss.toolCall(req.CallID, req.Tool, req.Input)
	if node != ss.id {
		call.Title = "sub-agent #" + node + ": " + call.Title
	}
	tc := permissionToolCall{ToolCallID: call.ToolCallID, Title: call.Title, Kind: call.Kind, Status: "pending",
		Content: call.ToolContent, Locations: call.Locations, RawInput: call.RawInput}
	var resp requestPermissionResponse
	err := s.conn.call(ctx, "session/request_permission", requestPermissionRequest{SessionID: ss.id, ToolCall: tc, Options: permissionOptions}, &resp)
	switch {
	case err != nil:
		return tool.Approval{Message: fmt.Sprintf("not allowed: the editor gave no answer (%v)", err)}
	case resp.Outcome.Outcome == "cancelled":
		return tool.Approval{Message: "not allowed: the prompt was cancelled"}
	case resp.Outcome.OptionID == optAllow:
		return tool.Approval{Allow: true}
	case resp.Outcome.OptionID == optAllowAlways:
		return tool.Approval{Allow: true, RememberScope: "session"}
	}
	return tool.Approval{Message: "the user rejected this call"}
}

// clientFiles is tool.Files over the client's fs/read_text_file and
// fs/write_text_file: the editor's buffers, unsaved changes included.
type clientFiles struct{ ss *session }

func (f clientFiles) ReadTextFile(ctx context.Context, path string) (string, error) {
	var resp readTextFileResponse
	err := f.ss.srv.conn.call(ctx, "fs/read_text_file", readTextFileRequest{SessionID: f.ss.id, Path: path}, &resp)
	return resp.Content, err
}

func (f clientFiles) WriteTextFile(ctx context.Context, path, content string) error {
	return f.ss.srv.conn.call(ctx, "fs/write_text_file", writeTextFileRequest{SessionID: f.ss.id, Path: path, Content: content}, nil)
}
