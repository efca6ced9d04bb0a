package tui

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/arbor-run/arbor/internal/tree"
)

// textCut is how many characters of a goal, result or error a line shows.
const textCut = 100

// firstLine returns s's first non-blank line, cut at n characters.
func firstLine(s string, n int) string {
	s = strings.TrimSpace(s)
	line, _, _ := strings.Cut(s, "\n")
	return cut(strings.TrimSpace(line), n)
}

// Clip is s on one line (its newlines spaces), shortened to n characters
// with "…" when it is longer: a title or a result in a table.
func Clip(s string, n int) string { return cut(strings.ReplaceAll(s, "\n", " "), n) }

// cut shortens s to n characters, ending it with "…" when it was longer.
func cut(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	if n <= 1 {
		return string(r[:n])
	}
	return string(r[:n-1]) + "…"
}

// tag names a node's kind, with the spawn mode for tasks.
func tag(n tree.NodeView) string {
	if n.Kind == tree.KindTask && n.Spawn != "" {
		return string(n.Kind) + "(" + n.Spawn + ")"
	}
	return string(n.Kind)
}

// label is the text a node is shown by: its goal, or an ask node's
// question when it has no goal.
func label(n tree.NodeView) string {
	if strings.TrimSpace(n.Goal) == "" && n.Question != "" {
		return n.Question
	}
	return n.Goal
}

// ids renders node ids as "#2<sep>#4".
func ids(list []int64, sep string) string {
	parts := make([]string, len(list))
	for i, id := range list {
		parts[i] = "#" + strconv.FormatInt(id, 10)
	}
	return strings.Join(parts, sep)
}

// callArgs are the argument fields that name what a call acts on, in the
// order they are preferred.
type callArgs struct {
	Command  string `json:"command"`
	Path     string `json:"path"`
	Pattern  string `json:"pattern"`
	Question string `json:"question"`
	Goal     string `json:"goal"`
	URL      string `json:"url"`
}

// brief renders a tool call's input on one short line: its main argument
// when it has one, else the compact JSON.
func brief(raw json.RawMessage) string {
	var a callArgs
	if json.Unmarshal(raw, &a) == nil {
		for _, v := range []string{a.Command, a.Path, a.Pattern, a.Question, a.Goal, a.URL} {
			if strings.TrimSpace(v) != "" {
				return firstLine(v, textCut)
			}
		}
	}
	return firstLine(strings.Join(strings.Fields(string(raw)), " "), textCut)
}

// tokens renders a token count compactly: 950, 12.3k, 1.2M.
func tokens(n int64) string {
	switch {
	case n < 1000:
		return strconv.FormatInt(n, 10)
	case n < 1_000_000:
		return strconv.FormatFloat(float64(n)/1e3, 'f', 1, 64) + "k"
	default:
		return strconv.FormatFloat(float64(n)/1e6, 'f', 1, 64) + "M"
	}
}

// cost renders dollars; "$?" when some call used a model without a price.
func cost(usd float64, known bool) string {
	switch {
	case !known:
		return "$?"
	case usd < 1:
		return fmt.Sprintf("$%.4f", usd)
	default:
		return fmt.Sprintf("$%.2f", usd)
	}
}

// elapsed renders a duration in whole seconds: 7s, 1m05s, 2h03m.
func elapsed(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	s := int64(d / time.Second)
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	default:
		return fmt.Sprintf("%dh%02dm", s/3600, s%3600/60)
	}
}

// Title is a run's goal as its title: the first line, at most 80
// characters (cut with "...").
func Title(goal string) string {
	t := strings.TrimSpace(strings.SplitN(strings.TrimSpace(goal), "\n", 2)[0])
	if r := []rune(t); len(r) > 80 {
		t = string(r[:77]) + "..."
	}
	return t
}
