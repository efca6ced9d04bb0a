package cli

import (
	"github.com/spf13/cobra"

	"github.com/arbor-run/arbor/internal/protocol/acp"
)

func newACPCmd(g *globals, s Streams) *cobra.Command {
	return &cobra.Command{
		Use:   "acp",
		Short: "Serve an editor over the Agent Client Protocol on stdin/stdout",
		Long: `Run arbor as an ACP agent for an editor (Zed, JetBrains IDEs, Neovim and
Emacs plugins): JSON-RPC 2.0 on stdin/stdout, one message a line. Sessions
are arbor's stored sessions (session/load continues them); their trees show
as the plan; --mode is the sessions' first mode. See docs/acp.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			g.runsAgents()
			a, err := g.open(cmd.Context())
			if err != nil {
				return err
			}
			defer a.Close()
			return acp.Serve(cmd.Context(), a, s.In, s.Out, s.Err, acp.Options{Model: g.model, Version: Version})
		},
	}
}
