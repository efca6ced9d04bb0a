package app

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// toolsLeftOut says on Options.Diag (stderr of arbor run and of the
// headless front ends), once per process for each different case, that
// a model's provider takes fewer tools in a request than a session
// offers, so that its requests leave MCP tools out
// (agent.Config.ToolsLeftOut).
func (a *App) toolsLeftOut(model string, limit int, left []string) {
	a.warnOnce(toolsLeftOutMessage(model, limit, left))
}

// toolsLeftOutMessage names how many tools are left out, of which
// servers, and the config that chooses them.
func toolsLeftOutMessage(model string, limit int, left []string) string {
	count := map[string]int{}
	for _, name := range left {
		count[mcpServerOf(name)]++
	}
	var servers []string
	for _, s := range slices.Sorted(maps.Keys(count)) {
		servers = append(servers, fmt.Sprintf("%s (%d)", s, count[s]))
	}
	return fmt.Sprintf("%s takes at most %d tools in a request, so its requests leave out %d MCP tools, the last ones offered, of the servers %s; "+
		"choose the tools of a server with enabled_tools or disabled_tools in mcp_servers, or disable servers the project does not need (docs/mcp.md)",
		model, limit, len(left), strings.Join(servers, ", "))
}

// mcpServerOf is the server of an MCP tool named mcp__server__tool; a
// name cut to fit may have lost it.
func mcpServerOf(name string) string {
	rest, ok := strings.CutPrefix(name, "mcp__")
	if server, _, found := strings.Cut(rest, "__"); ok && found && server != "" {
		return server
	}
	return "(name cut)"
}
