package acp

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/tool"
	"github.com/arbor-run/arbor/internal/tree"
)

// translate turns the bus's events into session/update notifications. It
// runs on the subscription's own goroutine, one event at a time, and never
// waits on the client: lines go to the outbox, permission requests to
// goroutines of their own.
func (s *Server) translate(e agent.Event) {
	if nc, ok := e.(*tree.NodeChanged); ok {
		if ss := s.session(nc.RunID); ss != nil && nc.Node.ID != 1 {
			s.update(ss.id, ss.planWith(nc.Node))
		}
		return
	}
	id := agent.MetaOf(e).SessionID
	ss := s.session(id)
	if ss == nil {
		// A child node's agent ("<session>.<node>"): what it asks a
		// person goes to its session's client; the rest is the plan's.
		main, _, child := strings.Cut(id, ".")
		if in, ok := e.(*agent.InteractionRequested); ok && child {
			if ss = s.session(main); ss != nil {
				s.interaction(ss, in.Interaction)
			}
		}
		s.resolved(e)
		return
	}
	switch e := e.(type) {
	case *agent.TextDelta:
		s.update(ss.id, chunk(updateAgentChunk, e.Text))
	case *agent.ThinkingDelta:
		s.update(ss.id, chunk(updateThoughtChunk, e.Text))
	case *agent.ToolCallStarted:
		u := ss.toolCall(e.CallID, e.Tool, e.Input)
		u.SessionUpdate, u.Status = updateToolCall, "in_progress"
		s.update(ss.id, u)
	case *agent.ToolCallFinished:
		status := "completed"
		if e.IsError {
			status = "failed"
		}
		s.update(ss.id, sessionUpdate{SessionUpdate: updateToolCallUpdate, ToolCallID: e.CallID, Status: status,
			ToolContent: []toolCallContent{{Type: "content", Content: ptr(textBlock(e.Result))}}})
	case *agent.InteractionRequested:
		s.interaction(ss, e.Interaction)
	case *agent.InteractionResolved:
		s.resolved(e)
	}
}

// resolved ends the wait for the client's answer to an interaction that
// ended otherwise (the turn was cancelled, the deadline passed): the
// answer is moot.
func (s *Server) resolved(e agent.Event) {
	r, ok := e.(*agent.InteractionResolved)
	if !ok || r.Resolution == "answered" {
		return
	}
	s.mu.Lock()
	cancel := s.asks[r.ID]
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// update sends one session/update.
func (s *Server) update(sessionID string, u sessionUpdate) {
	s.send(s.conn.notify("session/update", sessionNotification{SessionID: sessionID, Update: u}))
}

func chunk(kind, text string) sessionUpdate {
	return sessionUpdate{SessionUpdate: kind, Content: ptr(textBlock(text))}
}

func ptr[T any](v T) *T { return &v }

// toolCall describes a call: a title, ACP's kind, the files it touches
// and, for write_file and edit, the change as diffs.
func (ss *session) toolCall(id, name string, input json.RawMessage) sessionUpdate {
	u := sessionUpdate{ToolCallID: id, Title: name, Kind: "other", RawInput: input}
	var args struct {
		Path      string `json:"path"`
		Content   string `json:"content"`
		OldString string `json:"old_string"`
		NewString string `json:"new_string"`
		Edits     []struct {
			OldString string `json:"old_string"`
			NewString string `json:"new_string"`
		} `json:"edits"`
		Command string `json:"command"`
		Pattern string `json:"pattern"`
		Goal    string `json:"goal"`
	}
	_ = json.Unmarshal(input, &args) // a tool whose input is not an object has no such fields
	if t, ok := ss.sess.Tools.Lookup(name); ok {
		switch t.Info().Kind {
		case tool.KindRead:
			u.Kind = "read"
		case tool.KindWrite:
			u.Kind = "edit"
		case tool.KindExecute:
			u.Kind = "execute"
		case tool.KindInteract:
			u.Kind = "think"
		}
	}
	switch name {
	case "grep", "glob":
		u.Kind = "search"
	case "delete":
		u.Kind = "delete"
	case "web_fetch":
		u.Kind = "fetch"
	case "spawn", "fork":
		u.Kind = "other"
	}
	path := args.Path
	if path != "" && !strings.HasPrefix(path, "/") {
		path = ss.work.Workspace + "/" + path
	}
	switch {
	case args.Command != "":
		u.Title = fmt.Sprintf("%s: %s", name, args.Command)
	case args.Path != "":
		u.Title = fmt.Sprintf("%s %s", name, args.Path)
		u.Locations = []location{{Path: path}}
	case args.Goal != "":
		u.Title = fmt.Sprintf("%s: %s", name, args.Goal)
	case args.Pattern != "":
		u.Title = fmt.Sprintf("%s %s", name, args.Pattern)
	}
	switch name {
	case "write_file":
		u.ToolContent = []toolCallContent{{Type: "diff", Path: path, NewText: ptr(args.Content)}}
	case "edit":
		if len(args.Edits) == 0 {
			u.ToolContent = []toolCallContent{{Type: "diff", Path: path, OldText: ptr(args.OldString), NewText: ptr(args.NewString)}}
		}
		for _, e := range args.Edits {
			u.ToolContent = append(u.ToolContent, toolCallContent{Type: "diff", Path: path, OldText: ptr(e.OldString), NewText: ptr(e.NewString)})
		}
	}
	return u
}

// planWith records n and returns the plan: the tree's nodes but the
// root, in creation order, each with its state.
func (ss *session) planWith(n tree.NodeView) sessionUpdate {
	ss.mu.Lock()
	if old, ok := ss.nodes[n.ID]; n.ParentID == 1 && n.State.Terminal() && (!ok || !old.State.Terminal()) {
		out := n.Result
		if n.Error != "" {
			out = "error: " + n.Error
		}
		ss.ended = append(ss.ended, fmt.Sprintf("[sub-agent %d %q ended %s] %s", n.ID, n.Goal, n.State, out))
	}
	ss.nodes[n.ID] = n
	ids := make([]int64, 0, len(ss.nodes))
	for id := range ss.nodes {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	entries := make([]planEntry, len(ids))
	for i, id := range ids {
		entries[i] = planEntry{Content: ss.nodes[id].Goal, Priority: "medium", Status: planStatus(ss.nodes[id].State)}
	}
	ss.mu.Unlock()
	return sessionUpdate{SessionUpdate: updatePlan, Entries: entries}
}

// plan is the current plan, nil when the tree has no nodes but its root.
func (ss *session) plan() *sessionUpdate {
	ss.mu.Lock()
	n := len(ss.nodes)
	var any tree.NodeView
	for _, v := range ss.nodes {
		any = v
		break
	}
	ss.mu.Unlock()
	if n == 0 {
		return nil
	}
	u := ss.planWith(any)
	return &u
}

// planStatus maps a node's state to a plan entry's: ACP has pending,
// in_progress and completed; a node that ended otherwise (failed,
// cancelled) is done with as completed, its entry's text saying how.
func planStatus(st tree.NodeState) string {
	switch {
	case st == tree.StatePending || st == tree.StatePaused:
		return "pending"
	case st.Terminal():
		return "completed"
	}
	return "in_progress"
}

// replay sends a loaded session's conversation as updates, as session/load
// asks: user and agent messages as chunks, tool calls with their results,
// then the plan.
func (ss *session) replay() {
	s := ss.srv
	for _, m := range ss.sess.Agent.History() {
		for _, p := range m.Parts {
			switch {
			case p.Type == llm.PartText && m.Role == llm.RoleUser:
				s.update(ss.id, chunk(updateUserChunk, p.Text))
			case p.Type == llm.PartText:
				s.update(ss.id, chunk(updateAgentChunk, p.Text))
			case p.Type == llm.PartThinking:
				s.update(ss.id, chunk(updateThoughtChunk, p.Text))
			case p.Type == llm.PartToolCall && p.ToolCall != nil:
				u := ss.toolCall(p.ToolCall.ID, p.ToolCall.Name, p.ToolCall.Input)
				u.SessionUpdate, u.Status = updateToolCall, "in_progress"
				s.update(ss.id, u)
			case p.Type == llm.PartToolResult && p.ToolResult != nil:
				status := "completed"
				if p.ToolResult.IsError {
					status = "failed"
				}
				s.update(ss.id, sessionUpdate{SessionUpdate: updateToolCallUpdate, ToolCallID: p.ToolResult.CallID, Status: status,
					ToolContent: []toolCallContent{{Type: "content", Content: ptr(textBlock(p.ToolResult.Content))}}})
			}
		}
	}
	if u := ss.plan(); u != nil {
		s.update(ss.id, *u)
	}
}
