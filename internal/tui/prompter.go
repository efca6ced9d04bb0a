package tui

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/arbor-run/arbor/internal/agent"
	"github.com/arbor-run/arbor/internal/tool"
)

// Prompter answers interactions on a terminal: approvals and questions,
// as lines (the live view answers in its own way). With Yes it
// approves every call; when In is not a terminal it denies approvals and
// declines the agents' own questions, saying why, and leaves the questions
// of ask nodes pending for 'arbor answer'. An interaction resolved
// elsewhere (the web view, arbor answer) while it waits or is prompted
// for is dropped from the terminal, which says how it was resolved.
type Prompter struct {
	In          io.Reader // the person's lines
	Out         io.Writer // prompts and notes
	Yes         bool      // approve every call
	Interactive bool      // In is a terminal: prompt; else deny and decline
	// ApprovalsOnly leaves questions to another front end (the live view).
	ApprovalsOnly bool
	RunID         string // named in the hint to answer an ask node

	once  sync.Once
	lines chan string // the terminal's lines, read on a goroutine of their own; closed at EOF
}

const noTerminal = "approval is required but stdin is not a terminal: rerun with --yes, choose --mode auto-edit or trust, or add an allow rule"

// waiting is an interaction the terminal has to answer; gone is closed
// when it was resolved elsewhere.
type waiting struct {
	in   agent.Interaction
	gone chan struct{}
	how  *agent.InteractionResolved // set before gone is closed
}

// what names the interaction in a line: the tool asking, or the question.
func (w *waiting) what() string {
	if w.in.Approval != nil {
		return w.in.Approval.Tool
	}
	if w.in.Question != nil {
		return brief([]byte(strconv.Quote(w.in.Question.Question)))
	}
	return string(w.in.Kind)
}

// Serve answers every interaction published on bus through broker until
// the returned stop function is called.
func (t *Prompter) Serve(ctx context.Context, bus *agent.Bus, broker *agent.Broker) (stop func()) {
	// The subscriber only queues: answering may wait for a person, and
	// the queue has no bound, so no number of pending interactions blocks
	// the subscription or the agents.
	var (
		mu      sync.Mutex // guards pending and open
		pending []*waiting
		open    = map[string]*waiting{}
	)
	wake := make(chan struct{}, 1)
	sub := bus.Subscribe(func(e agent.Event) {
		mu.Lock()
		defer mu.Unlock()
		switch r := e.(type) {
		case *agent.InteractionRequested:
			w := &waiting{in: r.Interaction, gone: make(chan struct{})}
			open[w.in.ID] = w
			pending = append(pending, w)
			select {
			case wake <- struct{}{}:
			default:
			}
		case *agent.InteractionResolved:
			if w, ok := open[r.ID]; ok {
				delete(open, r.ID)
				w.how = r
				close(w.gone)
			}
		}
	})
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-wake:
			}
			mu.Lock()
			batch := pending
			pending = nil
			mu.Unlock()
			for _, w := range batch {
				if ctx.Err() != nil {
					return
				}
				if t.ApprovalsOnly && w.in.Kind != agent.KindApproval {
					continue
				}
				resp, ok := t.answer(w)
				select {
				case <-w.gone:
					if w.how.Resolution == "answered" {
						fmt.Fprintf(t.Out, "\n  %s: answered elsewhere (%s)\n", w.what(), resolvedAs(w.how.Response))
					}
					continue
				default:
				}
				if ok {
					// A stale id (the call was cancelled meanwhile) is fine to ignore.
					_ = broker.Resolve(w.in.ID, resp)
				}
				mu.Lock()
				delete(open, w.in.ID)
				mu.Unlock()
			}
		}
	})
	return func() {
		sub.Close()
		cancel()
		if !t.Interactive {
			wg.Wait()
		}
		// An interactive reader may be blocked reading the terminal; the
		// process is about to exit, so it is not waited for.
	}
}

// resolvedAs says how an interaction was resolved, for the terminal.
func resolvedAs(r agent.Response) string {
	switch {
	case r.Approval != nil && r.Approval.Allow && r.Approval.RememberScope != "":
		return "allowed for the " + r.Approval.RememberScope
	case r.Approval != nil && r.Approval.Allow:
		return "allowed once"
	case r.Approval != nil:
		return "denied"
	case r.Answer != nil && r.Answer.Declined:
		return "declined"
	case r.Answer != nil:
		return fmt.Sprintf("answered %q", r.Answer.Text)
	}
	return "resolved"
}

func (t *Prompter) answer(w *waiting) (agent.Response, bool) {
	select {
	case <-w.gone:
		return agent.Response{}, false // resolved before its turn came
	default:
	}
	line := func() (string, bool) { return t.line(w.gone) }
	in := w.in
	switch in.Kind {
	case agent.KindApproval:
		ap := t.approve(*in.Approval, line)
		return agent.Response{Approval: &ap}, true
	case agent.KindQuestion:
		if in.Question.AskNode != 0 {
			ans, ok := t.answerAskNode(*in.Question, line)
			return agent.Response{Answer: &ans}, ok
		}
		ans := t.ask(*in.Question, line)
		return agent.Response{Answer: &ans}, true
	}
	return agent.Response{}, false
}

// line returns the terminal's next line, or false at EOF or once gone is
// closed (the prompt was answered elsewhere; the next line goes to the
// next prompt).
func (t *Prompter) line(gone <-chan struct{}) (string, bool) {
	t.once.Do(func() {
		t.lines = make(chan string)
		go func() {
			defer close(t.lines)
			r := bufio.NewReader(t.In)
			for {
				s, err := r.ReadString('\n')
				if err != nil && s == "" {
					return
				}
				t.lines <- strings.TrimSpace(s)
			}
		}()
	})
	select {
	case s, ok := <-t.lines:
		return s, ok
	case <-gone:
		return "", false
	}
}

func (t *Prompter) approve(r tool.ApprovalRequest, line func() (string, bool)) tool.Approval {
	if t.Yes {
		return tool.Approval{Allow: true}
	}
	if !t.Interactive {
		fmt.Fprintf(t.Out, "! %s %s denied: %s\n", r.Tool, brief(r.Input), noTerminal)
		return tool.Approval{Message: noTerminal}
	}
	return promptApproval(t.Out, line, r)
}

// promptApproval asks on the terminal until it gets y, n or a.
func promptApproval(out io.Writer, line func() (string, bool), r tool.ApprovalRequest) tool.Approval {
	what := r.Target.Main()
	if what == "" {
		what = string(r.Input)
	}
	fmt.Fprintf(out, "\n? %s wants to run: %s\n", r.Tool, what)
	if r.Reason != "" {
		fmt.Fprintf(out, "  (%s)\n", r.Reason)
	}
	for {
		always := "always for this session"
		if r.SuggestedRule != "" {
			always += " (" + r.SuggestedRule + ")"
		}
		fmt.Fprintf(out, "  [y] yes  [n] no  [a] %s: ", always)
		s, ok := line()
		if !ok {
			return tool.Approval{Message: "no answer: the terminal closed"}
		}
		switch strings.ToLower(s) {
		case "y", "yes":
			return tool.Approval{Allow: true}
		case "n", "no":
			fmt.Fprint(out, "  reason for the agent (optional): ")
			why, _ := line()
			return tool.Approval{Message: why}
		case "a", "always":
			return tool.Approval{Allow: true, RememberScope: "session"}
		}
	}
}

func (t *Prompter) answerAskNode(q tool.Question, line func() (string, bool)) (tool.Answer, bool) {
	node := fmt.Sprintf("#%d", q.AskNode)
	if !t.Interactive {
		fmt.Fprintf(t.Out, "? %s asks: %s\n  answer with: arbor answer %s '%s' \"…\"\n", node, q.Question, t.RunID, node)
		return tool.Answer{}, false
	}
	return promptQuestion(t.Out, line, q), true
}

func (t *Prompter) ask(q tool.Question, line func() (string, bool)) tool.Answer {
	if !t.Interactive {
		fmt.Fprintf(t.Out, "! question not answered (stdin is not a terminal): %s\n", q.Question)
		return tool.Answer{Declined: true}
	}
	return promptQuestion(t.Out, line, q)
}

// promptQuestion shows a question with numbered options; a number picks an
// option, other text is the answer, an empty line takes the default (or
// declines when there is none).
func promptQuestion(out io.Writer, line func() (string, bool), q tool.Question) tool.Answer {
	fmt.Fprintf(out, "\n? %s\n", q.Question)
	for i, o := range q.Options {
		fmt.Fprintf(out, "  %d. %s\n", i+1, o)
	}
	if q.Default != "" {
		fmt.Fprintf(out, "  answer (Enter for %q): ", q.Default)
	} else {
		fmt.Fprint(out, "  answer (empty to decline): ")
	}
	s, ok := line()
	if !ok || s == "" {
		if q.Default != "" && ok {
			return tool.Answer{Text: q.Default}
		}
		return tool.Answer{Declined: true}
	}
	if n, err := strconv.Atoi(s); err == nil && n >= 1 && n <= len(q.Options) {
		return tool.Answer{Text: q.Options[n-1]}
	}
	return tool.Answer{Text: s}
}
