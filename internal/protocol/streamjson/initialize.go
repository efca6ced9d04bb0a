package streamjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/arbor-run/arbor/internal/permission"
	"github.com/arbor-run/arbor/internal/tool"
)

// LaunchInit is what the CLI took at launch from the initialize request
// a client wrote as its first line (Claude Code's --await-initialize, with
// which the Claude Agent SDK keeps disallowedTools and MCP servers off the
// command line). The answer to that request says so, as Claude Code's
// does (disallowed_tools_applied, mcp_servers_applied); the SDK ends the
// session when a field it sent is not confirmed.
type LaunchInit struct {
	DisallowedTools bool
	MCPServers      bool
}

// initializeFields are the initialize request's fields arbor acts on;
// any other that carries a value (the SDK's agents, planModeInstructions,
// title, skills, promptSuggestions, jsonSchema, …)
// refuses the request under Claude Code's argv, so that nothing a client
// asked for is ignored (see unsupportedFields).
var initializeFields = map[string]bool{
	"subtype": true, "capabilities": true, "systemPrompt": true, "appendSystemPrompt": true, "hooks": true,
	"disallowedTools": true, "mcpServers": true,
	"sdkMcpServers": true, "sdkMcpServerManifests": true,
	// The Qwen Code SDK's: its own timeout for canUseTool (it enforces it
	// itself), and the reasoning effort (answered in effort_status).
	"timeout": true, "effort": true,
}

// UnmarshalJSON decodes a control request and, for initialize, notes the
// fields arbor does not act on.
func (p *controlPayload) UnmarshalJSON(b []byte) error {
	type plain controlPayload
	if err := json.Unmarshal(b, (*plain)(p)); err != nil {
		return err
	}
	if p.Subtype != "initialize" {
		return nil
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return err
	}
	for k, v := range all {
		if !initializeFields[k] && hasValue(v) {
			p.unsupported = append(p.unsupported, k)
		}
	}
	sort.Strings(p.unsupported)
	return nil
}

// hasValue reports whether a field sets anything: not null, false, "",
// [] or {}.
func hasValue(v json.RawMessage) bool {
	switch string(bytes.TrimSpace(v)) {
	case "", "null", "false", `""`, "[]", "{}":
		return false
	}
	return true
}

// unsupportedFields refuses, under Claude Code's argv, an initialize
// request with fields arbor does not act on: they are the Claude Agent
// SDK's options. A cosh client's extra fields (the spec defines none but
// capabilities) are noted on the diagnostics stream, as unknown input is.
func (s *Server) unsupportedFields(p controlPayload) error {
	if len(p.unsupported) == 0 {
		return nil
	}
	if !s.sdkLaunch() {
		fmt.Fprintf(s.diag, "arbor: stream-json: initialize: fields %s not used\n", strings.Join(p.unsupported, ", "))
		return nil
	}
	return fmt.Errorf("initialize: %s not supported by arbor, so refused rather than ignored", strings.Join(p.unsupported, ", "))
}

// initApplied is what an initialize answer reports about the launch
// fields the request carried (nil: it carried none).
type initApplied struct {
	DisallowedTools *bool
	MCPServers      *bool
	// UnfiredHooks are the events hooks were accepted for that arbor does
	// not fire yet.
	UnfiredHooks []string
}

// launchFields checks the initialize request's launch fields. Denied
// tools apply as session deny rules while no session exists (taken at
// launch, they already are), and those named without a pattern are left
// out of the session it creates (hiddenTools); MCP servers can only be
// taken at launch.
// s.mu must be held.
func (s *Server) launchFields(p controlPayload) (initApplied, error) {
	var a initApplied
	yes := true
	first := !s.initialized
	if p.DisallowedTools != nil {
		switch {
		case first && s.opts.LaunchInit.DisallowedTools:
		case s.sess != nil:
			return a, fmt.Errorf("initialize: the session already exists, so disallowedTools can no longer be set")
		default:
			for _, name := range p.DisallowedTools {
				if s.opts.ClaudeCode {
					name = tool.RuleFromClaudeCode(name)
				}
				r, err := permission.ParseRule(name, permission.Deny, permission.ScopeSession)
				if err != nil {
					return a, fmt.Errorf("initialize: disallowedTools: %w", err)
				}
				if err := s.app.Permissions.AddRule(r); err != nil {
					return a, fmt.Errorf("initialize: disallowedTools: %w", err)
				}
				s.disallowed = append(s.disallowed, name)
			}
		}
		a.DisallowedTools = &yes
	}
	if hasValue(p.MCPServers) {
		if s.opts.Qwen && (!first || !s.opts.LaunchInit.MCPServers) {
			return a, fmt.Errorf("initialize: mcpServers (the Qwen Code SDK's external MCP servers) are taken only from the first initialize request, at launch; this one was not")
		}
		if !first || !s.opts.LaunchInit.MCPServers {
			return a, fmt.Errorf("initialize: mcpServers are taken only from the first line of a CLI started with --await-initialize; pass them with --mcp-config (the SDK's mcpServersDelivery: 'argv')")
		}
		a.MCPServers = &yes
	}
	return a, nil
}
