//go:build !lean

package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/arbor-run/arbor/internal/cluster"
	"github.com/arbor-run/arbor/internal/owner"
	"github.com/arbor-run/arbor/internal/tree"
)

func newStopCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   `stop RUN ['#N']`,
		Short: "Stop a node (and what runs under it) of a run being driven",
		Long: `Stop node #N of a run, or the whole run (its root, #1) when no node is named.
The node and its unfinished descendants are cancelled, their agents stop and
their tool processes end. The request goes to the process driving the run
(arbor run, arbor serve or an arbor worker) through the answer socket its
lease names, or for a cluster run (arbor run --cluster) to the worker
driving it on any machine, through the database. A run that no process
drives (interrupted) is stopped in the store: with no node named it is
cancelled and no longer resumable; a node named is cancelled with what runs
under it, and arbor resume goes on without them.`,
		Example: `  arbor stop 01JD8X… '#3'
  arbor stop 01JD8X…`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := int64(1)
			if len(args) == 2 {
				n, err := tree.ParseID(args[1])
				if err != nil {
					return usageError{err}
				}
				id = n
			}
			a, err := g.openStored(cmd.Context())
			if err != nil {
				return err
			}
			defer a.Close()
			if state, ok, queued, err := cluster.SendIfDriven(cmd.Context(), a.Store, cluster.ControlRequest{Run: args[0], Node: id, Op: cluster.OpStop}); ok {
				switch {
				case err != nil:
					return &exitError{code: ExitFailure, err: err}
				case queued:
					fmt.Fprintf(cmd.OutOrStdout(), "stop of #%d of %s queued: no worker took it yet; the one that drives the run next stops it\n", id, args[0])
				default:
					fmt.Fprintf(cmd.OutOrStdout(), "stopped #%d of %s (%s, by the worker driving it)\n", id, args[0], state)
				}
				return nil
			}
			state, err := owner.Client{Socket: a.OwnerSocket(cmd.Context(), args[0])}.Control(cmd.Context(), id, tree.OpStop)
			if errors.Is(err, owner.ErrUnreachable) {
				// Nobody drives it: the stop is written to the store.
				r, err := a.StoreEngine().Stop(cmd.Context(), args[0], id)
				switch {
				case err != nil:
					return &exitError{code: ExitFailure, err: err}
				case id == 1:
					fmt.Fprintf(cmd.OutOrStdout(), "cancelled %s: no process drove it\n", r.ID)
				default:
					fmt.Fprintf(cmd.OutOrStdout(), "stopped #%d of %s: no process drove it; arbor resume %s goes on without it\n", id, r.ID, r.ID)
				}
				return nil
			}
			if err != nil {
				return &exitError{code: ExitFailure, err: err}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "stopped #%d of %s (%s)\n", id, args[0], state)
			return nil
		},
	}
}
