package cli

import (
	"github.com/spf13/cobra"

	"github.com/arbor-run/arbor/internal/protocol/acp"
)

func newACPCmd(g *globals, s Streams) *cobra.Command {
	return &cobra.Command{Use: "acp", Short: "Serve an editor over the Agent Client Protocol on stdin/stdout (docs/acp.md)", Long: acp.Help, Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			g.runsAgents()
			a, err := g.open(cmd.Context())
			if err != nil {
				return err
			}
			defer a.Close()
			return acp.Serve(cmd.Context(), a, s.In, s.Out, s.Err, acp.Options{Model: g.model, Version: Version})
		}}
}
