package streamjson

import "github.com/arbor-run/arbor/internal/mcpclient"

// mcpServerInfo is what an MCP server said it is.
type mcpServerInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// mcpStatusResponse answers the mcp_status control request (the Claude
// Agent SDK's mcpServerStatus()).
type mcpStatusResponse struct {
	MCPServers []mcpServer `json:"mcpServers"`
}

// mcpServers reports the app's MCP servers as Claude Code does: status
// connected, pending, failed (or disabled).
func (s *Server) mcpServers() []mcpServer {
	out := []mcpServer{}
	for _, st := range s.app.MCPStatus() {
		m := mcpServer{Name: st.Name, Status: string(st.State), Error: st.Error}
		if st.State == mcpclient.StateConnected {
			m.ServerInfo = &mcpServerInfo{Name: st.ServerName, Version: st.ServerVersion}
		}
		out = append(out, m)
	}
	return out
}

// initMCPServers is system/init's mcp_servers: name and status only, as
// Claude Code writes them.
func (s *Server) initMCPServers() []mcpServer {
	out := s.mcpServers()
	for i := range out {
		out[i] = mcpServer{Name: out[i].Name, Status: out[i].Status}
	}
	return out
}
