package tool

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/arbor-run/arbor/internal/llm"
)

// Registry holds the tools offered to one agent and resolves the names the
// model uses. Lookup is tolerant: case, '_' and '-' are ignored, so
// "TodoWrite", "todo-write" and "TODO_WRITE" all find "todo_write". Tools
// keep the order they were added in, so Specs is stable from call to call
// (which keeps provider prompt caches warm).
//
// A Registry is safe for concurrent use.
type Registry struct {
	mu      sync.RWMutex   // guards every field below
	static  []Tool         // added with Add, in order
	sources []*sourceState // added with AddSource, in order
	order   []Tool         // static, then each source's current tools
	keys    []string       // keys[i] is order[i]'s normalized name
	// byKey maps a normalized name to its index in order, in a registry
	// of more than smallRegistry tools; a smaller one is searched in
	// keys (every node of a tree builds a registry, and the map was most
	// of its memory).
	byKey map[string]int
}

// smallRegistry is the most tools a registry finds by searching keys.
const smallRegistry = 32

// NewRegistry returns a registry holding tools.
func NewRegistry(tools ...Tool) *Registry {
	r := &Registry{
		static: make([]Tool, 0, len(tools)),
		order:  make([]Tool, 0, len(tools)),
		keys:   make([]string, 0, len(tools)),
	}
	for _, t := range tools {
		r.addLocked(t)
	}
	return r
}

// Add registers t. It panics when another tool already has the same name
// after normalization: two tools the model cannot tell apart are a
// programming error.
func (r *Registry) Add(t Tool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.addLocked(t)
	r.rebuildLocked()
}

// addLocked adds t to static and to the end of order (rebuildLocked puts
// it before the sources' tools); r.mu must be held (or r not shared yet).
func (r *Registry) addLocked(t Tool) {
	name := Name(t)
	key := toolNameKey(name)
	if key == "" {
		panic(fmt.Sprintf("tool.Registry: tool name %q is empty after normalization", name))
	}
	if i := r.indexLocked(key); i >= 0 {
		panic(fmt.Sprintf("tool.Registry: tool %q clashes with already registered %q", name, Name(r.order[i])))
	}
	r.static = append(r.static, t)
	r.appendLocked(key, t)
}

// appendLocked adds t, whose normalized name is key, to the end of order.
func (r *Registry) appendLocked(key string, t Tool) {
	r.order = append(r.order, t)
	r.keys = append(r.keys, key)
	switch {
	case r.byKey != nil:
		r.byKey[key] = len(r.order) - 1
	case len(r.keys) > smallRegistry:
		r.byKey = make(map[string]int, len(r.keys))
		for i, k := range r.keys {
			r.byKey[k] = i
		}
	}
}

// indexLocked is the index in order of the tool whose normalized name is
// key, -1 when there is none; r.mu must be held.
func (r *Registry) indexLocked(key string) int {
	if r.byKey != nil {
		if i, ok := r.byKey[key]; ok {
			return i
		}
		return -1
	}
	for i, k := range r.keys {
		if k == key {
			return i
		}
	}
	return -1
}

// Lookup finds a tool by name, ignoring case, '_' and '-'. A name not
// found makes the registry look at its sources again first.
func (r *Registry) Lookup(name string) (Tool, bool) {
	key := toolNameKey(name)
	r.mu.RLock()
	t, ok := r.findLocked(key)
	r.mu.RUnlock()
	if ok || !r.refresh() {
		return t, ok
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.findLocked(key)
}

func (r *Registry) findLocked(key string) (Tool, bool) {
	if i := r.indexLocked(key); i >= 0 {
		return r.order[i], true
	}
	return nil, false
}

// Specs describes every tool to the model, in the order they were added.
// It takes each source's current tools first, so a change a source made
// reaches the model at its next call.
func (r *Registry) Specs() []llm.ToolSpec {
	specs, _ := r.SpecsUpTo(0)
	return specs
}

// SpecsUpTo is Specs for a provider that takes at most limit tools in a
// request (0: no limit): every tool added with Add, then the sources'
// tools in their order until there are limit in all. left names the
// sources' tools left out, in order.
func (r *Registry) SpecsUpTo(limit int) (specs []llm.ToolSpec, left []string) {
	r.refresh()
	r.mu.RLock()
	defer r.mu.RUnlock()
	keep := len(r.order)
	if limit > 0 && keep > limit {
		keep = max(limit, len(r.static))
	}
	specs = make([]llm.ToolSpec, keep)
	for i, t := range r.order[:keep] {
		specs[i] = t.Info().Spec()
	}
	for _, t := range r.order[keep:] {
		left = append(left, Name(t))
	}
	return specs, left
}

// Names returns every tool's name, in the order they were added.
func (r *Registry) Names() []string {
	r.refresh()
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, len(r.order))
	for i, t := range r.order {
		names[i] = Name(t)
	}
	return names
}

// Run runs one call of the model. An unknown tool is an error result that
// names it and lists the tools that exist.
func (r *Registry) Run(ctx context.Context, call llm.ToolCall) Result {
	t, ok := r.Lookup(call.Name)
	if !ok {
		// A model trained on Claude Code's tools calls them by their
		// names and argument names.
		if t, ok = r.Lookup(FromClaudeCode(call.Name)); ok {
			call.Input = claudeCodeInput(Name(t), call.Input)
		} else if t, ok = r.Lookup(FromQwen(call.Name)); ok {
			// Or on qwen's (run_shell_command, grep_search, …).
			call.Input = qwenInput(Name(t), call.Input)
		} else if t, ok = r.Lookup(FromFamily(call.Name)); ok {
			// Or on Chord's and Codex's (read, question, list_dir, …).
			call.Input = familyInput(Name(t), call.Input)
		}
	}
	if !ok {
		names := r.Names()
		if len(names) == 0 {
			return Errorf("unknown tool %q: no tools are available", call.Name)
		}
		return Errorf("unknown tool %q; available tools: %s", call.Name, strings.Join(names, ", "))
	}
	return t.Run(ctx, Call{ID: call.ID, Input: call.Input})
}

// toolNameKey is the normalized form names are compared by. A name that
// is its own key (lower-case ASCII letters and digits, as most are) is
// returned as it is: every node agent's registry and every call look up
// keys.
func toolNameKey(name string) string {
	plain := name != ""
	for i := 0; i < len(name) && plain; i++ {
		c := name[i]
		plain = 'a' <= c && c <= 'z' || '0' <= c && c <= '9'
	}
	if plain {
		return name
	}
	var b strings.Builder
	for _, c := range strings.TrimSpace(name) {
		if c == '_' || c == '-' {
			continue
		}
		b.WriteRune(c)
	}
	return strings.ToLower(b.String())
}
