//go:build !lean

package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/cluster"
	"github.com/arbor-run/arbor/internal/owner"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/tree"
)

func newAnswerCmd(g *globals) *cobra.Command {
	var decline bool
	cmd := &cobra.Command{
		Use:   `answer RUN '#N' "text" | answer RUN '#N' --decline`,
		Short: "Answer the question of an ask node",
		Long: `Answer ask node #N of a run. If a process is driving the run, the answer goes
to it at once (through the answer socket its lease names) and the nodes
waiting on the answer start; otherwise it is stored and used when the run is
resumed. The answer to a cluster run (arbor run --cluster) goes to the
worker driving it on any machine, through the database. An owner that
cannot be reached (another machine, not a cluster run) is named, exit 1.
An empty answer is refused; --decline declines the question.`,
		Args: cobra.RangeArgs(2, 3),
		RunE: func(cmd *cobra.Command, args []string) error {
			if decline != (len(args) == 2) || !decline && strings.TrimSpace(args[2]) == "" { // an unset variable is no answer
				return usageError{errors.New("give the answer's text, or --decline (and no text) to decline the question")}
			}
			args = append(args, "")[:3] // with --decline, the engine's decline

			id, err := tree.ParseID(args[1])
			if err != nil {
				return usageError{err}
			}
			a, err := g.openStored(cmd.Context())
			if err != nil {
				return err
			}
			defer a.Close()
			if _, ok, queued, err := cluster.SendIfDriven(cmd.Context(), a.Store, cluster.ControlRequest{Run: args[0], Node: id, Op: cluster.OpAnswer, Text: args[2]}); ok {
				switch {
				case err != nil:
					return &exitError{code: ExitFailure, err: err}
				case queued:
					fmt.Fprintf(cmd.OutOrStdout(), "answer to #%d of %s queued: no worker took it yet; the one that drives the run next answers it\n", id, args[0])
				default:
					fmt.Fprintf(cmd.OutOrStdout(), "answered #%d of %s (delivered to the worker driving it)\n", id, args[0])
				}
				return nil
			}
			socket := a.OwnerSocket(cmd.Context(), args[0])
			err = owner.Client{Socket: socket}.Answer(cmd.Context(), id, args[2])
			sent := !errors.Is(err, owner.ErrUnreachable)
			if !sent {
				// No owner listens: store the answer (under the run's
				// lease, which fails naming a live owner).
				e := a.StoreEngine()
				err = e.Answer(cmd.Context(), args[0], id, args[2])
			}
			var held *store.LeaseHeldError
			if errors.As(err, &held) {
				return &exitError{code: ExitFailure, err: fmt.Errorf("%w; its answer socket %s cannot be reached from here", err, socket)}
			}
			if err != nil {
				return &exitError{code: ExitFailure, err: err}
			}
			how := "stored; it is used when the run resumes"
			if sent {
				how = "delivered to the running process"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s #%d of %s (%s)\n", map[bool]string{false: "answered", true: "declined"}[decline], id, args[0], how)
			return nil
		},
	}
	cmd.Flags().BoolVar(&decline, "decline", false, "decline the question instead of answering it")
	return cmd
}

// serveAnswers serves run runID's owner socket (see owner.Serve) until
// stop is called; only the run's owner calls it.
func serveAnswers(ctx context.Context, a *app.App, e *tree.Engine, runID string, diag io.Writer) (stop func()) {
	return owner.Serve(ctx, owner.Options{Path: a.AnswerSocket(runID), RunID: runID, Engine: e, Bus: a.Bus, Diag: diag})
}
