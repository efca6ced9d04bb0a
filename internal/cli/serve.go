//go:build !lean

package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/arbor-run/arbor/internal/web"
)

func newServeCmd(g *globals, s Streams) *cobra.Command {
	var addr, token string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Watch and steer runs in a browser",
		Long: `Serve the web view and its JSON API: the runs, each run's tree updating live,
each node's transcript; answer asks, approve tool calls, stop, pause and resume
nodes, resume interrupted runs and start new ones. Runs started or resumed from
the page are driven by this process (under their lease, like arbor run); runs
another process drives are shown from the store and answered through it.

A non-loopback --addr needs a token (--token or ARBOR_SERVE_TOKEN), and then
every request must carry it; the link printed at start carries it once. See
docs/web.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			g.runsAgents()
			if token == "" {
				token = os.Getenv("ARBOR_SERVE_TOKEN")
			}
			if err := web.CheckAddr(addr, token); err != nil {
				return &exitError{code: ExitUsage, err: err}
			}
			return serve(cmd.Context(), g, s, addr, token)
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8340", "host:port to listen on (port 0 picks a free one)")
	cmd.Flags().StringVar(&token, "token", "", "require this token on every request (env ARBOR_SERVE_TOKEN); needed off loopback")
	return cmd
}

func serve(ctx context.Context, g *globals, s Streams, addr, token string) error {
	a, err := g.open(ctx)
	if err != nil {
		return err
	}
	defer a.Close()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return &exitError{code: ExitFailure, err: fmt.Errorf("listen: %w", err)}
	}
	if _, err := a.Model(""); err != nil {
		fmt.Fprintf(s.Err, "arbor: %v\narbor: runs can be watched here, but not started or resumed until a model is configured\n", err)
	}
	d := web.NewDriver(web.DriverOptions{App: a, Serve: true, Diag: s.Err})
	srv := web.New(web.Options{Store: a.Store, Bus: a.Bus, Interactions: a.Broker, Steer: d, Token: token})
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 10 * time.Second}
	link := url.URL{Scheme: "http", Host: ln.Addr().String(), Path: "/"}
	if token != "" {
		link.RawQuery = url.Values{"token": {token}}.Encode()
	}
	fmt.Fprintf(s.Out, "arbor: serving on %s\n", link.String())
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case <-ctx.Done():
	case err = <-served:
	}
	// Interrupt the runs driven here (they stay resumable), end the
	// streams, then the server.
	d.Stop()
	srv.Close()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = hs.Shutdown(sctx)
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return &exitError{code: ExitFailure, err: fmt.Errorf("serve: %w", err)}
	}
	return nil
}
