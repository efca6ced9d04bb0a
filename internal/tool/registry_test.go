package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/arbor-run/arbor/internal/llm"
)

func namedTool(name string) Tool {
	return New(name, "returns its name", KindRead, func(context.Context, Call, noArgs) Result {
		return Result{Content: name}
	})
}

func TestRegistry(t *testing.T) {
	t.Parallel()

	setup := func() *Registry {
		return NewRegistry(namedTool("read_file"), namedTool("todo_write"), namedTool("shell"))
	}

	t.Run("LookupIsTolerant", func(t *testing.T) {
		t.Parallel()
		reg := setup()
		for _, name := range []string{"todo_write", "TodoWrite", "todo-write", "TODO_WRITE", "todowrite", " todo_write "} {
			tl, ok := reg.Lookup(name)
			if !ok {
				t.Fatalf("Lookup(%q) found nothing", name)
			}
			reqEqual(t, tl.Info().Name, "todo_write")
		}
		if _, ok := reg.Lookup("todo_read"); ok {
			t.Fatal("Lookup found a tool that does not exist")
		}
	})

	t.Run("RunDispatchesByTolerantName", func(t *testing.T) {
		t.Parallel()
		res := setup().Run(context.Background(), llm.ToolCall{ID: "1", Name: "ReadFile", Input: json.RawMessage(`{}`)})
		reqEqual(t, reqOK(t, res), "read_file")
	})

	t.Run("UnknownToolListsAvailable", func(t *testing.T) {
		t.Parallel()
		res := setup().Run(context.Background(), llm.ToolCall{ID: "1", Name: "bash"})
		reqEqual(t, reqErr(t, res), `unknown tool "bash"; available tools: read_file, todo_write, shell`)

		res = NewRegistry().Run(context.Background(), llm.ToolCall{ID: "1", Name: "bash"})
		reqContains(t, reqErr(t, res), "no tools are available")
	})

	t.Run("SpecsAndNamesKeepInsertionOrder", func(t *testing.T) {
		t.Parallel()
		reg := setup()
		reg.Add(namedTool("ask_user"))
		want := []string{"read_file", "todo_write", "shell", "ask_user"}
		reqEqual(t, slices.Equal(reg.Names(), want), true)
		specs := reg.Specs()
		for i, s := range specs {
			reqEqual(t, s.Name, want[i])
			reqEqual(t, s.Description, "returns its name")
			reqEqual(t, string(s.InputSchema), `{"properties":{},"additionalProperties":false,"type":"object"}`)
		}
	})

	t.Run("DuplicateNamePanics", func(t *testing.T) {
		t.Parallel()
		reg := setup()
		defer func() {
			if recover() == nil {
				t.Fatal("Add accepted a name that normalizes to an existing one")
			}
		}()
		reg.Add(namedTool("Todo-Write"))
	})
}

func TestToolNameKey(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]string{
		"spawn":       "spawn",
		"read2":       "read2",
		"todo_write":  "todowrite",
		"Todo-Write":  "todowrite",
		"TODO_WRITE":  "todowrite",
		"  grep ":     "grep",
		"Ünïcode_x":   "ünïcodex",
		"_":           "",
		"":            "",
		"web fetch":   "web fetch",
		"WebFetch":    "webfetch",
		"9lives":      "9lives",
		"mcp__srv__x": "mcpsrvx",
	} {
		if got := toolNameKey(name); got != want {
			t.Errorf("toolNameKey(%q) = %q, want %q", name, got, want)
		}
	}
	r := NewRegistry(namedTool("b_tool"), namedTool("a"))
	if got := r.Names(); !slices.Equal(got, []string{"b_tool", "a"}) {
		t.Fatalf("names %v, want the order added", got)
	}
	for _, name := range []string{"B-Tool", "btool", "A"} {
		if _, ok := r.Lookup(name); !ok {
			t.Errorf("Lookup(%q) found nothing", name)
		}
	}
}

// TestRegistrySmallAndLarge: a registry finds its tools, and refuses a
// clash, the same whether it searches its names (smallRegistry tools or
// fewer) or keeps a map.
func TestRegistrySmallAndLarge(t *testing.T) {
	type args struct{}
	for _, n := range []int{1, smallRegistry, smallRegistry + 1, 3 * smallRegistry} {
		tools := make([]Tool, n)
		for i := range tools {
			tools[i] = New(fmt.Sprintf("tool_%d", i), "a tool", KindRead, func(context.Context, Call, args) Result { return Result{} })
		}
		r := NewRegistry(tools...)
		for i := range tools {
			if got, ok := r.Lookup(fmt.Sprintf("TOOL-%d", i)); !ok || got != tools[i] {
				t.Fatalf("%d tools: TOOL-%d found %v, %v", n, i, got, ok)
			}
		}
		if _, ok := r.Lookup(fmt.Sprintf("tool_%d", n)); ok {
			t.Fatalf("%d tools: found a tool that is not there", n)
		}
		if got := r.Names(); len(got) != n || got[n-1] != fmt.Sprintf("tool_%d", n-1) {
			t.Fatalf("%d tools: Names = %v", n, got)
		}
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%d tools: adding TOOL-0 again did not panic", n)
				}
			}()
			r.Add(New("TOOL-0", "", KindRead, func(context.Context, Call, args) Result { return Result{} }))
		}()
		r.Add(New("extra", "", KindRead, func(context.Context, Call, args) Result { return Result{} }))
		if _, ok := r.Lookup("Extra"); !ok {
			t.Errorf("%d tools: the tool added is not found", n)
		}
	}
}
