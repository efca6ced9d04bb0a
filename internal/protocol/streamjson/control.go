package streamjson

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/permission"
	"github.com/arbor-run/arbor/internal/tool"
)

// capabilities are what arbor declares in its initialize response.
type capabilities struct {
	CanUseTool        bool `json:"can_handle_can_use_tool"`
	HostExecutedShell bool `json:"can_handle_host_executed_shell_tool_result"`
	ShellEvidenceTool bool `json:"can_handle_shell_evidence_tool"`
}

// initializeResponse answers initialize: the spec's capabilities plus the
// fields Claude Agent SDK clients read through their accessors.
type initializeResponse struct {
	Subtype               string         `json:"subtype"`
	Capabilities          capabilities   `json:"capabilities"`
	Commands              []slashCommand `json:"commands"`
	Agents                []string       `json:"agents"`
	OutputStyle           string         `json:"output_style"`
	AvailableOutputStyles []string       `json:"available_output_styles"`
	Models                []modelInfo    `json:"models"`
	Account               accountInfo    `json:"account"`
	PID                   int            `json:"pid"`
	// Whether the launch fields the request carried were taken (absent
	// when it carried none), as Claude Code answers.
	DisallowedToolsApplied *bool `json:"disallowed_tools_applied,omitempty"`
	MCPServersApplied      *bool `json:"mcp_servers_applied,omitempty"`
	// UnfiredHooks lists the hook events of the request that arbor
	// accepted but does not fire yet (arbor's own field).
	UnfiredHooks []string `json:"unfired_hooks,omitempty"`
}

type modelInfo struct {
	Value       string `json:"value"`
	DisplayName string `json:"displayName"`
	Description string `json:"description"`
}

type accountInfo struct {
	APIKeySource string `json:"apiKeySource"`
}

type interruptResponse struct {
	StillQueued []string `json:"still_queued"`
}

type modeResponse struct {
	Mode string `json:"mode"`
}

type modelResponse struct {
	Model string `json:"model"`
}

func (s *Server) succeed(id string, body any) {
	s.write(controlResponseOut{Type: "control_response", Response: responseBody{Subtype: "success", RequestID: id, Response: body}})
}

func (s *Server) fail(id string, err error) {
	s.write(controlResponseOut{Type: "control_response", Response: responseBody{Subtype: "error", RequestID: id, Error: err.Error()}})
}

// errInterrupted is the cause an interrupt cancels the running job with.
var errInterrupted = errors.New("interrupted by the client")

// errDeniedInterrupt is the cause when a can_use_tool denial with
// interrupt ends the turn.
var errDeniedInterrupt = fmt.Errorf("%w: a tool call was denied with interrupt", errInterrupted)

// control answers a client's control request; it reports shutdown. It runs
// on the reader: requests that use the session are queued as runner jobs,
// which answer when they run; the others are answered at once.
func (s *Server) control(ctx context.Context, req controlRequestIn) (shutdown bool) {
	id := req.RequestID
	refused := func(err error) { s.fail(id, err) }
	switch p := req.Request; p.Subtype {
	case "initialize":
		applied, err := s.applyInitialize(p)
		var names []string
		if err == nil {
			names, err = sdkServerNames(p.SDKMCPServers)
		}
		if err == nil {
			err = s.declareSDKServers(names, p.SDKMCPServerManifests)
		}
		if err != nil {
			// The Claude Agent SDK goes on after an initialize error, so
			// every turn fails with it too: nothing asked for is ignored.
			s.mu.Lock()
			s.initErr = err
			s.mu.Unlock()
			s.fail(id, err)
			return false
		}
		s.mu.Lock()
		s.hostShell = p.Capabilities.CanExecuteShell && s.sess == nil
		s.mu.Unlock()
		if len(applied.UnfiredHooks) > 0 {
			fmt.Fprintf(s.diag, "arbor: stream-json: hooks for %s are accepted, but arbor does not fire these events yet\n", strings.Join(applied.UnfiredHooks, ", "))
		}
		if s.opts.Qwen {
			s.succeed(id, s.qwenInitialize(p.Effort))
			return false
		}
		s.succeed(id, initializeResponse{
			Subtype:      "initialize",
			Capabilities: capabilities{CanUseTool: true, HostExecutedShell: true},
			Commands:     s.slashCommands(), Agents: []string{}, OutputStyle: "default", AvailableOutputStyles: []string{"default"},
			Models: s.models(), Account: accountInfo{APIKeySource: s.keySource()}, PID: os.Getpid(),
			DisallowedToolsApplied: applied.DisallowedTools, MCPServersApplied: applied.MCPServers, UnfiredHooks: applied.UnfiredHooks,
		})
		// The session's init line follows when the runner gets to it; a
		// refused one is not missed, as every turn sends it again. Claude
		// Code sends it once per turn only, so its clients get it then.
		// As the spec says, a cosh client without a usable model is asked
		// for credentials during initialize (auth_required, then auth_ok),
		// and system init follows.
		s.submit("session", func(ctx context.Context) {
			sess, err := s.session(ctx)
			if err != nil && !s.sdkLaunch() && needsAuth(err) && s.authenticate(ctx) {
				sess, err = s.session(ctx)
			}
			if err == nil && !s.sdkLaunch() {
				s.write(s.initMessage(sess.ID))
			}
		}, func(error) {})
	case "interrupt":
		// The answer goes first, so the client sees it before the result
		// of the turn it ends: the running one, or, when none runs yet,
		// the first one queued (a prompt the interrupt came right behind).
		// The other queued work stays queued.
		s.succeed(id, interruptResponse{StillQueued: s.stillQueued()})
		if s.interruptQueued() {
			return false
		}
		s.runner.Cancel(errInterrupted)
	case "shutdown":
		s.runner.Cancel(errInterrupted)
		s.succeed(id, nil)
		return true
	case "switch_model", "set_model":
		if p.Model == "" {
			s.fail(id, fmt.Errorf("%s needs a model", p.Subtype))
			return false
		}
		// Queued behind the work already submitted: the turns sent before
		// it finish on the old model, the ones after it use the new one.
		s.submit("model", func(ctx context.Context) {
			ref, err := s.switchModel(ctx, p.Model)
			if err != nil {
				s.fail(id, err)
				return
			}
			s.succeed(id, modelResponse{Model: ref})
			s.write(systemMessage{Type: "system", Subtype: "model_switched", SessionID: s.sessionID(), Model: s.modelName(ref), UUID: newUUID()})
		}, refused)
	case "config_override", "set_permission_mode":
		// Permissions are the app's, not the agent's: applied at once, so
		// they also hold for the turn that is waiting for an approval.
		mode := p.ApprovalMode
		if mode == "" {
			mode = p.Mode
		}
		if err := s.override(mode, p.AllowedTools); err != nil {
			s.fail(id, err)
			return false
		}
		s.succeed(id, modeResponse{Mode: s.modeName()})
	case "mcp_status":
		s.succeed(id, mcpStatusResponse{MCPServers: s.mcpServers()})
	case "supported_commands", "mcp_server_status", "get_context_usage", "set_effort", "get_available_models", "get_usage_info", "continue_last_turn":
		s.qwenControl(id, p) // the Qwen Code SDK's (qwen.go)
	case "mcp_message":
		s.mcpMessage(id, p)
	case "reload_config":
		s.submit("reload", func(context.Context) {
			if err := s.app.Reload(); err != nil {
				s.fail(id, err)
				return
			}
			s.succeed(id, nil)
			s.write(systemMessage{Type: "system", Subtype: "config_reloaded", SessionID: s.sessionID(), UUID: newUUID()})
		}, refused)
	default:
		s.fail(id, fmt.Errorf("unsupported control request subtype: %q", p.Subtype))
	}
	return false
}

func (s *Server) models() []modelInfo {
	out := []modelInfo{}
	for name, p := range s.app.Config().Providers {
		for m := range p.Models {
			ref := name + "/" + m
			out = append(out, modelInfo{Value: ref, DisplayName: ref, Description: p.Type})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Value < out[j].Value })
	return out
}

// switchModel moves the session to model ref for its next steps; it is a
// runner job's, so nothing else drives the agent meanwhile.
func (s *Server) switchModel(ctx context.Context, ref string) (string, error) {
	sess, err := s.session(ctx)
	if err != nil {
		return "", err
	}
	if ref, err = s.resolveAlias(ref); err != nil {
		return "", err
	}
	if s.opts.Qwen && !strings.Contains(ref, "/") && !strings.HasPrefix(ref, "script:") {
		// qwen names a model of the session's provider.
		provider, _, _ := strings.Cut(sess.Model.Ref.Ref, "/")
		ref = provider + "/" + ref
	}
	m, err := s.app.Model(ref)
	if err != nil {
		return "", err
	}
	sess.Agent.SetModel(m.Provider, m.Ref.Name, m.Ref.Ref, m.Ref.Price, m.Ref.ContextWindow)
	sess.Model = m
	return m.Ref.Ref, nil
}

// override applies a runtime approval mode and tools allowed without asking.
func (s *Server) override(mode string, allowed []string) error {
	if mode != "" {
		m, err := permission.ParseMode(mode)
		if err != nil {
			return err
		}
		s.app.Permissions.SetMode(m)
		s.noteMode(mode)
	}
	for _, name := range allowed {
		r, err := permission.ParseRule(name, permission.Allow, permission.ScopeSession)
		if err != nil {
			return err
		}
		if err := s.app.Permissions.AddRule(r); err != nil {
			return err
		}
	}
	return nil
}

// request sends the client a control_request for an interaction of the
// session's agent (a tool approval or a question).
func (s *Server) request(in agent.Interaction) {
	rid := "arbor-" + in.ID
	s.mu.Lock()
	ended := s.inputEnded
	if !ended {
		s.asks[rid] = in.ID
	}
	s.mu.Unlock()
	if ended {
		s.unanswerable(in)
		return
	}
	switch in.Kind {
	case agent.KindApproval:
		a := in.Approval
		name, input := s.clientTool(a.Tool, a.Input)
		req := outRequest{Subtype: "can_use_tool", ToolName: name, ToolInput: input, Input: input, ToolUseID: a.CallID,
			Reason: a.Reason, DecisionReason: a.Reason}
		if a.SuggestedRule != "" {
			rv := ruleValue{ToolName: name}
			if r, err := permission.ParseRule(a.SuggestedRule, permission.Allow, permission.ScopeSession); err == nil {
				rn, _ := s.clientTool(r.Tool, nil)
				rv = ruleValue{ToolName: rn, RuleContent: r.Pattern}
			}
			req.PermissionSuggestions = []permissionUpdate{{Type: "addRules", Rules: []ruleValue{rv}, Behavior: "allow", Destination: "session"}}
		}
		s.write(controlRequestOut{Type: "control_request", RequestID: rid, Request: req})
	case agent.KindQuestion:
		q := in.Question
		s.write(controlRequestOut{Type: "control_request", RequestID: rid, Request: outRequest{
			Subtype: "ask_user", Question: q.Question, Options: q.Options, Default: q.Default,
		}})
	}
}

// withdraw tells the client that arbor's request for interaction iid
// needs no answer any more (control_cancel_request, as Claude Code sends
// one): it was resolved another way, by an interrupt, a timeout or an
// answer from elsewhere. The client's SDK aborts the callback it runs
// for the request, and the request's entry goes (it stayed until input
// ended). Nothing is sent for a request the client answered: answer
// took its entry first.
func (s *Server) withdraw(iid string) {
	rid := "arbor-" + iid
	s.mu.Lock()
	_, ok := s.asks[rid]
	delete(s.asks, rid)
	s.mu.Unlock()
	if ok {
		s.write(controlCancelOut{Type: "control_cancel_request", RequestID: rid})
	}
}

// answer takes the client's control_response to one of arbor's requests.
func (s *Server) answer(resp controlResponseIn) {
	r := resp.Response
	if r.Subtype == "auth_response" || (r.Subtype == "error" && r.RequestID == authRequestID) {
		s.mu.Lock()
		ch := s.authReq
		s.mu.Unlock()
		a := authReply{refused: r.Error}
		if r.Subtype == "error" && a.refused == "" {
			a.refused = "error response"
		}
		if ch == nil || (a.refused == "" && json.Unmarshal(r.Response, &a) != nil) {
			fmt.Fprintf(s.diag, "arbor: stream-json: auth_response nobody waits for, or malformed; ignored\n")
			return
		}
		select {
		case ch <- a:
		default: // an answer was already given; the reader never waits
			fmt.Fprintf(s.diag, "arbor: stream-json: second auth_response ignored\n")
		}
		return
	}
	if s.hostResult(r.RequestID, r.Response, r.Error) || s.hookAnswer(r.RequestID, r.Response, r.Subtype, r.Error) ||
		s.mcpAnswer(r.RequestID, r.Subtype, r.Response, r.Error) {
		return
	}
	s.mu.Lock()
	iid, ok := s.asks[r.RequestID]
	delete(s.asks, r.RequestID)
	s.mu.Unlock()
	if !ok {
		fmt.Fprintf(s.diag, "arbor: stream-json: control_response for unknown request %q ignored\n", r.RequestID)
		return
	}
	kind := agent.KindApproval
	var asked *agent.Interaction
	for _, in := range s.app.Broker.Pending() {
		if in.ID == iid {
			kind = in.Kind
			asked = &in
		}
	}
	var res agent.Response
	switch {
	case kind == agent.KindQuestion:
		var q questionReply
		_ = json.Unmarshal(r.Response, &q)
		ans := tool.Answer{Text: q.Answer, Declined: q.Declined || r.Subtype == "error"}
		if ans.Text == "" && len(q.Answers) > 0 {
			ans.Text = joinAnswers(q.Answers)
		}
		res.Answer = &ans
	default:
		var a approvalReply
		_ = json.Unmarshal(r.Response, &a)
		ap := tool.Approval{Allow: a.Behavior == "allow", Message: a.Message}
		if r.Subtype == "error" {
			ap = tool.Approval{Message: "tool permission request failed: " + r.Error}
		}
		if ap.Allow && len(a.UpdatedInput) > 0 && string(a.UpdatedInput) != "null" {
			ap.UpdatedInput = a.UpdatedInput
			if s.opts.ClaudeCode && asked != nil && asked.Approval != nil {
				// The client edits the input in Claude Code's names.
				ap.UpdatedInput = tool.ClaudeCodeInput(asked.Approval.Tool, a.UpdatedInput)
			}
			if s.opts.Qwen && asked != nil && asked.Approval != nil {
				ap.UpdatedInput = tool.QwenInput(tool.FromQwen(asked.Approval.Tool), a.UpdatedInput)
			}
		}
		res.Approval = &ap
		if !ap.Allow && asked != nil && asked.Approval != nil {
			s.deny(asked.Approval.Tool, tool.Call{ID: asked.Approval.CallID, Input: asked.Approval.Input})
		}
	}
	if err := s.app.Broker.Resolve(iid, res); err != nil && !errors.Is(err, agent.ErrUnknownInteraction) {
		fmt.Fprintf(s.diag, "arbor: stream-json: %v\n", err)
	}
	if kind == agent.KindApproval && res.Approval != nil && !res.Approval.Allow {
		var a approvalReply
		if json.Unmarshal(r.Response, &a) == nil && a.Interrupt {
			// Claude Code ends the turn on a denial with interrupt.
			s.runner.Cancel(errDeniedInterrupt)
		}
	}
}

// clientTool is a tool's name and input as the client knows them: Claude
// Code's under its argv (Bash, file_path), arbor's otherwise.
func (s *Server) clientTool(name string, input json.RawMessage) (string, json.RawMessage) {
	if s.opts.Qwen {
		return qwenTool(name, input)
	}
	if !s.opts.ClaudeCode {
		return name, input
	}
	cc := tool.ClaudeCodeName(name)
	if cc == "" || name == "ask_user" {
		return name, input
	}
	if input != nil {
		input = tool.ToClaudeCodeInput(name, input)
	}
	return cc, input
}

// deny records a refused call for the turn's result.
func (s *Server) deny(name string, call tool.Call) {
	name, in := s.clientTool(name, call.Input)
	if len(in) == 0 {
		in = json.RawMessage("{}")
	}
	s.mu.Lock()
	s.denials = append(s.denials, permissionDenial{ToolName: name, ToolUseID: call.ID, ToolInput: in})
	s.mu.Unlock()
}

func joinAnswers(xs []string) string {
	out := ""
	for i, x := range xs {
		if i > 0 {
			out += ", "
		}
		out += x
	}
	return out
}

// endInput refuses the questions and approvals the client was asked and
// can no longer answer, and those asked from now on, so a turn that waits
// for one finishes when the input ends instead of waiting for ever.
func (s *Server) endInput() {
	s.endSDKServers()
	s.mu.Lock()
	s.inputEnded = true
	asks := s.asks
	s.asks = map[string]string{}
	s.mu.Unlock()
	if len(asks) == 0 {
		return
	}
	asked := map[string]bool{}
	for _, iid := range asks {
		asked[iid] = true
	}
	for _, in := range s.app.Broker.Pending() {
		if asked[in.ID] {
			s.unanswerable(in)
		}
	}
}

// unanswerable resolves an interaction the client cannot answer any more:
// an approval is denied, a question declined.
func (s *Server) unanswerable(in agent.Interaction) {
	const why = "the client closed its input before answering"
	res := agent.Response{Approval: &tool.Approval{Message: why}}
	if in.Kind == agent.KindQuestion {
		res = agent.Response{Answer: &tool.Answer{Declined: true}}
	} else if a := in.Approval; a != nil {
		s.deny(a.Tool, tool.Call{ID: a.CallID, Input: a.Input})
	}
	if err := s.app.Broker.Resolve(in.ID, res); err != nil && !errors.Is(err, agent.ErrUnknownInteraction) {
		fmt.Fprintf(s.diag, "arbor: stream-json: %v\n", err)
	}
}
