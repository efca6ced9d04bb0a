// Package treetest scripts the model of a whole coordination tree for
// tests: each node gets its own list of turns, chosen by the node a request
// belongs to and by how many turns that node has had, so runs whose nodes
// work in parallel stay deterministic.
package treetest

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/llm/llmtest"
)

// Script maps a node id to its turns: turn i answers the node's request
// that already holds i assistant messages.
type Script map[int64][]llmtest.Turn

var nodeLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`You are (?:the root )?node #(\d+)`) })

// NodeOf returns the node a request belongs to, or 0 for a request that is
// no node's turn (a context_query distillation, a compaction summary).
func NodeOf(req llmtest.Request) int64 {
	if len(req.Messages) == 0 {
		return 0
	}
	m := nodeLine().FindStringSubmatch(req.Messages[0].Text())
	if m == nil {
		return 0
	}
	id, _ := strconv.ParseInt(m[1], 10, 64)
	return id
}

// Turns counts the assistant messages of a request: the node's turn number.
func Turns(req llmtest.Request) int {
	n := 0
	for _, m := range req.Messages {
		if m.Role == llm.RoleAssistant {
			n++
		}
	}
	return n
}

var goalLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^Your goal: (.*)$`) })

// GoalOf returns the goal of the node a request belongs to: the root's
// whole goal, a child's goal line; "" when the request is no node's turn.
func GoalOf(req llmtest.Request) string {
	if len(req.Messages) == 0 {
		return ""
	}
	first := req.Messages[0].Text()
	if g, ok := strings.CutPrefix(first, "You are the root node #1. Your goal:\n\n"); ok {
		return g
	}
	if m := goalLine().FindStringSubmatch(first); m != nil {
		return m[1]
	}
	return ""
}

// ByGoal scripts nodes by their goal instead of their id, for trees whose
// ids depend on which parallel parent spawns first.
type ByGoal map[string][]llmtest.Turn

// GoalResponder answers requests from s like Responder, finding each
// node's turns by its goal.
func GoalResponder(s ByGoal) func(llmtest.Request) llmtest.Turn {
	return respond(func(req llmtest.Request) ([]llmtest.Turn, string, bool) {
		g := GoalOf(req)
		turns, ok := s[g]
		return turns, fmt.Sprintf("goal %q", g), ok || g != ""
	})
}

// Responder answers requests from s, for llmtest.NewServerFunc. Other
// requests (distillations) get "DISTILLED(<first line>)". A node that runs
// out of turns gets an HTTP 400, so a test fails loudly.
func Responder(s Script) func(llmtest.Request) llmtest.Turn {
	return respond(func(req llmtest.Request) ([]llmtest.Turn, string, bool) {
		id := NodeOf(req)
		return s[id], fmt.Sprintf("#%d", id), id != 0
	})
}

// respond builds a responder from a lookup of a node's turns; isNode is
// false for requests that are no node's turn.
func respond(lookup func(llmtest.Request) (turns []llmtest.Turn, name string, isNode bool)) func(llmtest.Request) llmtest.Turn {
	var mu sync.Mutex
	return func(req llmtest.Request) llmtest.Turn {
		mu.Lock()
		defer mu.Unlock()
		turns, name, isNode := lookup(req)
		if !isNode {
			first, _, _ := strings.Cut(strings.TrimSpace(req.LastUserText()), "\n")
			return llmtest.Turn{Text: "DISTILLED(" + first + ")"}
		}
		i := Turns(req)
		if i >= len(turns) {
			return llmtest.Turn{Fault: &llmtest.Fault{Kind: llmtest.FaultServer, Status: 400}, Text: fmt.Sprintf("no turn %d for %s", i, name)}
		}
		return turns[i]
	}
}

// Call is a tool call of a scripted turn.
func Call(name string, input map[string]any) llmtest.ToolCall {
	return llmtest.ToolCall{Name: name, Input: input}
}

// Calls is a turn that makes the given tool calls.
func Calls(cs ...llmtest.ToolCall) llmtest.Turn { return llmtest.Turn{ToolCalls: cs} }

// Complete is a turn that calls complete with result.
func Complete(result string) llmtest.Turn {
	return Calls(Call("complete", map[string]any{"result": result}))
}
