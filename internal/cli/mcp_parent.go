package cli

import "github.com/spf13/cobra"

// newMCPParentCmd is `arbor mcp`, holding the MCP client's subcommands.
// The MCP server command (mcp.go) takes these subcommands when both exist.
func newMCPParentCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "mcp", Short: "MCP servers arbor's agents use"}
	cmd.AddCommand(newMCPListCmd(g))
	return cmd
}
