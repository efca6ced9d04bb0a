package cli

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

// terminal answers interactions: approvals and questions. With yes it
// approves every call; when in is not a terminal it denies approvals and
// declines the agents' own questions, saying why, and leaves the questions
// of ask nodes pending for 'arbor answer'.
type terminal struct {
	in          io.Reader
	out         io.Writer
	yes         bool
	interactive bool
	// approvalsOnly leaves questions to another front end (the live view).
	approvalsOnly bool
	runID         string

	once   sync.Once
	reader *bufio.Reader
}

const noTerminal = "approval is required but stdin is not a terminal: rerun with --yes, choose --mode auto-edit or trust, or add an allow rule"

// serve answers every interaction published on bus through broker until
// the returned stop function is called.
func (t *terminal) serve(ctx context.Context, bus *agent.Bus, broker *agent.Broker) (stop func()) {
	// The subscriber only queues: answering may wait for a person, and
	// the queue has no bound, so no number of pending interactions blocks
	// the subscription or the agents.
	var (
		mu      sync.Mutex
		pending []agent.Interaction
	)
	wake := make(chan struct{}, 1)
	sub := bus.Subscribe(func(e agent.Event) {
		if r, ok := e.(*agent.InteractionRequested); ok {
			mu.Lock()
			pending = append(pending, r.Interaction)
			mu.Unlock()
			select {
			case wake <- struct{}{}:
			default:
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
			for _, in := range batch {
				if ctx.Err() != nil {
					return
				}
				if t.approvalsOnly && in.Kind != agent.KindApproval {
					continue
				}
				if resp, ok := t.answer(in); ok {
					// A stale id (the call was cancelled meanwhile) is fine to ignore.
					_ = broker.Resolve(in.ID, resp)
				}
			}
		}
	})
	return func() {
		sub.Close()
		cancel()
		if !t.interactive {
			wg.Wait()
		}
		// An interactive reader may be blocked reading the terminal; the
		// process is about to exit, so it is not waited for.
	}
}

func (t *terminal) answer(in agent.Interaction) (agent.Response, bool) {
	switch in.Kind {
	case agent.KindApproval:
		ap := t.approve(*in.Approval)
		return agent.Response{Approval: &ap}, true
	case agent.KindQuestion:
		if in.Question.AskNode != 0 {
			ans, ok := t.answerAskNode(*in.Question)
			return agent.Response{Answer: &ans}, ok
		}
		ans := t.ask(*in.Question)
		return agent.Response{Answer: &ans}, true
	}
	return agent.Response{}, false
}

func (t *terminal) line() (string, bool) {
	t.once.Do(func() { t.reader = bufio.NewReader(t.in) })
	s, err := t.reader.ReadString('\n')
	if err != nil && s == "" {
		return "", false
	}
	return strings.TrimSpace(s), true
}

func (t *terminal) approve(r tool.ApprovalRequest) tool.Approval {
	if t.yes {
		return tool.Approval{Allow: true}
	}
	if !t.interactive {
		fmt.Fprintf(t.out, "! %s %s denied: %s\n", r.Tool, brief(r.Input), noTerminal)
		return tool.Approval{Message: noTerminal}
	}
	return promptApproval(t.out, t.line, r)
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

func (t *terminal) answerAskNode(q tool.Question) (tool.Answer, bool) {
	node := fmt.Sprintf("#%d", q.AskNode)
	if !t.interactive {
		fmt.Fprintf(t.out, "? %s asks: %s\n  answer with: arbor answer %s '%s' \"…\"\n", node, q.Question, t.runID, node)
		return tool.Answer{}, false
	}
	return promptQuestion(t.out, t.line, q), true
}

func (t *terminal) ask(q tool.Question) tool.Answer {
	if !t.interactive {
		fmt.Fprintf(t.out, "! question not answered (stdin is not a terminal): %s\n", q.Question)
		return tool.Answer{Declined: true}
	}
	return promptQuestion(t.out, t.line, q)
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
