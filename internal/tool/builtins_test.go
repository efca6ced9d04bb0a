package tool

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/arbor-run/arbor/internal/llm"
)

// toolFixture is a workspace in t.TempDir() with every built-in registered.
type toolFixture struct {
	t       *testing.T
	root    string
	reg     *Registry
	todos   *TodoList
	changes chan []Todo
	asker   *scriptedAsker
}

func setupTools(t *testing.T) *toolFixture {
	t.Helper()
	f := &toolFixture{t: t, root: t.TempDir(), changes: make(chan []Todo, 16), asker: &scriptedAsker{}}
	f.todos = NewTodoList(func(items []Todo) { f.changes <- items })
	f.reg = NewRegistry(Builtins(BuiltinOptions{Workspace: f.root, Asker: f.asker, Todos: f.todos})...)
	return f
}

// write creates a file under the workspace and returns its absolute path.
func (f *toolFixture) write(rel, content string) string {
	f.t.Helper()
	p := filepath.Join(f.root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		f.t.Fatal(err)
	}
	return p
}

func (f *toolFixture) read(rel string) string {
	f.t.Helper()
	data, err := os.ReadFile(filepath.Join(f.root, rel))
	if err != nil {
		f.t.Fatal(err)
	}
	return string(data)
}

// call runs a tool with args marshalled to JSON.
func (f *toolFixture) call(name string, args any) Result {
	f.t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		f.t.Fatal(err)
	}
	return f.callRaw(name, string(raw))
}

func (f *toolFixture) callRaw(name, input string) Result {
	return f.reg.Run(context.Background(), llm.ToolCall{ID: "call_1", Name: name, Input: json.RawMessage(input)})
}

// scriptedAsker answers every question with the same answer and remembers
// what it was asked.
type scriptedAsker struct {
	mu     sync.Mutex
	answer Answer
	err    error
	asked  []Question
}

func (a *scriptedAsker) Ask(ctx context.Context, q Question) (Answer, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked = append(a.asked, q)
	return a.answer, a.err
}

func reqOK(t *testing.T, r Result) string {
	t.Helper()
	if r.IsError {
		t.Fatalf("unexpected error result: %s", r.Content)
	}
	return r.Content
}

func reqErr(t *testing.T, r Result) string {
	t.Helper()
	if !r.IsError {
		t.Fatalf("expected an error result, got: %s", r.Content)
	}
	return r.Content
}

func reqContains(t *testing.T, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Fatalf("%q does not contain %q", s, sub)
		}
	}
}

func reqEqual[T comparable](t *testing.T, got, want T) {
	t.Helper()
	if got != want {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestBuiltins(t *testing.T) {
	t.Parallel()

	t.Run("NamesKindsAndTargets", func(t *testing.T) {
		t.Parallel()
		f := setupTools(t)
		wantKinds := map[string]Kind{
			"read_file": KindRead, "write_file": KindWrite, "edit": KindWrite,
			"apply_patch": KindWrite, "delete": KindWrite, "view_image": KindRead, "web_fetch": KindNetwork,
			"list_directory": KindRead, "glob": KindRead, "grep": KindRead,
			"shell": KindExecute, "todo_write": KindInteract, "ask_user": KindInteract,
		}
		names := f.reg.Names()
		reqEqual(t, len(names), len(wantKinds))
		for _, name := range names {
			tl, _ := f.reg.Lookup(name)
			reqEqual(t, tl.Info().Kind, wantKinds[name])
		}

		targets := []struct {
			tool, input string
			want        Target
		}{
			{"read_file", `{"path":"a/b.txt"}`, Target{Paths: []string{"a/b.txt"}}},
			{"write_file", `{"path":"/etc/x","content":""}`, Target{Paths: []string{"/etc/x"}}},
			{"edit", `{"path":"x.go","old_string":"a","new_string":"b"}`, Target{Paths: []string{"x.go"}}},
			{"apply_patch", `{"patch":"*** Begin Patch\n*** Add File: n.txt\n+x\n*** Delete File: ../o.txt\n*** End Patch"}`, Target{Paths: []string{"n.txt", "../o.txt"}}},
			{"delete", `{"paths":["a","/etc/passwd"],"reason":"r"}`, Target{Paths: []string{"a", "/etc/passwd"}}},
			{"list_directory", `{}`, Target{Paths: []string{"."}}},
			{"glob", `{"pattern":"../../secret/**/*.key"}`, Target{Paths: []string{"../../secret"}}},
			{"glob", `{"pattern":"/etc/*.conf"}`, Target{Paths: []string{"/etc"}}},
			{"grep", `{"pattern":"x","path":"src"}`, Target{Paths: []string{"src"}}},
			{"shell", `{"command":"ls -la"}`, Target{Command: "ls -la"}},
			{"todo_write", `{"todos":[]}`, Target{}},
		}
		for _, tc := range targets {
			tl, _ := f.reg.Lookup(tc.tool)
			got, err := tl.Target(json.RawMessage(tc.input))
			if err != nil {
				t.Fatalf("%s: %v", tc.tool, err)
			}
			reqEqual(t, got.Command, tc.want.Command)
			reqEqual(t, strings.Join(got.Paths, "|"), strings.Join(tc.want.Paths, "|"))
		}
	})

	t.Run("EmptyWorkspaceIsCurrentDirectory", func(t *testing.T) {
		t.Parallel()
		wd, err := os.Getwd()
		if err != nil {
			t.Fatal(err)
		}
		reg := NewRegistry(Builtins(BuiltinOptions{})...)
		res := reg.Run(context.Background(), llm.ToolCall{ID: "1", Name: "shell", Input: json.RawMessage(`{"command":"pwd"}`)})
		reqContains(t, reqOK(t, res), wd)
	})
}

// TestKindNames: every built-in's kind has a name, web_fetch's is
// network (it was "unknown", which the web API showed as the kind of a
// web_fetch approval).
func TestKindNames(t *testing.T) {
	t.Parallel()
	for _, tl := range Builtins(BuiltinOptions{Workspace: t.TempDir()}) {
		if k := tl.Info().Kind.String(); k == "unknown" {
			t.Errorf("%s: kind %d has no name", Name(tl), tl.Info().Kind)
		}
	}
	if got := KindNetwork.String(); got != "network" {
		t.Fatalf("KindNetwork is %q", got)
	}
}
