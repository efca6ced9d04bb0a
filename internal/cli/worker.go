//go:build !lean

package cli

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/arbor-run/arbor/internal/worker"
)

func newWorkerCmd(g *globals, s Streams) *cobra.Command {
	var (
		queue       string
		concurrency int
		workspaces  []string
		yes         bool
		stopGrace   time.Duration
		turns       int
		localTurns  bool
		listen      string
		advertise   string
	)
	cmd := &cobra.Command{
		Use:   "worker --store postgres://…",
		Short: "Drive cluster runs handed out through PostgreSQL",
		Long: `Serve a queue of cluster runs (arbor run --cluster) on a PostgreSQL store. Any
number of workers on any machines may serve one store: each run is driven by
one worker at a time, the holder of its run lease, and when a worker dies
another takes its runs over once their leases expire (a few seconds; at once
when the dead worker was on the same machine). A run taken over continues
from its stored transcripts, as arbor resume does.

The worker driving a run runs the turns of its nodes in its own --turns slots
and hands the others to the workers of the run's queue (itself included), so
one run's nodes spread over every worker:
each turn runs arbor's agent loop on the node's stored session in the worker
that took it, which reaches the driver for the node's tree tools, budgets and
approvals over a TCP endpoint the driver serves for the run (on --listen, an
ephemeral port, told to the others as --advertise, with a random token kept
in the database). --local-turns runs a run's turns in the worker driving it.

A worker drives a run and runs its turns only in the run's own workspace, which must exist on
this machine (the same path on a shared filesystem); --workspace limits it to
the directories named. Questions of ask nodes are answered with arbor answer,
approvals through arbor serve (on this machine), or all at once with --yes.

SIGINT or SIGTERM stops taking runs and turns, lets the runs being driven go
(their agents stop at once; the runs stay running and are offered to the
other workers), stops the turns running here (their drivers hand them out
again) and exits 0.

--lease-ttl, --heartbeat and --poll (config cluster:) time the leases:
every worker of a store and every process driving its runs should use the
same values (docs/configuration.md).`,
		Example: `  arbor worker --store postgres://arbor@db/arbor --concurrency 8
  arbor worker --store "$DB" --queue gpu --workspace /srv/checkout --yes`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			g.runsAgents()
			a, err := g.open(cmd.Context())
			if err != nil {
				return err
			}
			defer a.Close()
			w, err := worker.New(a, worker.Options{Queue: queue, Concurrency: concurrency, Turns: turns, LocalTurns: localTurns,
				Workspaces: workspaces, Yes: yes, StopGrace: stopGrace, Listen: listen, Advertise: advertise, Diag: s.Err})
			if err != nil {
				return classify(err)
			}
			if err := w.Serve(cmd.Context()); err != nil {
				return &exitError{code: ExitFailure, err: err}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&queue, "queue", "default", "the queue of cluster runs to serve (arbor run --cluster --queue)")
	fl.IntVar(&concurrency, "concurrency", 4, "runs this worker drives at once")
	// -C as everywhere else: here it names a directory the worker serves.
	fl.StringSliceVarP(&workspaces, "workspace", "C", nil, "serve only runs whose workspace is one of these directories (default: any that exists here)")
	fl.BoolVarP(&yes, "yes", "y", false, "approve every call that would ask, of the runs driven here and the turns run here (deny rules and workspace limits still apply)")
	fl.DurationVar(&stopGrace, "stop-timeout", 10*time.Second, "how long a stopping worker waits for its runs to let go")
	fl.IntVar(&turns, "turns", 16, "node turns this worker runs at once of the runs it drives, and as many of others' runs on the queue; 0: only drive runs")
	fl.BoolVar(&localTurns, "local-turns", false, "run the turns of the runs this worker drives here, and take no others'")
	fl.StringVar(&listen, "listen", "", "the host the endpoints of the runs this worker drives listen on (default: every interface)")
	fl.StringVar(&advertise, "advertise", "", "this worker's address as the other workers reach it (default: --listen's host, else the host name)")
	fl.DurationVar(&g.cluster.LeaseTTL, "lease-ttl", 0, "how long a run's or node's lease outlives its holder's last renewal: another machine's takeover time (config cluster.lease_ttl, 6s; at least 3 heartbeats)")
	fl.DurationVar(&g.cluster.Heartbeat, "heartbeat", 0, "how often a lease is renewed (config cluster.heartbeat, 2s; at least 100ms)")
	fl.DurationVar(&g.cluster.Poll, "poll", 0, "how often an idle worker looks for jobs no notification announced (config cluster.poll, 250ms; 10ms to 1m)")
	return cmd
}
