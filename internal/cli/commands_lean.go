//go:build lean

package cli

import "github.com/spf13/cobra"

// commands of a lean build (-tags lean, docs/headless-envelope.md): the
// one-session protocols; the files of the rest are !lean, so the TUI, the
// web view, the cluster, the MCP server and PostgreSQL are not linked.
func commands(g *globals, s Streams) []*cobra.Command {
	return []*cobra.Command{newVersion(), newHeadlessCmd(g, s), newACPCmd(g, s)}
}
