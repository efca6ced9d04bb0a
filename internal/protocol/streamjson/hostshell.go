package streamjson

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/arbor-run/arbor/internal/tool"
)

// The host-executed shell flow. A client that runs shell commands itself
// (a terminal shell embedding arbor) says so in its initialize request:
//
//	{"subtype":"initialize","capabilities":{"can_execute_shell":true}}
//
// The session's shell tool then asks the client to run each command (after
// the usual permission check) with a control_request
//
//	{"subtype":"host_shell","tool_use_id":…,"command":…,"cwd":…,"timeout":…}
//
// and the client answers with a control_response whose body is
// {"stdout","stderr","exit_code"}, or with a user message holding a
// tool_result block for that tool_use_id. Either becomes the tool's result.

type hostShellArgs struct {
	Command     string `json:"command" jsonschema_description:"The command line, run by the user's shell in its current directory."`
	Timeout     int    `json:"timeout,omitempty" jsonschema:"minimum=0" jsonschema_description:"Timeout in seconds."`
	Description string `json:"description,omitempty" jsonschema_description:"A few words saying what the command does, shown to the user."`
}

func (a hostShellArgs) Target() tool.Target { return tool.Target{Command: a.Command} }

type hostShellReply struct {
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
	ExitCode int    `json:"exit_code"`
	// Content and IsError come from a tool_result block sent as a user
	// message instead.
	Content *string `json:"-"`
	IsError bool    `json:"-"`
}

// hostShells holds the commands waiting for the client, by tool use id.
type hostShells struct {
	mu      sync.Mutex // guards waiting
	waiting map[string]chan hostShellReply
}

func (h *hostShells) wait(id string) chan hostShellReply {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.waiting == nil {
		h.waiting = map[string]chan hostShellReply{}
	}
	ch := make(chan hostShellReply, 1)
	h.waiting[id] = ch
	return ch
}

// deliver hands the client's result for tool use id over; false when
// nothing waits for it.
func (h *hostShells) deliver(id string, r hostShellReply) bool {
	h.mu.Lock()
	ch, ok := h.waiting[id]
	delete(h.waiting, id)
	h.mu.Unlock()
	if ok {
		ch <- r
	}
	return ok
}

func (h *hostShells) drop(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.waiting, id)
}

const hostShellDescription = `Run a shell command in the user's own shell (the client runs it and returns its output).`

// hostShellTool is the shell tool of a session whose client runs commands.
func (s *Server) hostShellTool() tool.Tool {
	return tool.New("shell", hostShellDescription, tool.KindExecute, func(ctx context.Context, c tool.Call, a hostShellArgs) tool.Result {
		rid := "arbor-shell-" + c.ID
		ch := s.shells.wait(rid)
		defer s.shells.drop(rid)
		// The request follows the assistant line that holds the call.
		s.events.Flush()
		s.write(controlRequestOut{Type: "control_request", RequestID: rid, Request: outRequest{
			Subtype: "host_shell", ToolUseID: c.ID, Command: a.Command, Cwd: s.app.Workspace, Timeout: a.Timeout,
		}})
		select {
		case <-ctx.Done():
			return tool.Errorf("cancelled while the client ran the command")
		case <-s.inputDone:
			return tool.Errorf("the client went away before returning the command's result")
		case r := <-ch:
			if r.Content != nil {
				return tool.Result{Content: *r.Content, IsError: r.IsError}
			}
			var b strings.Builder
			b.WriteString(r.Stdout)
			if r.Stderr != "" {
				if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
					b.WriteString("\n")
				}
				b.WriteString(r.Stderr)
			}
			fmt.Fprintf(&b, "\nexit code %d", r.ExitCode)
			return tool.Result{Content: strings.TrimLeft(b.String(), "\n"), IsError: r.ExitCode != 0}
		}
	})
}

// hostResult takes a control_response answering a host_shell request.
func (s *Server) hostResult(rid string, body json.RawMessage, errMsg string) bool {
	var r hostShellReply
	if errMsg != "" {
		msg := "the client could not run the command: " + errMsg
		r = hostShellReply{Content: &msg, IsError: true}
	} else if err := json.Unmarshal(body, &r); err != nil {
		msg := "the client's result is malformed: " + err.Error()
		r = hostShellReply{Content: &msg, IsError: true}
	}
	return s.shells.deliver(rid, r)
}

// hostResults takes tool_result blocks of a user message that answer host
// shell commands; it reports whether the message was only that.
func (s *Server) hostResults(u userInput) bool {
	var blocks []contentBlock
	if json.Unmarshal(u.Message.Content, &blocks) != nil || len(blocks) == 0 {
		return false
	}
	for _, b := range blocks {
		if b.Type != "tool_result" {
			return false
		}
	}
	for _, b := range blocks {
		var text string
		if json.Unmarshal(b.Content, &text) != nil {
			var parts []contentBlock
			_ = json.Unmarshal(b.Content, &parts)
			for _, p := range parts {
				text += p.Text
			}
		}
		if !s.shells.deliver("arbor-shell-"+b.ToolUseID, hostShellReply{Content: &text, IsError: b.IsError}) {
			fmt.Fprintf(s.diag, "arbor: stream-json: tool_result for %q answers no running command; ignored\n", b.ToolUseID)
		}
	}
	return true
}
