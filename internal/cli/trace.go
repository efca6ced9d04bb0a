package cli

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newTraceCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "trace RUN",
		Short: "Export a stored run's trace to the OpenTelemetry endpoint",
		Long:  "Export a finished (or old) run's trace, made from its stored timings, to the endpoint OTEL_EXPORTER_OTLP_ENDPOINT or telemetry.endpoint names (docs/observability.md).",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := g.openStored(cmd.Context())
			if err != nil {
				return err
			}
			defer a.Close()
			n, err := a.ExportTrace(cmd.Context(), args[0])
			if err != nil {
				return classify(err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "exported %d spans of run %s\n", n, args[0])
			return nil
		},
	}
}
