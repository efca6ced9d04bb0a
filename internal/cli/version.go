package cli

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/arbor-run/arbor/internal/store/sqlite/driver"
)

// Version is set at build time with -ldflags "-X github.com/arbor-run/arbor/internal/cli.Version=v1.2.3".
var Version = "dev"

func newVersion() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print arbor's version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := Version
			if v == "dev" {
				if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
					v = bi.Main.Version
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "arbor %s (%s, %s/%s)\nSQLite %s (%s)\n", v, runtime.Version(), runtime.GOOS, runtime.GOARCH, driver.Version(), driver.Kind)
			return nil
		},
	}
}
