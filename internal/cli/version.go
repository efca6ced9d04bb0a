package cli

import (
	"io"

	"github.com/spf13/cobra"

	"github.com/arbor-run/arbor/internal/app"
)

// Version is set at build time with -ldflags "-X github.com/arbor-run/arbor/internal/cli.Version=v1.2.3".
var Version = "dev"

func newVersion() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print arbor's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := io.WriteString(cmd.OutOrStdout(), app.VersionText(Version))
			return err
		},
	}
}
