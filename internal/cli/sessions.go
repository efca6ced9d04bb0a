//go:build !lean

package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/tui"
)

func newSessionsCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sessions",
		Short: "List and inspect stored sessions",
	}
	list := newListCmd(g, "list", "sessions", store.Store.ListSessions, printSessions)

	var showJSON bool
	show := &cobra.Command{
		Use:   "show ID",
		Short: "Print a session's transcript",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := g.openStored(cmd.Context())
			if err != nil {
				return err
			}
			defer a.Close()
			ctx := cmd.Context()
			s, err := store.LookupSession(ctx, a.Store, args[0])
			if err != nil {
				return &exitError{code: ExitFailure, err: err}
			}
			msgs, err := a.Store.Messages(ctx, s.ID, 0)
			if err != nil {
				return err
			}
			intents, err := a.Store.Intents(ctx, s.ID)
			if err != nil {
				return err
			}
			if showJSON {
				return writeJSON(cmd.OutOrStdout(), struct {
					Session  store.Session         `json:"session"`
					Messages []store.MessageRecord `json:"messages"`
					Intents  []store.Intent        `json:"intents"`
				}{s, msgs, intents})
			}
			printTranscript(cmd.OutOrStdout(), s, msgs)
			return nil
		},
	}
	show.Flags().BoolVar(&showJSON, "json", false, "print JSON: the session, every message and every tool intent")
	cmd.AddCommand(list, show)
	return cmd
}

func costText(s store.Session) string {
	if !s.CostKnown {
		return "?"
	}
	return fmt.Sprintf("$%.4f", s.CostUSD)
}

func printSessions(w io.Writer, ss []store.Session) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATUS\tMODEL\tUPDATED\tTOKENS\tCOST\tTITLE")
	for _, s := range ss {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", s.ID, s.Status, s.Model,
			s.UpdatedAt.Local().Format("2006-01-02 15:04"), s.Usage.Total(), costText(s), tui.Clip(s.Title, 60))
	}
	tw.Flush()
}

func printTranscript(w io.Writer, s store.Session, msgs []store.MessageRecord) {
	fmt.Fprintf(w, "session %s  (%s, model %s)\nworkspace %s\ntokens %d in / %d out, cost %s\n\n",
		s.ID, s.Status, s.Model, s.Workspace, s.Usage.InputTokens, s.Usage.OutputTokens, costText(s))
	for _, r := range msgs {
		for _, p := range r.Message.Parts {
			switch p.Type {
			case llm.PartText:
				if strings.TrimSpace(p.Text) != "" {
					fmt.Fprintf(w, "[%d] %s: %s\n", r.Seq, r.Message.Role, p.Text)
				}
			case llm.PartThinking:
				fmt.Fprintf(w, "[%d] thinking: %s\n", r.Seq, tui.Clip(p.Text, 200))
			case llm.PartToolCall:
				fmt.Fprintf(w, "[%d] → %s %s\n", r.Seq, p.ToolCall.Name, string(p.ToolCall.Input))
			case llm.PartToolResult:
				mark := "✓"
				if p.ToolResult.IsError {
					mark = "✗"
				}
				fmt.Fprintf(w, "[%d]   %s %s\n", r.Seq, mark, tui.Clip(p.ToolResult.Content, 200))
			}
		}
	}
}
