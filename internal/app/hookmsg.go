package app

import (
	"fmt"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/hook"
)

// SayHooks shows the person what hooks of event e said for them (their
// systemMessage, hook.Verdict.Messages): HookMessage events of session
// id on the bus, for the front ends; with no session (arbor run's goal,
// whose tree has none yet), lines on Options.Diag. The hooks' runner
// redacted the configuration's secrets from them (hook.Runner.Secrets).
func (a *App) SayHooks(id string, e hook.Event, msgs []string) {
	if len(msgs) == 0 {
		return
	}
	if id == "" {
		root := a.rootApp()
		if root.diag == nil {
			return
		}
		root.diagMu.Lock()
		defer root.diagMu.Unlock()
		for _, m := range msgs {
			fmt.Fprintln(root.diag, "arbor:", m)
		}
		return
	}
	for _, m := range msgs {
		a.Bus.Publish(&agent.HookMessage{Meta: agent.Meta{SessionID: id}, Text: m, Event: string(e), Level: agent.LevelNotice})
	}
}
