package tool

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/permission"
)

// TestDetailOnlyWhenRead: a call no PostToolUse hook reads does no more
// I/O than the model's answer needs (read_file stops at its window,
// write_file does not read what it replaces), and one that a hook reads
// (WithDetail) gets the file's line count and old text.
func TestDetailOnlyWhenRead(t *testing.T) {
	t.Parallel()
	f := setupTools(t)
	f.write("long.txt", strings.Repeat("line\n", 5000))
	f.write("old.txt", "before\n")
	run := func(ctx context.Context, name string, args any) Result {
		raw, err := json.Marshal(args)
		if err != nil {
			t.Fatal(err)
		}
		return reqOKResult(t, f.reg.Run(ctx, llm.ToolCall{ID: "c", Name: name, Input: raw}))
	}

	plain := context.Background()
	if d := run(plain, "read_file", readFileArgs{Path: "long.txt", Limit: 10}).Detail; d != nil {
		t.Fatalf("a read no hook reads has a detail: %+v", d.Read)
	}
	if d := run(plain, "write_file", writeFileArgs{Path: "old.txt", Content: "after\n"}).Detail; d == nil || d.File.Existed || d.File.Before != "" {
		t.Fatalf("a write no hook reads read the old text: %+v", d)
	}

	hooked := WithDetail(plain)
	d := run(hooked, "read_file", readFileArgs{Path: "long.txt", Limit: 10}).Detail
	if d == nil || d.Read.Total != 5001 || d.Read.Lines != 10 || d.Read.Start != 1 {
		t.Fatalf("a read a hook reads: %+v", d)
	}
	w := run(hooked, "write_file", writeFileArgs{Path: "old.txt", Content: "again\n"}).Detail
	if w == nil || !w.File.Existed || w.File.Before != "after\n" || w.File.After != "again\n" {
		t.Fatalf("a write a hook reads: %+v", w)
	}
}

// TestSearchDetailOnlyWhenRead: glob, grep, todo_write and web_fetch give a Detail
// (for a hook's tool_response: glob's times and the workspace-relative
// names, todo_write's list before, web_fetch's status and size) only
// when a hook reads it.
func TestSearchDetailOnlyWhenRead(t *testing.T) {
	t.Parallel()
	f := setupTools(t)
	f.write("sub/a.txt", "alpha\n")
	todos := todoWriteArgs{Todos: []Todo{{ID: "1", Content: "First", Status: TodoInProgress, ActiveForm: "Doing first"}}}
	calls := []struct {
		name string
		args any
	}{
		{"glob", globArgs{Pattern: "*.txt", Path: "sub"}},
		{"grep", grepArgs{Pattern: "alpha"}},
		{"todo_write", todos},
	}
	for _, c := range calls {
		raw, err := json.Marshal(c.args)
		if err != nil {
			t.Fatal(err)
		}
		if d := reqOKResult(t, f.reg.Run(context.Background(), llm.ToolCall{ID: "c", Name: c.name, Input: raw})).Detail; d != nil {
			t.Errorf("%s no hook reads has a detail: %+v", c.name, d)
		}
		d := reqOKResult(t, f.reg.Run(WithDetail(context.Background()), llm.ToolCall{ID: "c", Name: c.name, Input: raw})).Detail
		switch {
		case d == nil:
			t.Errorf("%s a hook reads has no detail", c.name)
		case c.name == "glob" && (d.Glob == nil || len(d.Glob.Files) != 1 || d.Glob.Files[0] != "sub/a.txt"):
			t.Errorf("glob's detail %+v; want sub/a.txt, relative to the workspace", d.Glob)
		case c.name == "grep" && (d.Grep == nil || d.Grep.Content != "sub/a.txt:1:alpha" || d.Grep.Lines != 1):
			t.Errorf("grep's detail %+v", d.Grep)
		case c.name == "todo_write" && (d.Todo == nil || len(d.Todo.Old) != 1 || len(d.Todo.New) != 1):
			t.Errorf("todo_write's detail %+v; want the list it replaced (the same) and the new one", d.Todo)
		}
	}
	srv := webServer(t)
	wf := fetcher(t, permission.ModeDefault, nil, "web_fetch(domain:127.0.0.1)")
	in := json.RawMessage(`{"url":"` + srv.URL + `/docs/cache"}`)
	if d := reqOKResult(t, wf.Run(context.Background(), Call{ID: "c", Input: in})).Detail; d != nil {
		t.Errorf("web_fetch no hook reads has a detail: %+v", d)
	}
	d := reqOKResult(t, wf.Run(WithDetail(context.Background()), Call{ID: "c", Input: in})).Detail
	if d == nil || d.Fetch == nil || d.Fetch.Code != 200 || d.Fetch.Bytes == 0 || d.Fetch.URL != srv.URL+"/docs/cache" {
		t.Errorf("web_fetch a hook reads: %+v", d)
	}
}

func reqOKResult(t *testing.T, r Result) Result {
	t.Helper()
	reqOK(t, r)
	return r
}
