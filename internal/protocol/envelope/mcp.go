package envelope

import (
	"fmt"
	"strings"
)

// mcpServerStatus is one MCP server in status_response.mcp_servers.
type mcpServerStatus struct {
	Name   string `json:"name"`
	Status string `json:"status"` // connected, pending, failed, disabled
	Error  string `json:"error,omitempty"`
	Tools  int    `json:"tools"`
}

// mcpServers reports the app's MCP servers; nil when none is configured.
func (s *server) mcpServers() []mcpServerStatus {
	var out []mcpServerStatus
	for _, st := range s.app.MCPStatus() {
		out = append(out, mcpServerStatus{Name: st.Name, Status: string(st.State), Error: st.Error, Tools: len(st.Tools)})
	}
	return out
}

// mcpText is /mcp's answer: each server, its status and tools.
func (s *server) mcpText() string {
	servers := s.app.MCPStatus()
	if len(servers) == 0 {
		return "No MCP servers configured (mcp_servers in config.yaml, or the project's .mcp.json)."
	}
	var b strings.Builder
	b.WriteString("MCP servers:")
	for _, st := range servers {
		fmt.Fprintf(&b, "\n  %s: %s (%s)", st.Name, st.State, st.Transport)
		if st.Error != "" {
			fmt.Fprintf(&b, " — %s", st.Error)
		}
		for _, t := range st.Tools {
			fmt.Fprintf(&b, "\n    %s", t.Name)
		}
	}
	return b.String()
}
