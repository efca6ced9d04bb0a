package app

import (
	"fmt"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/tool"
)

// SayHooks shows the person what hooks said for them (their
// systemMessage, hook.Verdict.Messages): HookMessage events of session
// id on the bus, for the front ends; with no session (arbor run's goal,
// whose tree has none yet), lines on Options.Diag. The hooks' runner
// redacted the configuration's secrets from them (Redact).
func (a *App) SayHooks(id string, msgs []string) {
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
		a.Bus.Publish(&agent.HookMessage{Meta: agent.Meta{SessionID: id}, Text: m, Level: agent.LevelNotice})
	}
}

// Redact replaces in s every credential the configuration reaches (the
// agents' Secrets). Every hook runner applies it to what its hooks give
// back (hook.Runner.Redact): the project's (sessionHooks) and a client's
// (stream-json's SDK callbacks). So what a hook prints is redacted once,
// in the runner, wherever it goes next: the model's context, a client's
// stream, the logs.
func (a *App) Redact(s string) string { return tool.Redact(s, a.secrets()) }
