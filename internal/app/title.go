package app

import (
	"context"
	"strings"
	"unicode/utf8"

	"github.com/arbor-run/arbor/internal/tool"
)

// titleRunes bounds a conversation's title.
const titleRunes = 80

// NameConversation gives sess the title its prompt makes when it has none
// yet: a conversation is named after its first prompt, as Claude Code's
// and Chord's session lists show it (arbor sessions, ACP's session/list).
// A session created with a title (a tree node's) keeps it, and a titled
// one is never written again. A title that cannot be stored is reported
// on Options.Diag and tried again at the next prompt; the turn goes on.
// The configuration's secrets are redacted from it. It returns the title it
// gave, "" when it gave none.
func (a *App) NameConversation(ctx context.Context, sess *Session, prompt string) string {
	if sess.titled.Load() {
		return ""
	}
	// Shown in lists and logs: the configuration's secrets are kept out.
	title := conversationTitle(tool.Redact(prompt, a.Secrets()))
	if title == "" {
		return ""
	}
	if err := a.Store.TitleSession(context.WithoutCancel(ctx), sess.ID, title); err != nil {
		a.warn(err.Error())
		return ""
	}
	sess.titled.Store(true)
	return title
}

// RenameConversation sets sess's title, whatever it was (a person's
// /rename); "" clears it, and the next prompt names the conversation
// again. The configuration's secrets are redacted from it; it returns
// the title as stored.
func (a *App) RenameConversation(ctx context.Context, sess *Session, title string) (string, error) {
	title = strings.TrimSpace(tool.Redact(title, a.Secrets()))
	if err := a.Store.RenameSession(context.WithoutCancel(ctx), sess.ID, title); err != nil {
		return "", err
	}
	sess.titled.Store(title != "")
	return title, nil
}

// conversationTitle is the title a prompt gives: its first line that is
// not blank, its spaces collapsed, at most titleRunes runes (cut with
// "…").
func conversationTitle(prompt string) string {
	for line := range strings.Lines(prompt) {
		t := strings.Join(strings.Fields(line), " ")
		if t == "" {
			continue
		}
		if utf8.RuneCountInString(t) <= titleRunes {
			return t
		}
		r := []rune(t)[:titleRunes-1]
		return strings.TrimRight(string(r), " ") + "…"
	}
	return ""
}
