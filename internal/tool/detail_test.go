package tool

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/llm"
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

func reqOKResult(t *testing.T, r Result) Result {
	t.Helper()
	reqOK(t, r)
	return r
}
