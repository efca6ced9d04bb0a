package tree

import (
	"context"
	"fmt"
	"strings"

	"github.com/arbor-run/arbor/internal/store"
)

const systemTree = `You are one node of a coordination tree run by arbor. Each node is an agent
with one task. You may do the task yourself with your tools, or split it:

- spawn(goal, prompt, blocked_by?) creates a child that starts with a clean context:
  its goal, your prompt, and the results of the nodes it is blocked_by. Use it for
  independent work (research, an isolated change).
- fork(...) is the same, but the child also receives the results of every sibling
  that has completed when it starts. Use it for work that builds on what the team
  has found so far (analysis, synthesis of findings).
- ask(question, options?, default?, blocked_by?) asks the human; the answer becomes
  that node's result, which other nodes can be blocked_by.
- blocked_by takes node ids ("#3"): a node starts only when those have completed,
  and their results are put into its context. Children run in parallel otherwise.
- read_tree shows the whole tree; read_node shows one node in full.
- stop, pause, resume and modify act on nodes in your own subtree only.
- spawn and fork take budget_usd and max_tokens to cap what a child and its own
  children may spend; a child that runs out fails, and you are told.
- complete(result) ends your turn with your result. If you spawned children, your
  result is a draft: when all children have ended you are woken with their results
  to synthesize, and your next complete is your final result.

Split only when it helps (parallel work, a context that would grow too large,
a question only a person can answer). Small tasks are best done directly.
Always finish by calling complete with a result that stands on its own.`

// systemPrompt is appended to the agent's own system prompt by the app.
func (r *run) systemPrompt() string { return systemTree }

// abbrev returns the first line of s, cut to n runes.
func abbrev(s string, n int) string {
	line := firstLine(s)
	if rs := []rune(line); len(rs) > n {
		return string(rs[:n-1]) + "…"
	}
	if strings.Contains(strings.TrimSpace(s), "\n") {
		return line + " …"
	}
	return line
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}

// initialPrompt is a node's first user message: where it sits in the tree,
// its task, and the context it was given.
func (r *run) initialPrompt(n store.Node) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n.ID == 1 {
		if n.Prompt != "" {
			return fmt.Sprintf("You are the root node #1. Your goal:\n\n%s\n\nContext:\n%s", n.Goal, n.Prompt)
		}
		return fmt.Sprintf("You are the root node #1. Your goal:\n\n%s", n.Goal)
	}
	var chain []string
	for p := n.ParentID; p != 0; p = r.nodes[p].ParentID {
		limit := 200
		if p == 1 {
			limit = 120
		}
		chain = append([]string{fmt.Sprintf("#%d %s", p, abbrev(r.nodes[p].Goal, limit))}, chain...)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "You are node #%d. Goal chain (root first; read_node #1 for the root's full text):\n", n.ID)
	for i, c := range chain {
		fmt.Fprintf(&b, "%s%s\n", strings.Repeat("  ", i), c)
	}
	fmt.Fprintf(&b, "\nYour goal: %s\n", n.Goal)
	if n.Prompt != "" {
		fmt.Fprintf(&b, "\nInstructions:\n%s\n", n.Prompt)
	}
	if n.Returns != "" && n.Returns != "text" {
		fmt.Fprintf(&b, "\nYour result must be %s (complete checks it).\n", returnsHelp[n.Returns])
	}
	if n.Context != "" {
		fmt.Fprintf(&b, "\nContext from other nodes:\n%s\n", n.Context)
	}
	b.WriteString("\nWhen you are done, call complete(result).")
	return b.String()
}

var returnsHelp = map[string]string{
	"json": "a JSON value",
	"list": "a JSON array of strings",
	"file": "the path of a file you wrote in the workspace",
}

// startContext builds the results a node starts with: its dependencies'
// and, for a fork, its completed siblings'; distilled by the run's model
// when the node has a context_query.
func (r *run) startContext(ctx context.Context, n *store.Node) (string, error) {
	r.mu.Lock()
	raw := r.rawContextLocked(n)
	r.mu.Unlock()
	if raw == "" || n.ContextQuery == "" {
		return raw, nil
	}
	spec := AgentSpec{RunID: r.id, NodeID: n.ID, SessionID: n.SessionID, Model: n.Model, Gate: r.gateFor(n.ID), Charge: r.chargeFor(n.ID)}
	text, err := r.e.o.Agents.Distill(ctx, spec, n.ContextQuery, raw)
	if err != nil {
		return "", fmt.Errorf("context_query for #%d: %w", n.ID, err)
	}
	return text, nil
}

func (r *run) rawContextLocked(n *store.Node) string {
	var b strings.Builder
	seen := map[int64]bool{}
	add := func(id int64, why string) {
		if seen[id] {
			return
		}
		seen[id] = true
		d := r.nodes[id]
		fmt.Fprintf(&b, "--- #%d %s (%s) ---\n%s\n\n", d.ID, d.Goal, why, d.Result)
	}
	for _, dep := range n.BlockedBy {
		add(dep, "dependency")
	}
	if n.Spawn == "fork" {
		for _, s := range r.children[n.ParentID] {
			// Siblings complete when the node started (read_node shows
			// the same results later).
			sib := r.nodes[s]
			if s != n.ID && sib.State == StateComplete && (n.StartedAt == nil || sib.EndedAt == nil || !sib.EndedAt.After(*n.StartedAt)) {
				add(s, "sibling")
			}
		}
	}
	return strings.TrimSpace(b.String())
}

// renderTreeLocked is read_tree's compact text.
func (r *run) renderTreeLocked() string {
	nodes := make([]store.Node, 0, len(r.nodes))
	for _, id := range r.idsLocked() {
		nodes = append(nodes, *r.nodes[id])
	}
	return Render(nodes)
}

// Render prints a tree compactly, one line per node, children indented
// under their parent: id, state, kind, goal, blocked_by, and the result or
// error cut short.
func Render(nodes []store.Node) string {
	byID := make(map[int64]store.Node, len(nodes))
	children := map[int64][]int64{}
	for _, n := range nodes {
		byID[n.ID] = n
		if n.ParentID != 0 {
			children[n.ParentID] = append(children[n.ParentID], n.ID)
		}
	}
	var b strings.Builder
	var walk func(id int64, depth int)
	walk = func(id int64, depth int) {
		n, ok := byID[id]
		if !ok {
			return
		}
		tag := string(n.Kind)
		if n.Spawn != "" {
			tag = n.Spawn
		}
		text := n.Goal
		if n.Kind == KindAsk {
			text = n.Question
		}
		fmt.Fprintf(&b, "%s#%d [%s] %s: %s", strings.Repeat("  ", depth), n.ID, n.State, tag, abbrev(text, 100))
		if n.Model != "" {
			fmt.Fprintf(&b, " (model: %s)", n.Model)
		}
		if n.Runner != "" {
			fmt.Fprintf(&b, " (runner: %s)", n.Runner)
		}
		if len(n.BlockedBy) > 0 && !n.State.Terminal() {
			fmt.Fprintf(&b, " (blocked_by: %s)", ids(n.BlockedBy))
		}
		switch {
		case n.State == StateComplete:
			fmt.Fprintf(&b, " — result: %s", abbrev(n.Result, 120))
		case n.Error != "":
			fmt.Fprintf(&b, " — error: %s", abbrev(n.Error, 120))
		}
		b.WriteString("\n")
		for _, c := range children[id] {
			walk(c, depth+1)
		}
	}
	walk(1, 0)
	return b.String()
}

func ids(xs []int64) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprintf("#%d", x)
	}
	return strings.Join(s, ", ")
}
