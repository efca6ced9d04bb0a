package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/arbor-run/arbor/internal/mcpclient"
)

// newMCPListCmd is `arbor mcp list`: it starts the configured MCP servers
// as a session would, waits until each connected or failed, and shows
// them with their tools.
func newMCPListCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "Show the configured MCP servers, their status and tools",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			a, err := g.open(cmd.Context())
			if err != nil {
				return err
			}
			defer a.Close()
			st := a.MCP(cmd.Context()).Status()
			if asJSON {
				if st == nil {
					st = []mcpclient.ServerStatus{}
				}
				return writeJSON(cmd.OutOrStdout(), st)
			}
			printMCPServers(cmd.OutOrStdout(), st, a.MCPLogDir())
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func printMCPServers(w io.Writer, servers []mcpclient.ServerStatus, logDir string) {
	if len(servers) == 0 {
		fmt.Fprintln(w, "No MCP servers configured (mcp_servers in config.yaml, or the project's .mcp.json).")
		return
	}
	width := 0
	for _, s := range servers {
		width = max(width, len(s.Name))
	}
	for _, s := range servers {
		detail := fmt.Sprintf("%d tools", len(s.Tools))
		if s.Error != "" {
			detail = s.Error
		}
		fmt.Fprintf(w, "%-*s  %-9s  %-5s  %s\n", width, s.Name, s.State, s.Transport, detail)
		for _, t := range s.Tools {
			desc, _, _ := strings.Cut(t.Description, "\n")
			fmt.Fprintf(w, "    %s  %s\n", t.Name, truncate(desc, 60))
		}
	}
	fmt.Fprintf(w, "\nstdio servers' stderr: %s\n", mcpclient.LogFile(logDir, "<name>"))
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
