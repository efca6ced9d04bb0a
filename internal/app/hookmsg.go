package app

import (
	"fmt"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/tool"
)

// SayHooks shows the person what hooks said for them (their
// systemMessage, hook.Verdict.Messages): HookMessage events of session
// id on the bus, for the front ends; with no session (arbor run's goal,
// whose tree has none yet), lines on Options.Diag. The configuration's
// secrets are redacted from them, as from a tool's output.
func (a *App) SayHooks(id string, msgs []string) {
	if len(msgs) == 0 {
		return
	}
	secrets := a.secrets()
	if id == "" {
		root := a.rootApp()
		if root.diag == nil {
			return
		}
		root.diagMu.Lock()
		defer root.diagMu.Unlock()
		for _, m := range msgs {
			fmt.Fprintln(root.diag, "arbor:", tool.Redact(m, secrets))
		}
		return
	}
	for _, m := range msgs {
		a.Bus.Publish(&agent.HookMessage{Meta: agent.Meta{SessionID: id}, Text: tool.Redact(m, secrets), Level: agent.LevelNotice})
	}
}

// Redact replaces in s every credential the configuration reaches (the
// agents' Secrets), for what a front end shows that comes from outside a
// session's agent: a hook's output.
func (a *App) Redact(s string) string { return tool.Redact(s, a.secrets()) }
