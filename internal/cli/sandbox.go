package cli

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/arbor-run/arbor/internal/tool"
)

func newSandboxCmd(g *globals, s Streams) *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "sandbox [flags] -- 'COMMAND LINE' | PROGRAM ARG...",
		Short: "Run a command confined, as an agent's shell command runs",
		Long: `Run a command in the workspace, confined as an agent's shell command is
(docs/sandbox.md). One argument is a shell command line, run with bash -c as
an agent's is ('ls | wc -l'); several are a program and its arguments, each
passed on as it is (bash -c 'exit 7'). Its output (stdout and stderr merged,
as the model sees it) goes to stdout, what the sandbox blocked to stderr, and
arbor exits with the command's code; 2 where bubblewrap does not work.`,
		Example: `  arbor sandbox -- cat ~/.ssh/id_rsa
  arbor sandbox -- grep -c "two words" notes.txt
  arbor sandbox -- 'curl -sS https://proxy.golang.org/ | head'`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if g.sandbox == "off" {
				return usageError{errors.New("arbor sandbox runs commands confined: --sandbox off makes no sense here")}
			}
			g.sandboxDefault = "required"
			if g.sandbox == "" {
				g.sandbox = "required" // whatever the config says: this command is the sandbox
			}
			a, err := g.open(cmd.Context())
			if err != nil {
				return err
			}
			defer a.Close()
			sb := a.Sandbox()
			if sb == nil {
				return &exitError{code: ExitUsage, err: fmt.Errorf("the sandbox is %s", a.SandboxStatus())}
			}
			// With the project settings' env, as an agent's commands.
			ctx := tool.WithEnv(cmd.Context(), a.Project().Env)
			r := tool.RunCommand(ctx, sb, a.Workspace, tool.CommandLine(args), timeout, 1<<20, 2*time.Second)
			fmt.Fprint(s.Out, r.Output)
			for _, n := range r.Notes {
				fmt.Fprintf(s.Err, "arbor: %s\n", n)
			}
			switch {
			case r.Err != nil:
				return &exitError{code: ExitFailure, err: r.Err}
			case r.TimedOut, r.ExitCode < 0:
				return &exitError{code: ExitFailure, err: fmt.Errorf("killed (timeout %s); every process it started with it", timeout)}
			case r.ExitCode != 0:
				return &exitError{code: r.ExitCode} // the command said why
			}
			return nil
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Minute, "kill the command and everything it started after this long")
	return cmd
}
