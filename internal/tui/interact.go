package tui

import (
	"strconv"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/tool"
)

// Resolver answers a pending interaction; *agent.Broker implements it.
type Resolver interface {
	Resolve(id string, r agent.Response) error
}

// current is the interaction shown, if any.
func (m *model) current() (agent.Interaction, bool) {
	if len(m.pending) == 0 {
		return agent.Interaction{}, false
	}
	return m.pending[0], true
}

// asking reports whether a question is shown (keys go to its input).
func (m *model) asking() bool {
	in, ok := m.current()
	return ok && in.Kind == agent.KindQuestion && in.Question != nil
}

// key handles one key press and returns the command resolving an
// interaction, if the key answered one.
func (m *model) key(k tea.KeyPressMsg) tea.Cmd {
	if k.String() == "ctrl+c" {
		m.interrupt()
		return nil
	}
	in, ok := m.current()
	if !ok {
		return nil
	}
	switch {
	case in.Kind == agent.KindApproval && in.Approval != nil:
		ap, ok := approvalKey(k.String())
		if !ok {
			return nil
		}
		return m.answer(in, agent.Response{Approval: &ap})
	case m.asking():
		return m.questionKey(in, k)
	}
	return nil
}

// approvalKey maps y / n / a to an approval.
func approvalKey(k string) (tool.Approval, bool) {
	switch strings.ToLower(k) {
	case "y":
		return tool.Approval{Allow: true}, true
	case "n":
		return tool.Approval{Allow: false}, true
	case "a":
		return tool.Approval{Allow: true, RememberScope: "session"}, true
	}
	return tool.Approval{}, false
}

// questionKey edits the input of question in; Enter answers, Esc declines.
func (m *model) questionKey(in agent.Interaction, k tea.KeyPressMsg) tea.Cmd {
	switch k.String() {
	case "enter":
		ans := pick(*in.Question, string(m.input))
		return m.answer(in, agent.Response{Answer: &ans})
	case "esc":
		return m.answer(in, agent.Response{Answer: &tool.Answer{Declined: true}})
	case "backspace":
		if len(m.input) > 0 {
			m.input = m.input[:len(m.input)-1]
		}
	case "ctrl+u":
		m.input = nil
	default:
		if k.Text != "" {
			m.input = append(m.input, []rune(k.Text)...)
		}
	}
	return nil
}

// pick turns what was typed into an answer: empty takes the default (or
// declines when there is none), a number picks that option, several
// numbers pick several options of a multi-select question, anything else is
// the answer itself.
func pick(q tool.Question, typed string) tool.Answer {
	s := strings.TrimSpace(typed)
	if s == "" {
		if q.Default == "" {
			return tool.Answer{Declined: true}
		}
		return tool.Answer{Text: q.Default}
	}
	if picked, ok := options(q, s); ok {
		return tool.Answer{Text: picked}
	}
	return tool.Answer{Text: s}
}

// options resolves s as option numbers: one, or with MultiSelect several
// separated by commas or spaces. ok is false unless every number is valid.
func options(q tool.Question, s string) (string, bool) {
	fields := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' })
	if len(fields) == 0 || (len(fields) > 1 && !q.MultiSelect) {
		return "", false
	}
	chosen := make([]string, 0, len(fields))
	for _, f := range fields {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 || n > len(q.Options) {
			return "", false
		}
		chosen = append(chosen, q.Options[n-1])
	}
	return strings.Join(chosen, ", "), true
}

// answer takes in off the screen at once and returns the command that
// hands r to the resolver; a failure comes back as a resolvedMsg.
func (m *model) answer(in agent.Interaction, r agent.Response) tea.Cmd {
	m.drop(in.ID)
	m.notice = ""
	if m.resolver == nil {
		m.notice = "no one to hand the answer to"
		return nil
	}
	resolver := m.resolver
	return func() tea.Msg {
		return resolvedMsg{id: in.ID, err: resolver.Resolve(in.ID, r)}
	}
}
