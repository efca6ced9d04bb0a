package tree

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/invopop/jsonschema"

	"github.com/arbor-run/arbor/internal/permission"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/tool"
)

// NodeRef is a node id as the model writes it: "#4", "4" or 4.
type NodeRef int64

// UnmarshalJSON accepts a number or a string with an optional '#'.
func (r *NodeRef) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		var n int64
		if err := json.Unmarshal(b, &n); err != nil {
			return fmt.Errorf("a node id must look like \"#3\", not %s", b)
		}
		*r = NodeRef(n)
		return nil
	}
	n, err := ParseID(s)
	if err != nil {
		return err
	}
	*r = NodeRef(n)
	return nil
}

// JSONSchema describes NodeRef to the model.
func (NodeRef) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{
		Description: `a node id such as "#3"`,
		OneOf:       []*jsonschema.Schema{{Type: "string", Pattern: `^#?[0-9]+$`}, {Type: "integer"}},
	}
}

// ParseID parses "#4" or "4".
func ParseID(s string) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimPrefix(strings.TrimSpace(s), "#"), 10, 64)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("a node id must look like \"#3\", not %q", s)
	}
	return n, nil
}

type spawnArgs struct {
	Goal         string    `json:"goal" jsonschema:"description=A short title for the child's task"`
	Prompt       string    `json:"prompt" jsonschema:"description=Everything the child needs to know to do the task"`
	BlockedBy    []NodeRef `json:"blocked_by,omitempty" jsonschema:"description=Nodes that must complete before the child starts; their results are given to it"`
	Returns      string    `json:"returns,omitempty" jsonschema:"enum=text,enum=json,enum=list,enum=file,description=The form of the child's result (default text)"`
	ContextQuery string    `json:"context_query,omitempty" jsonschema:"description=If set, the context given to the child is first distilled to what this asks for"`
	BudgetUSD    float64   `json:"budget_usd,omitempty" jsonschema:"minimum=0,description=Dollars the child and everything it spawns may spend (default: no limit of its own)"`
	MaxTokens    int64     `json:"max_tokens,omitempty" jsonschema:"minimum=0,description=Tokens the child and everything it spawns may use (default: no limit of its own)"`
	Model        string    `json:"model,omitempty" jsonschema:"description=The model the child runs on: one of the names this tool's description lists (default: your own model)"`
	Runner       string    `json:"runner,omitempty" jsonschema:"enum=arbor,enum=claude-code,description=The agent that runs the child: arbor's own (arbor) or the Claude Code CLI (claude-code) (default: as configured)"`
}

type askArgs struct {
	Question  string    `json:"question" jsonschema:"description=The question for the human"`
	Options   []string  `json:"options,omitempty" jsonschema:"description=Suggested answers"`
	Default   string    `json:"default,omitempty" jsonschema:"description=The answer taken when the human just presses Enter"`
	BlockedBy []NodeRef `json:"blocked_by,omitempty" jsonschema:"description=Nodes that must complete before the question is asked"`
}

type completeArgs struct {
	Result string `json:"result" jsonschema:"description=Your result; it must stand on its own"`
}

type idArgs struct {
	ID NodeRef `json:"id"`
}

type modifyArgs struct {
	ID     NodeRef `json:"id"`
	Goal   string  `json:"goal,omitempty"`
	Prompt string  `json:"prompt,omitempty"`
}

type noArgs struct{}

// tools returns the tree tools of node caller.
func (r *run) tools(caller int64) []tool.Tool { return r.toolsFor(caller, false) }

// childModel is the model of a new child of parent: the choice named (by
// its name or its provider/name), else the parent's own.
func (r *run) childModel(parent int64, name string) (string, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.nodes[parent].Model, nil
	}
	for _, m := range r.e.o.Models {
		if m.Name == name || m.Ref == name {
			return m.Ref, nil
		}
	}
	if len(r.e.o.Models) == 0 {
		return "", fmt.Errorf("model: no model choices are configured for this run; leave model out (the child runs on your model)")
	}
	names := make([]string, len(r.e.o.Models))
	for i, m := range r.e.o.Models {
		names[i] = m.Name
	}
	return "", fmt.Errorf("model: %q is not one of the choices: %s", name, strings.Join(names, ", "))
}

// dollarBudgetOver reports whether a child of parent spends under a
// budget in dollars: the run's, or one of its ancestors'.
func (r *run) dollarBudgetOver(parent int64) bool {
	r.usageMu.Lock()
	defer r.usageMu.Unlock()
	if r.meta.BudgetUSD > 0 {
		return true
	}
	for a := parent; a != 0; a = r.parents[a] {
		if r.limits[a].cost > 0 {
			return true
		}
	}
	return false
}

// modelsText is what spawn's and fork's descriptions say about the model
// choices, with their prices, so the model can pick.
func modelsText(models []ModelChoice) string {
	if len(models) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(" Choose the child's model with model (default: your own); run cheap, simple tasks on a cheap model and hard ones on a strong one. Choices:")
	for _, m := range models {
		fmt.Fprintf(&b, " %s = %s", m.Name, m.Ref)
		if m.Price != nil {
			fmt.Fprintf(&b, " ($%g in / $%g out per million tokens)", m.Price.InputPerMTok, m.Price.OutputPerMTok)
		} else {
			b.WriteString(" (price unknown)")
		}
		b.WriteString(";")
	}
	return strings.TrimSuffix(b.String(), ";") + "."
}

func refs(rs []NodeRef) []int64 {
	out := make([]int64, len(rs))
	for i, r := range rs {
		out[i] = int64(r)
	}
	return out
}

// create adds a child of parent after validating its dependencies; when
// deferred, the node is left for the next commit (see toolsFor).
func (r *run) create(parent int64, n store.Node, deferred bool) tool.Result {
	if strings.TrimSpace(n.Goal) == "" {
		return tool.Errorf("goal must not be empty")
	}
	if n.Returns == "" && n.Kind == KindTask {
		n.Returns = "text"
	}
	r.mu.Lock()
	detach := false
	defer func() {
		if detach {
			r.unlockDetached()
		} else {
			r.unlock()
		}
	}()
	if r.finished {
		return tool.Errorf("the run has ended")
	}
	if c, ok := r.calls[callKey{parent: parent, call: n.CallID}]; ok && n.CallID != "" {
		return tool.Result{Content: fmt.Sprintf(`{"id": "#%d"}`, c)} // the call ran before a crash
	}
	if err := r.checkDepsLocked(parent, n.BlockedBy); err != nil {
		return tool.Errorf("%v", err)
	}
	r.maxID++
	n.RunID, n.ID, n.ParentID, n.State = r.id, r.maxID, parent, StatePending
	n.CreatedAt = r.e.o.Now().UTC()
	if deferred {
		r.unsaved = append(r.unsaved, change{node: n})
		r.nodes[n.ID] = &n
		if len(n.BlockedBy) > 0 {
			r.ended = true // as commitLocked marks a pending node with dependencies
		}
	} else {
		r.commitLocked([]change{{node: n}})
		if r.finished { // the commit failed
			return tool.Errorf("could not store the node")
		}
	}
	r.children[parent] = append(r.children[parent], n.ID)
	r.addLocked(&n)
	r.track(n)
	// What the node starts is one queued commit, which the spawning agent
	// does not wait for (unlockDetached): launched one by one with a
	// commit each under the lock, the children that start while a step
	// spawns held the run, and the step, for a commit apiece.
	staged := len(r.unsaved)
	r.batching = true
	r.scheduleLocked()
	if len(r.unsaved) > staged {
		r.endBatchLocked()
		detach = true
	} else {
		r.batching = false // a spawn that starts nothing leaves its node for the flush
	}
	return tool.Result{Content: fmt.Sprintf(`{"id": "#%d"}`, n.ID)}
}

// checkDepsLocked validates blocked_by for a new child of parent: every
// node exists, none repeats, and none waits — through its own blocked_by
// or because a parent waits for its children — for the parent, which
// waits for the new child: that would be a cycle and nothing in it could
// ever start. An ancestor is the plainest case.
func (r *run) checkDepsLocked(parent int64, deps []int64) error {
	seen := map[int64]bool{}
	for _, d := range deps {
		if _, ok := r.nodes[d]; !ok {
			return fmt.Errorf("blocked_by: #%d does not exist (read_tree lists the nodes)", d)
		}
		if seen[d] {
			return fmt.Errorf("blocked_by: #%d is listed twice", d)
		}
		seen[d] = true
		for a := parent; a != 0; a = r.nodes[a].ParentID {
			if a == d {
				return fmt.Errorf("blocked_by: #%d is an ancestor of the new node; an ancestor completes only after its children, so this would never start", d)
			}
		}
		if path := r.waitPathLocked(d, parent); path != nil {
			return fmt.Errorf("blocked_by: #%d would close a cycle %s → the new node → #%d (a node waits for its blocked_by nodes and for its children), so none of them could ever finish", d, cycleText(path), d)
		}
	}
	return nil
}

// waitPathLocked returns a chain of waits from node from to node to
// (from, …, to), or nil. A node waits for its blocked_by nodes and for its
// children; a terminal node waits for nothing.
func (r *run) waitPathLocked(from, to int64) []int64 {
	prev := map[int64]int64{from: 0}
	queue := []int64{from}
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		if id == to {
			var path []int64
			for x := id; x != 0; x = prev[x] {
				path = append([]int64{x}, path...)
			}
			return path
		}
		n := r.nodes[id]
		if n == nil || n.State.Terminal() {
			continue
		}
		next := append(slices.Clone(n.BlockedBy), r.children[id]...)
		for _, m := range next {
			if _, ok := prev[m]; !ok {
				prev[m] = id
				queue = append(queue, m)
			}
		}
	}
	return nil
}

// cycleText renders a chain of waits: "#3 → #2".
func cycleText(path []int64) string {
	parts := make([]string, len(path))
	for i, id := range path {
		parts[i] = fmt.Sprintf("#%d", id)
	}
	return strings.Join(parts, " → ")
}

// complete records caller's result (a draft until children and synthesis
// are done) and ends its turn.
func (r *run) complete(caller int64, result string) tool.Result {
	r.mu.Lock()
	defer r.unlock()
	n := r.nodes[caller]
	if n.State != StateActive && n.State != StateSynthesizing {
		return tool.Errorf("#%d is %s; complete is only for a running node", caller, n.State)
	}
	if err := checkReturns(n.Returns, result, r.meta.Workspace); err != nil {
		return tool.Errorf("result rejected: %v", err)
	}
	if n.Runner != "" {
		// An external runner keeps no transcript of arbor's: the draft
		// must be durable before the runner hears it was recorded.
		r.setLocked(caller, "", func(m *store.Node) { m.Draft, m.HasDraft = result, true })
	} else {
		// The draft is written with the transition that ends the turn
		// (endTurn), one commit instead of two. Until then the transcript
		// holds it: a crash in between leaves this call and its result
		// stored, and runAgent takes the draft from there (draftIn).
		d := *n
		d.Draft, d.HasDraft = result, true
		r.nodes[caller] = &d
	}
	msg := "Result recorded."
	if !r.childrenDoneLocked(caller) {
		msg = "Draft recorded. You will be woken with your children's results when they have all ended."
	}
	return tool.Result{Content: msg, EndTurn: true}
}

func checkReturns(kind, result, workspace string) error {
	switch kind {
	case "json":
		if !json.Valid([]byte(result)) {
			return errors.New("returns is json, and this is not valid JSON")
		}
	case "list":
		var xs []string
		if err := json.Unmarshal([]byte(result), &xs); err != nil {
			return errors.New(`returns is list: give a JSON array of strings, like ["a", "b"]`)
		}
	case "file":
		// Confined like the file tools: symlinks and ".." may not lead
		// out of the workspace.
		p, inside, err := permission.ResolvePath(workspace, strings.TrimSpace(result))
		if err != nil || !inside {
			return fmt.Errorf("returns is file, and %q is not in the workspace", result)
		}
		if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
			return fmt.Errorf("returns is file, and %q is not a file in the workspace", result)
		}
	}
	return nil
}

func (r *run) readNode(id int64) tool.Result {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, ok := r.nodes[id]
	if !ok {
		return tool.Errorf("#%d does not exist (read_tree lists the nodes)", id)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "#%d %s", n.ID, n.Kind)
	if n.Spawn != "" {
		fmt.Fprintf(&b, " (%s)", n.Spawn)
	}
	fmt.Fprintf(&b, " [%s]\nparent: #%d\ngoal: %s\n", n.State, n.ParentID, n.Goal)
	if n.Model != "" {
		fmt.Fprintf(&b, "model: %s\n", n.Model)
	}
	if n.Runner != "" {
		fmt.Fprintf(&b, "runner: %s\n", n.Runner)
	}
	if n.Prompt != "" {
		fmt.Fprintf(&b, "prompt: %s\n", n.Prompt)
	}
	if n.Kind == KindAsk && len(n.Options) > 0 {
		fmt.Fprintf(&b, "options: %s\n", strings.Join(n.Options, " | "))
	}
	if len(n.BlockedBy) > 0 {
		fmt.Fprintf(&b, "blocked_by: %s\n", ids(n.BlockedBy))
	}
	if kids := r.children[id]; len(kids) > 0 {
		fmt.Fprintf(&b, "children: %s\n", ids(kids))
	}
	if used, lim := r.spentBy(id); used.tokens > 0 || lim != (spend{}) {
		fmt.Fprintf(&b, "spent: $%.4f, %d tokens (with its subtree)", used.cost, used.tokens)
		if lim.cost > 0 {
			fmt.Fprintf(&b, "; budget $%.2f", lim.cost)
		}
		if lim.tokens > 0 {
			fmt.Fprintf(&b, "; max %d tokens", lim.tokens)
		}
		b.WriteString("\n")
	}
	if n.ContextQuery != "" {
		if n.Context != "" {
			fmt.Fprintf(&b, "context (distilled by context_query %q):\n%s\n", n.ContextQuery, n.Context)
		} else {
			fmt.Fprintf(&b, "context_query: %s (not distilled yet)\n", n.ContextQuery)
		}
		if raw := r.rawContextLocked(n); raw != "" {
			fmt.Fprintf(&b, "results it was distilled from:\n%s\n", raw)
		}
	}
	if n.Result != "" {
		fmt.Fprintf(&b, "result:\n%s\n", n.Result)
	}
	if n.Error != "" {
		fmt.Fprintf(&b, "error: %s\n", n.Error)
	}
	return tool.Result{Content: b.String()}
}
