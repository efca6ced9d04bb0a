package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/tool"
)

// progress prints one line per step of interest to stderr.
type progress struct {
	mu      sync.Mutex // guards w
	w       io.Writer
	quiet   bool
	session string
}

func newProgress(w io.Writer, quiet bool) *progress { return &progress{w: w, quiet: quiet} }

func (p *progress) printf(format string, args ...any) {
	if p.quiet {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, format, args...)
}

// handle is a bus subscriber: quick, never blocking on input.
func (p *progress) handle(e agent.Event) {
	if agent.MetaOf(e).SessionID != p.session {
		return
	}
	switch e := e.(type) {
	case *agent.ToolCallStarted:
		p.printf("→ %s %s\n", e.Tool, brief(e.Input))
	case *agent.ToolCallFinished:
		mark := "✓"
		if e.IsError {
			mark = "✗"
		}
		p.printf("  %s %s\n", mark, firstLine(e.Result))
	case *agent.Retrying:
		p.printf("… model call failed (%s); retry %d in %s\n", e.Error, e.Attempt, e.Delay.Round(1e6))
	case *agent.CompactionFinished:
		if e.Err != "" {
			p.printf("… context compaction failed: %s\n", e.Err)
		} else {
			p.printf("… context compacted: ~%d → ~%d tokens\n", e.TokensBefore, e.TokensAfter)
		}
	case *agent.LoopWarning:
		p.printf("! the model repeated %s %d times\n", e.Tool, e.Count)
	}
}

func (p *progress) todos(items []tool.Todo) {
	var b strings.Builder
	for _, t := range items {
		box := "[ ]"
		switch t.Status {
		case "completed":
			box = "[x]"
		case "in_progress":
			box = "[~]"
		}
		fmt.Fprintf(&b, "  %s %s\n", box, t.Content)
	}
	p.printf("todo:\n%s", b.String())
}

func (p *progress) summary(s *app.Session) {
	u, cost, known := s.Agent.Usage()
	c := "unknown"
	if known {
		c = fmt.Sprintf("$%.4f", cost)
	}
	p.printf("arbor: %d input + %d output tokens (%d cached), cost %s\n", u.InputTokens, u.OutputTokens, u.CacheReadTokens, c)
}

// brief renders a call's input on one short line.
func brief(raw json.RawMessage) string {
	var m map[string]any
	if json.Unmarshal(raw, &m) == nil {
		for _, k := range []string{"command", "path", "pattern", "question"} {
			if v, ok := m[k].(string); ok {
				return clipLine(v, 100)
			}
		}
	}
	return clipLine(string(raw), 100)
}

func firstLine(s string) string {
	line, rest, _ := strings.Cut(strings.TrimSpace(s), "\n")
	if rest != "" {
		line += fmt.Sprintf(" (+%d lines)", strings.Count(rest, "\n")+1)
	}
	return clipLine(line, 120)
}

func clipLine(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
