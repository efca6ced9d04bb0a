package envelope_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/testutil"
)

// workdirPayload is workdir_changed's payload and status_response.workdir.
type workdirPayload struct {
	SessionID  string `json:"session_id"`
	Path       string `json:"path"`
	WorktreeID string `json:"worktree_id"`
	Generation int    `json:"generation"`
}

func workdirOf(t *testing.T, o out) workdirPayload {
	t.Helper()
	var p struct {
		workdirPayload
		Workdir *workdirPayload `json:"workdir"`
	}
	if err := json.Unmarshal(o.Payload, &p); err != nil {
		t.Fatal(err)
	}
	if p.Workdir != nil {
		return *p.Workdir
	}
	return p.workdirPayload
}

func TestWorktreeSwitch(t *testing.T) {
	t.Parallel()
	write := func(path string) llmtest.Turn {
		return llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "write_file", Input: map[string]any{"path": path, "content": "x"}}}}
	}
	srv := llmtest.NewServer(write("in-tree.txt"), llmtest.Turn{Text: "wrote it"},
		llmtest.Turn{Text: "still here", Expect: "again"})
	defer srv.Close()
	b, ready := setup(t, srv)
	testutil.GitInit(t, b.ws)
	root, err := filepath.EvalSymlinks(b.ws)
	if err != nil {
		t.Fatal(err)
	}

	b.Send(`{"type":"send","content":"/worktree feat"}`)
	changed := b.Next(typ("workdir_changed"))
	w := workdirOf(t, changed)
	wantPath := filepath.Join(root, ".arbor", "worktrees", "feat")
	if w.Path != wantPath || w.WorktreeID != "feat" || w.Generation != 1 || w.SessionID != ready.P.SessionID {
		t.Fatalf("workdir_changed %s", changed.raw)
	}
	b.Send(`{"type":"status"}`)
	st := b.Next(typ("status_response"))
	if got := workdirOf(t, st); got.Path != wantPath || got.WorktreeID != "feat" || got.Generation != 1 || st.P.SessionID != ready.P.SessionID {
		t.Fatalf("status after the switch %s", st.raw)
	}

	// The session's tools now work in the worktree.
	b.Send(`{"type":"send","content":"write a file"}`)
	b.allowNext("write_file")
	b.Next(typ("idle"))
	if _, err := os.Stat(filepath.Join(wantPath, "in-tree.txt")); err != nil {
		t.Fatalf("the file is not in the worktree: %v", err)
	}
	if _, err := os.Stat(filepath.Join(b.ws, "in-tree.txt")); err == nil {
		t.Fatal("the file landed in the main checkout")
	}

	b.Send(`{"type":"send","content":"/worktree off"}`)
	if w := workdirOf(t, b.Next(typ("workdir_changed"))); w.Path != root && w.Path != b.ws || w.WorktreeID != "" || w.Generation != 2 {
		t.Fatalf("back to the main checkout: %+v", w)
	}
	b.Send(`{"type":"send","content":"/worktree off"}`)
	if e := b.Next(typ("error")); !strings.Contains(e.P.Message, "already working in") {
		t.Fatalf("a switch to the current workdir: %s", e.raw)
	}
	// The conversation continues in the same session.
	b.Send(`{"type":"send","content":"again"}`)
	if m := b.Next(typ("assistant_message")); m.P.Text != "still here" {
		t.Fatalf("after the switches: %s", m.raw)
	}
	b.Next(typ("idle"))
	b.Close()
	b.checkSeq()
	for _, o := range b.All {
		if o.Type == "session_switched" {
			t.Fatalf("a worktree switch is not a session switch: %s", o.raw)
		}
	}
}

func TestWorktreeOutsideARepo(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer()
	defer srv.Close()
	b, _ := setup(t, srv)
	b.Send(`{"type":"send","content":"/worktree feat"}`)
	if e := b.Next(typ("error")); !strings.Contains(e.P.Message, "not inside a git repository") {
		t.Fatalf("error %s", e.raw)
	}
	b.Send(`{"type":"status"}`)
	if w := workdirOf(t, b.Next(typ("status_response"))); w.Generation != 0 || w.WorktreeID != "" {
		t.Fatalf("a failed switch changed the workdir: %+v", w)
	}
	b.Close()
}
