//go:build !lean

package cli

import "github.com/spf13/cobra"

func commands(g *globals, s Streams) []*cobra.Command {
	return []*cobra.Command{newVersion(), newRunCmd(g, s), newResumeCmd(g, s), newRunsCmd(g), newTreeCmd(g), newTraceCmd(g), newAnswerCmd(g), newSessionsCmd(g), newHeadlessCmd(g, s), newServeCmd(g, s), newWorkerCmd(g, s), newStopCmd(g), newSandboxCmd(g, s), newMCPCmd(g, s), newACPCmd(g, s)}
}
