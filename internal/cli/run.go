package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/llm"
)

type runFlags struct {
	yes      bool
	maxTurns int
	resume   string
	quiet    bool
}

func newRunCmd(g *globals, s Streams) *cobra.Command {
	f := &runFlags{}
	cmd := &cobra.Command{
		Use:   `run [flags] "goal" | FILE`,
		Short: "Run an agent on a goal in the workspace",
		Long: `Run an agent on a goal. The final answer goes to stdout; progress and tool
activity go to stderr. Writes and shell commands ask for approval on the
terminal (yes / no / always for this session) unless --yes, --mode or a
permission rule allows them; with stdin not a terminal and no --yes, such
calls are denied. If the only argument names an existing file, its text is
the goal.`,
		Example: `  arbor run --model script:examples/hello.yaml "Write a haiku about trees into haiku.txt"
  ANTHROPIC_API_KEY=… arbor run "Find and fix the failing test"
  arbor run --resume 20261129-213005-3f9a1c "Now add a README section"`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 && f.resume == "" {
				return usageError{errors.New(`run needs a goal: arbor run "goal" (or --resume ID)`)}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAgent(cmd.Context(), g, f, s, args)
		},
	}
	fl := cmd.Flags()
	fl.BoolVarP(&f.yes, "yes", "y", false, "approve every call that would ask (deny rules and workspace limits still apply)")
	fl.IntVar(&f.maxTurns, "max-turns", 0, "maximum model calls for this run (default from config, 50)")
	fl.StringVarP(&f.resume, "resume", "r", "", "continue stored session ID")
	fl.BoolVarP(&f.quiet, "quiet", "q", false, "print only the final answer")
	return cmd
}

func goalText(args []string) (string, error) {
	if len(args) == 1 {
		if fi, err := os.Stat(args[0]); err == nil && fi.Mode().IsRegular() {
			b, err := os.ReadFile(args[0])
			if err != nil {
				return "", err
			}
			return string(b), nil
		}
	}
	return strings.Join(args, " "), nil
}

func runAgent(ctx context.Context, g *globals, f *runFlags, s Streams, args []string) error {
	goal, err := goalText(args)
	if err != nil {
		return &exitError{code: ExitUsage, err: err}
	}
	a, err := g.open(ctx)
	if err != nil {
		return err
	}
	defer a.Close()

	prog := newProgress(s.Err, f.quiet)
	term := &terminal{in: s.In, out: s.Err, yes: f.yes, interactive: isTerminal(s.In)}
	opts := app.SessionOptions{MaxTurns: f.maxTurns, Title: title(goal), OnTodos: prog.todos}
	var sess *app.Session
	if f.resume != "" {
		sess, err = a.ResumeSession(ctx, f.resume, opts)
	} else {
		sess, err = a.NewSession(ctx, opts)
	}
	if err != nil {
		return classify(err)
	}
	prog.session = sess.ID
	stopEvents := a.Bus.Subscribe(prog.handle)
	defer stopEvents()
	stopInteractions := term.serve(ctx, a)
	defer stopInteractions()

	fmt.Fprintf(s.Err, "arbor: session %s, model %s\n", sess.ID, sess.Model.Ref.Ref)
	var res agent.Result
	switch {
	case goal != "":
		res = sess.Agent.Send(ctx, llm.UserText(goal))
	case sess.Agent.NeedsContinue():
		res = sess.Agent.Continue(ctx)
	default:
		return &exitError{code: ExitUsage, err: fmt.Errorf("session %s is not waiting for anything; give a goal to continue it", sess.ID)}
	}
	prog.summary(sess)
	switch res.Outcome {
	case agent.OutcomeCompleted:
		if res.Text != "" {
			fmt.Fprintln(s.Out, strings.TrimRight(res.Text, "\n"))
		}
		return nil
	case agent.OutcomeCancelled:
		return &exitError{code: ExitInterrupted, err: fmt.Errorf("interrupted; continue with: arbor run --resume %s", sess.ID)}
	case agent.OutcomeMaxTurns:
		return &exitError{code: ExitFailure, err: fmt.Errorf("stopped after %d model calls (--max-turns); continue with: arbor run --resume %s \"continue\"", res.Steps, sess.ID)}
	default:
		return &exitError{code: ExitFailure, err: res.Err}
	}
}

func title(goal string) string {
	t := strings.TrimSpace(strings.SplitN(strings.TrimSpace(goal), "\n", 2)[0])
	if len(t) > 80 {
		t = t[:77] + "..."
	}
	return t
}
