package streamjson

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"sort"
	"strings"
	"time"

	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/permission"
	"github.com/arbor-run/arbor/internal/tool"
)

// The Qwen Code SDK's dialect (Options.Qwen): the control requests only
// its CLI answers, and the shapes its types read where they differ from
// Claude Code's (TestQwenGoldens compares them with the real qwen CLI's):
// system/init with permission_mode and qwen_code_version, usage with
// total_tokens, assistant stop_reason null unless tool_use, error results
// with error.message and never subtype success, tools and their
// arguments under qwen's names. Everything else is Claude Code's, which
// the two SDKs read alike.

// sdkLaunch reports whether an SDK launched arbor as its CLI (Claude
// Code's argv or qwen's): such a client cannot answer auth_required, and
// its session ids are UUIDs.
func (s *Server) sdkLaunch() bool { return s.opts.ClaudeCode || s.opts.Qwen }

// sdkServerNames reads initialize's sdkMcpServers: the Claude Agent SDK
// sends an array of names, the Qwen Code SDK an object by name
// ({"calc": {"type": "sdk", "name": "calc"}}).
func sdkServerNames(raw json.RawMessage) ([]string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var names []string
	if json.Unmarshal(raw, &names) == nil {
		return names, nil
	}
	var byName map[string]struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(raw, &byName); err != nil {
		return nil, fmt.Errorf("initialize: sdkMcpServers is neither an array of names nor an object by name: %s", raw)
	}
	for k, v := range byName {
		if v.Name != "" {
			k = v.Name
		}
		names = append(names, k)
	}
	sort.Strings(names)
	return names, nil
}

// efforts are the reasoning efforts the Qwen Code SDK takes.
var efforts = []string{"low", "medium", "high", "xhigh", "max"}

// effortStatus answers an effort: arbor sets no reasoning effort on its
// models, so it is never applied, and the answer says why (the SDK warns
// with the reason).
type effortStatus struct {
	Subtype  string  `json:"subtype,omitempty"`
	Effort   string  `json:"effort"`
	Applied  bool    `json:"applied"`
	Override *string `json:"override"`
	Reason   string  `json:"reason"`
}

func checkEffort(e string) (effortStatus, error) {
	for _, v := range efforts {
		if e == v {
			return effortStatus{Effort: e, Reason: "arbor sets no reasoning effort on its models; configure the model's thinking in arbor's config"}, nil
		}
	}
	return effortStatus{}, fmt.Errorf("invalid effort %q: use %s", e, strings.Join(efforts, ", "))
}

// qwenInitializeResponse is the qwen CLI's answer to initialize.
type qwenInitializeResponse struct {
	Subtype      string          `json:"subtype"`
	SessionID    string          `json:"session_id"`
	Capabilities map[string]bool `json:"capabilities"`
	EffortStatus *effortStatus   `json:"effort_status,omitempty"`
}

func (s *Server) qwenInitialize(effort string) qwenInitializeResponse {
	r := qwenInitializeResponse{Subtype: "initialize", SessionID: s.launchSessionID(), Capabilities: map[string]bool{
		"can_handle_can_use_tool": true, "can_handle_hook_callback": true, "can_set_permission_mode": true,
		"can_set_model": true, "can_set_effort": true, "can_get_context_usage": true, "can_get_available_models": true,
		"can_get_usage_info": true, "can_handle_mcp_message": true,
	}}
	if effort != "" {
		if st, err := checkEffort(effort); err == nil {
			r.EffortStatus = &st
		} else {
			r.EffortStatus = &effortStatus{Effort: effort, Reason: err.Error()}
		}
	}
	return r
}

// launchSessionID is the session's id, or the one it will have.
func (s *Server) launchSessionID() string {
	if id := s.sessionID(); id != "" {
		return id
	}
	return s.opts.SessionID
}

// The answers to the Qwen Code SDK's own control requests.
type (
	commandsResponse struct {
		Subtype  string   `json:"subtype"`
		Commands []string `json:"commands"`
	}
	mcpServerStatusResponse struct {
		Subtype string            `json:"subtype"`
		Status  map[string]string `json:"status"`
	}
	// contextUsageResponse is get_context_usage's answer in both SDKs'
	// shapes at once: their field names do not collide (the Claude Agent
	// SDK reads categories, maxTokens, percentage, model; the Qwen Code
	// SDK modelName, contextWindowSize, breakdown; both totalTokens).
	contextUsageResponse struct {
		Categories        []contextCategory `json:"categories"`
		MaxTokens         int64             `json:"maxTokens"`
		RawMaxTokens      int64             `json:"rawMaxTokens"`
		Percentage        float64           `json:"percentage"`
		GridRows          [][]any           `json:"gridRows"`
		Model             string            `json:"model"`
		Subtype           string            `json:"subtype"`
		ModelName         string            `json:"modelName"`
		TotalTokens       int64             `json:"totalTokens"`
		ContextWindowSize int64             `json:"contextWindowSize"`
		IsEstimated       bool              `json:"isEstimated"`
		ShowDetails       bool              `json:"showDetails"`
		Breakdown         map[string]int64  `json:"breakdown"`
		BuiltinTools      []string          `json:"builtinTools"`
		MCPTools          []string          `json:"mcpTools"`
		MemoryFiles       []string          `json:"memoryFiles"`
		Skills            []string          `json:"skills"`
	}
	contextCategory struct {
		ID     string `json:"id"`
		Name   string `json:"name"`
		Tokens int64  `json:"tokens"`
		Color  string `json:"color"`
		Kind   string `json:"kind"`
	}
	availableModel struct {
		ID                string `json:"id"`
		Label             string `json:"label"`
		ContextWindowSize int64  `json:"contextWindowSize,omitempty"`
	}
	modelsResponse struct {
		Subtype string           `json:"subtype"`
		Models  []availableModel `json:"models"`
	}
	usageSummary struct {
		InputTokens  int64   `json:"inputTokens"`
		OutputTokens int64   `json:"outputTokens"`
		CachedTokens int64   `json:"cachedTokens"`
		TotalTokens  int64   `json:"totalTokens"`
		Sessions     int     `json:"sessions"`
		CostUSD      float64 `json:"costUSD"`
	}
	usageInfoResponse struct {
		Subtype     string         `json:"subtype"`
		Range       string         `json:"range"`
		GeneratedAt string         `json:"generatedAt"`
		Summary     usageSummary   `json:"summary"`
		Daily       []any          `json:"daily"`
		Heatmap     map[string]any `json:"heatmap"`
		HeatmapDays int            `json:"heatmapDays"`
		Models      []modelShare   `json:"models"`
		Skills      []string       `json:"skills"`
	}
	modelShare struct {
		Model       string  `json:"model"`
		TotalTokens int64   `json:"totalTokens"`
		Share       float64 `json:"share"`
	}
	continueResponse struct {
		Subtype      string `json:"subtype"`
		Accepted     bool   `json:"accepted"`
		Interruption string `json:"interruption"`
	}
)

// qwenControl answers the control requests of the Qwen Code SDK that
// Claude Code has no counterpart for. Usage comes from the session (this
// process's turns); the commands are the project's custom commands and
// skills (package project).
func (s *Server) qwenControl(id string, p controlPayload) {
	switch p.Subtype {
	case "supported_commands":
		r := commandsResponse{Subtype: p.Subtype, Commands: []string{}}
		for _, c := range s.slashCommands() {
			r.Commands = append(r.Commands, c.Name) // the project's commands and skills
		}
		s.succeed(id, r)
	case "mcp_server_status":
		st := map[string]string{}
		for _, m := range s.mcpServers() {
			st[m.Name] = m.Status
		}
		s.succeed(id, mcpServerStatusResponse{Subtype: p.Subtype, Status: st})
	case "get_context_usage":
		r := contextUsageResponse{Subtype: p.Subtype, ShowDetails: p.ShowDetails, IsEstimated: false,
			Breakdown: map[string]int64{}, BuiltinTools: []string{}, MCPTools: []string{}, MemoryFiles: []string{}, Skills: []string{}}
		if sess := s.current(); sess != nil {
			r.ModelName = s.modelName(sess.Model.Ref.Ref)
			r.ContextWindowSize = int64(sess.Model.Ref.ContextWindow)
		}
		s.mu.Lock()
		r.TotalTokens = s.contextTokens
		s.mu.Unlock()
		free := max(r.ContextWindowSize-r.TotalTokens, 0)
		r.Breakdown["messages"] = r.TotalTokens
		r.Breakdown["freeSpace"] = free
		r.Model, r.MaxTokens, r.RawMaxTokens, r.GridRows = r.ModelName, r.ContextWindowSize, r.ContextWindowSize, [][]any{}
		if r.ContextWindowSize > 0 {
			r.Percentage = 100 * float64(r.TotalTokens) / float64(r.ContextWindowSize)
		}
		r.Categories = []contextCategory{{ID: "messages", Name: "Messages", Tokens: r.TotalTokens, Color: "purple", Kind: "used"},
			{ID: "free_space", Name: "Free space", Tokens: free, Color: "gray", Kind: "free"}}
		s.succeed(id, r)
	case "set_effort":
		st, err := checkEffort(p.Effort)
		if err != nil {
			s.fail(id, err)
			return
		}
		st.Subtype = p.Subtype
		s.succeed(id, st)
	case "get_available_models":
		r := modelsResponse{Subtype: p.Subtype, Models: []availableModel{}}
		cfg := s.app.Config()
		for _, m := range s.models() {
			provider, name, _ := strings.Cut(m.Value, "/")
			r.Models = append(r.Models, availableModel{ID: s.modelName(m.Value), Label: m.DisplayName,
				ContextWindowSize: cfg.Providers[provider].Models[name].ContextWindow})
		}
		s.succeed(id, r)
	case "get_usage_info":
		s.succeed(id, s.usageInfo(p.Range))
	case "continue_last_turn":
		s.continueLastTurn(id)
	}
}

// usageInfo is the session's usage (this process's turns) as
// get_usage_info reads it.
func (s *Server) usageInfo(rng string) usageInfoResponse {
	if rng == "" {
		rng = "today"
	}
	r := usageInfoResponse{Subtype: "get_usage_info", Range: rng, GeneratedAt: time.Now().UTC().Format(time.RFC3339),
		Daily: []any{}, Heatmap: map[string]any{}, Models: []modelShare{}, Skills: []string{}}
	sess := s.current()
	if sess == nil {
		return r
	}
	u, cost, _ := sess.Agent.Usage()
	r.Summary = usageSummary{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CachedTokens: u.CacheReadTokens,
		TotalTokens: u.InputTokens + u.OutputTokens, Sessions: 1, CostUSD: cost}
	s.mu.Lock()
	var total int64
	for _, mu := range s.modelUsage {
		total += mu.InputTokens + mu.OutputTokens
	}
	for name, mu := range s.modelUsage {
		share := 0.0
		if total > 0 {
			share = float64(mu.InputTokens+mu.OutputTokens) / float64(total)
		}
		r.Models = append(r.Models, modelShare{Model: name, TotalTokens: mu.InputTokens + mu.OutputTokens, Share: share})
	}
	s.mu.Unlock()
	sort.Slice(r.Models, func(i, j int) bool { return r.Models[i].Model < r.Models[j].Model })
	return r
}

// continueLastTurn continues the session's last turn when it was
// interrupted: the answer says whether, and the continuation runs as a
// turn of its own (its messages and result follow), queued behind the
// work already submitted.
func (s *Server) continueLastTurn(id string) {
	s.submit("continue", func(ctx context.Context) {
		sess := s.current()
		s.mu.Lock()
		interrupted := s.turnq.interrupted
		s.mu.Unlock()
		if sess == nil || !interrupted || !sess.Agent.NeedsContinue() {
			s.succeed(id, continueResponse{Subtype: "continue_last_turn", Interruption: "none"})
			return
		}
		kind := "interrupted_turn"
		if h := sess.Agent.History(); len(h) > 0 && h[len(h)-1].Role == llm.RoleUser && h[len(h)-1].Text() != "" {
			kind = "interrupted_prompt" // the model never answered the prompt
		}
		s.succeed(id, continueResponse{Subtype: "continue_last_turn", Accepted: true, Interruption: kind})
		t := userTurn{cont: true, seq: s.addTurn()}
		s.startTurn(t.seq)
		s.turn(ctx, t)
	}, func(err error) { s.fail(id, err) })
}

// qwenTool is a tool's name and input as a qwen client knows them.
func qwenTool(name string, input json.RawMessage) (string, json.RawMessage) {
	arbor := tool.FromQwen(name) // the session presents qwen's names already
	if q := tool.QwenName(arbor); q != "" {
		name = q
	}
	if input != nil && arbor != "ask_user" {
		input = tool.ToQwenInput(arbor, input)
	}
	return name, input
}

// qwenMode is the permission mode as qwen names it; "auto", which arbor
// runs as auto-edit, is reported as the client set it while it holds.
func (s *Server) qwenMode() string {
	m := s.app.Permissions.Mode()
	switch m {
	case permission.ModeAutoEdit:
		s.mu.Lock()
		auto := s.autoMode
		s.mu.Unlock()
		if auto {
			return "auto"
		}
		return "auto-edit"
	case permission.ModeTrust:
		return "yolo"
	}
	return string(m)
}

// noteMode remembers whether the client named the mode it set "auto".
func (s *Server) noteMode(name string) {
	s.mu.Lock()
	s.autoMode = strings.EqualFold(strings.TrimSpace(name), "auto")
	s.mu.Unlock()
}

// qwenInitMessage is system/init as the qwen CLI writes it.
type qwenInitMessage struct {
	Type            string      `json:"type"`
	Subtype         string      `json:"subtype"`
	UUID            string      `json:"uuid"`
	SessionID       string      `json:"session_id"`
	Cwd             string      `json:"cwd"`
	Tools           []string    `json:"tools"`
	MCPServers      []mcpServer `json:"mcp_servers"`
	Model           string      `json:"model,omitempty"`
	PermissionMode  string      `json:"permission_mode"`
	SlashCommands   []string    `json:"slash_commands"`
	Skills          []string    `json:"skills"`
	QwenCodeVersion string      `json:"qwen_code_version"`
	Agents          []string    `json:"agents"`
}

// qwenShape turns a line into the shape the Qwen Code SDK's types read.
func qwenShape(v any) any {
	switch m := v.(type) {
	case initMessage:
		return qwenInitMessage{Type: m.Type, Subtype: m.Subtype, UUID: m.UUID, SessionID: m.SessionID, Cwd: m.Cwd,
			Tools: m.Tools, MCPServers: m.MCPServers, Model: m.Model, PermissionMode: m.PermissionMode,
			SlashCommands: m.SlashCommands, Skills: m.Skills, QwenCodeVersion: arborVersion(), Agents: []string{}}
	case resultMessage:
		total := m.Usage.InputTokens + m.Usage.OutputTokens
		m.Usage.TotalTokens = &total
		if m.IsError {
			// Its types have no success with is_error, and read
			// error.message.
			if m.Subtype == "success" {
				m.Subtype = "error_during_execution"
			}
			msg := strings.Join(m.Errors, "; ")
			if msg == "" {
				msg = m.Result
			}
			m.Error = &resultError{Type: m.Subtype, Message: msg}
		}
		return m
	case messageLine:
		if u := m.Message.Usage; u != nil {
			total := u.InputTokens + u.OutputTokens
			cp := *u
			cp.TotalTokens = &total
			m.Message.Usage = &cp
		}
		return m
	}
	return v
}

// arborVersion is the version qwen_code_version reports: arbor's own.
func arborVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return "arbor " + bi.Main.Version
	}
	return "arbor"
}
