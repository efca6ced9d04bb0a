//go:build !lean

package cli

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/tree"
	"github.com/arbor-run/arbor/internal/tui"
)

func newRunsCmd(g *globals) *cobra.Command {
	return newListCmd(g, "runs", "runs", listRuns, printRuns)
}

// listRuns lists runs with the status a reader should see (store.ShownStatus).
func listRuns(st store.Store, ctx context.Context, limit int) ([]store.Run, error) {
	rs, err := st.ListRuns(ctx, limit)
	if err != nil {
		return nil, err
	}
	return store.WithShownStatus(ctx, st, rs), nil
}

// newListCmd is a command listing stored records newest first, as a
// table (print) or as JSON, with --limit.
func newListCmd[T any](g *globals, use, noun string, list func(store.Store, context.Context, int) ([]T, error), print func(io.Writer, []T)) *cobra.Command {
	var limit int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   use,
		Short: "List " + noun + ", newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			a, err := g.openStored(cmd.Context())
			if err != nil {
				return err
			}
			defer a.Close()
			xs, err := list(a.Store, cmd.Context(), limit)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), xs)
			}
			print(cmd.OutOrStdout(), xs)
			return nil
		},
	}
	cmd.Flags().IntVarP(&limit, "limit", "n", 20, "how many "+noun+" (0 = all)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func printRuns(w io.Writer, rs []store.Run) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATUS\tMODEL\tUPDATED\tGOAL")
	for _, r := range rs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.ID, r.Status, r.Model, r.UpdatedAt.Local().Format("2006-01-02 15:04"), tui.Clip(tui.Title(r.Goal), 60))
	}
	tw.Flush()
}

func newTreeCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "tree RUN",
		Short: "Print a run's tree",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := g.openStored(cmd.Context())
			if err != nil {
				return err
			}
			defer a.Close()
			r, err := a.Store.GetRun(cmd.Context(), args[0])
			if err != nil {
				return &exitError{code: ExitFailure, err: fmt.Errorf("run %s: %w", args[0], err)}
			}
			r.Status = store.ShownStatus(cmd.Context(), a.Store, r)
			nodes, err := a.Store.Nodes(cmd.Context(), r.ID)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), struct {
					Run   store.Run       `json:"run"`
					Nodes []app.NodeSpend `json:"nodes"`
				}{r, app.WithSpend(cmd.Context(), a.Store, nodes)})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "run %s [%s] model %s%s\n", r.ID, r.Status, r.Model, store.DescribeDriver(cmd.Context(), a.Store, r))
			if r.Error != "" {
				fmt.Fprintf(cmd.OutOrStdout(), "error: %s\n", r.Error)
			}
			fmt.Fprint(cmd.OutOrStdout(), tree.Render(nodes))
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON: the run and every node in full")
	return cmd
}
