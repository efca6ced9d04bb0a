//go:build unix

package acp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/mcpclient/mcptest"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/store/sqlite"
)

// TestSDK drives the built arbor binary with the official ACP TypeScript
// SDK's client side (testdata/sdk-e2e), as an editor runs `arbor acp`;
// the model is llmtest over real HTTP. node and npm are required.
func TestSDK(t *testing.T) {
	t.Parallel()
	h := setupSDK(t)

	t.Run("prompt streams text and thoughts", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer(llmtest.Turn{Thinking: "The user greets me.", Text: "Hello from arbor, streamed word by word"})
		t.Cleanup(srv.Close)
		home := t.TempDir()
		r := h.drive(t, "prompt", driveConfig{Cwd: workspace(t, home), Env: env(home, srv), Prompts: []string{"Say hello"}})
		r.requireDone(t)
		chunks := r.updates("agent_message_chunk")
		var text strings.Builder
		for _, c := range chunks {
			text.WriteString(c.text())
		}
		if text.String() != "Hello from arbor, streamed word by word" || len(chunks) < 2 {
			r.fatalf(t, "agent_message_chunks = %d holding %q; want several holding the model's text", len(chunks), text.String())
		}
		var thought strings.Builder
		for _, c := range r.updates("agent_thought_chunk") {
			thought.WriteString(c.text())
		}
		if thought.String() != "The user greets me." {
			r.fatalf(t, "agent_thought_chunks hold %q; want the model's thinking", thought.String())
		}
		if got := r.stops(); !slices.Equal(got, []string{"end_turn"}) {
			r.fatalf(t, "stop reasons = %q; want [end_turn]", got)
		}
		if reqs := srv.Requests(); len(reqs) != 1 || !strings.Contains(reqs[0].LastUserText(), "Say hello") {
			r.fatalf(t, "model requests = %d; want 1 holding the prompt", len(reqs))
		}
	})

	// The session offers the project's commands and skills, and
	// compact, after session/new; a prompt that names a command is the
	// prompt it stands for, and /compact compacts the conversation.
	t.Run("slash commands", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer(llmtest.Turn{Expect: "Greet Ada warmly", Text: "Hello, Ada!"},
			llmtest.Turn{Expect: "Conversation to summarize", Text: "The user had Ada greeted."})
		t.Cleanup(srv.Close)
		home := t.TempDir()
		ws := workspace(t, home)
		for name, text := range map[string]string{
			".claude/commands/greet.md":    "---\ndescription: Greet someone\nargument-hint: NAME\n---\nGreet $ARGUMENTS warmly.\n",
			".claude/skills/tidy/SKILL.md": "---\nname: tidy\ndescription: Tidy the imports.\n---\nSteps.\n",
			".claude/commands/compact.md":  "---\ndescription: shadowed\n---\nnot used\n",
		} {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(ws, name)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(ws, name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		r := h.drive(t, "prompt", driveConfig{Cwd: ws, Env: env(home, srv), Prompts: []string{"/greet Ada", "/compact keep the names", "/compact"}})
		r.requireDone(t)
		cmds := r.updates("available_commands_update")
		if len(cmds) != 1 {
			r.fatalf(t, "available_commands_updates = %d; want 1, after session/new", len(cmds))
		}
		var got []string
		for _, c := range cmds[0].AvailableCommands {
			hint := ""
			if c.Input != nil {
				hint = " [" + c.Input.Hint + "]"
			}
			got = append(got, c.Name+": "+c.Description+hint)
		}
		want := []string{"compact: Summarize the conversation so far, to free the model's context [instructions for the summary (optional)]",
			"greet: Greet someone [NAME]", "tidy: Tidy the imports."}
		if !slices.Equal(got, want) {
			r.fatalf(t, "available commands %q; want %q", got, want)
		}
		if got := r.stops(); !slices.Equal(got, []string{"end_turn", "end_turn", "end_turn"}) {
			r.fatalf(t, "stop reasons = %q; want three end_turn", got)
		}
		reqs := srv.Requests()
		if len(reqs) != 2 || !strings.Contains(reqs[0].LastUserText(), "Greet Ada warmly.") || !strings.Contains(reqs[1].LastUserText(), "The user's instructions for this summary: keep the names") {
			r.fatalf(t, "model requests = %d; want the expanded command, then the summary with the instructions", len(reqs))
		}
		var said []string
		for _, c := range r.updates("agent_message_chunk") {
			said = append(said, c.text())
		}
		text := strings.Join(said, "")
		if !strings.Contains(text, "Hello, Ada!Compacted: from now on the model reads a summary") || !strings.HasSuffix(text, "Nothing to compact: no messages since the session started or was last compacted.") {
			r.fatalf(t, "agent_message_chunks %q; want the answer, the compaction's outcome, then nothing to compact", text)
		}
	})

	t.Run("edits go through the editor's buffers after permission", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer(
			llmtest.Turn{ToolCalls: []llmtest.ToolCall{{ID: "call_read", Name: "read_file", Input: map[string]any{"path": "notes.txt"}}}},
			llmtest.Turn{Expect: "the buffer's text, unsaved", ToolCalls: []llmtest.ToolCall{{ID: "call_edit", Name: "edit", Input: map[string]any{"path": "notes.txt", "old_string": "unsaved", "new_string": "saved"}}}},
			llmtest.Turn{ToolCalls: []llmtest.ToolCall{{ID: "call_write", Name: "write_file", Input: map[string]any{"path": "sub/made.txt", "content": "made by arbor\n"}}}},
			llmtest.Turn{Text: "Done."},
		)
		t.Cleanup(srv.Close)
		home := t.TempDir()
		ws := workspace(t, home)
		notes := filepath.Join(ws, "notes.txt")
		if err := os.WriteFile(notes, []byte("the disk's text\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		r := h.drive(t, "prompt", driveConfig{Cwd: ws, Env: env(home, srv), Prompts: []string{"Fix the notes"}, FS: true,
			Buffers: map[string]string{notes: "the buffer's text, unsaved\n"}})
		r.requireDone(t)
		if got := r.stops(); !slices.Equal(got, []string{"end_turn"}) {
			r.fatalf(t, "stop reasons = %q; want [end_turn]", got)
		}
		perms := r.all("permission")
		if len(perms) != 2 || !strings.Contains(string(perms[0].Params), `"toolCallId":"call_edit"`) || !strings.Contains(string(perms[0].Params), `"type":"diff"`) ||
			!strings.Contains(string(perms[1].Params), `"toolCallId":"call_write"`) {
			r.fatalf(t, "permission requests = %d; want 2 (the edit's with its diff, then the write's)", len(perms))
		}
		reads := r.all("read")
		if len(reads) != 2 || reads[0].Path != notes || !reads[0].Buffered || reads[1].Path != notes {
			r.fatalf(t, "fs/read_text_file = %+v; want two of notes.txt (read_file's, edit's), answered from the buffer", reads)
		}
		writes := r.all("write")
		if len(writes) != 2 || writes[0].Path != notes || writes[0].Content != "the buffer's text, saved\n" ||
			writes[1].Path != filepath.Join(ws, "sub", "made.txt") || writes[1].Content != "made by arbor\n" {
			r.fatalf(t, "fs/write_text_file = %+v; want the edited buffer, then sub/made.txt", writes)
		}
		if b, err := os.ReadFile(notes); err != nil || string(b) != "the buffer's text, saved\n" {
			r.fatalf(t, "notes.txt = %q, %v; want what the editor wrote", b, err)
		}
		var edit *update
		for _, u := range r.updates("tool_call") {
			if u.ToolCallID == "call_edit" {
				edit = &u
			}
		}
		if edit == nil || edit.Kind != "edit" {
			r.fatalf(t, "no tool_call of kind edit for call_edit")
		}
		if d := edit.diffs(); len(d) != 1 || d[0].Path != notes || d[0].OldText == nil || *d[0].OldText != "unsaved" || d[0].NewText != "saved" {
			r.fatalf(t, "call_edit's diffs = %+v; want unsaved → saved in notes.txt", d)
		}
		done := 0
		for _, u := range r.updates("tool_call_update") {
			if u.Status == "completed" {
				done++
			}
		}
		if done != 3 {
			r.fatalf(t, "completed tool_call_updates = %d; want 3", done)
		}
		reqs := srv.Requests()
		if len(reqs) != 4 {
			r.fatalf(t, "model requests = %d; want 4", len(reqs))
		}
		for _, tr := range toolResults(reqs[3]) {
			if tr.IsError {
				r.fatalf(t, "tool result %s is an error: %s", tr.CallID, tr.Content)
			}
		}
	})

	t.Run("a cancelled prompt stops its tool processes", func(t *testing.T) {
		t.Parallel()
		r, srv := h.sleeper(t, driveConfig{})
		if n := len(srv.Requests()); n != 1 {
			r.fatalf(t, "model requests = %d; want 1 (nothing after the cancel)", n)
		}
	})

	t.Run("a closed session ends its prompt, kills its command and is freed", func(t *testing.T) {
		t.Parallel()
		r, _ := h.sleeper(t, driveConfig{Close: true})
		if closed := r.all("closed"); len(closed) != 2 {
			r.fatalf(t, "session/close answered %d times; want 2 (the second, Resource not found, taken as closed by the SDK)", len(closed))
		}
		if errs := r.all("rpc_error"); len(errs) != 1 || errs[0].Code == nil || *errs[0].Code != -32002 {
			r.fatalf(t, "a prompt to the closed session: %+v; want Resource not found (-32002)", errs)
		}
	})

	t.Run("a cancelled prompt kills its command in the editor's terminal", func(t *testing.T) {
		t.Parallel()
		r, _ := h.sleeper(t, driveConfig{Terminal: true})
		if len(r.all("terminal")) != 1 || len(r.all("release")) != 1 {
			r.fatalf(t, "terminals created %d, released %d; want the command's terminal, released", len(r.all("terminal")), len(r.all("release")))
		}
	})

	t.Run("a tree's nodes reach the client as the plan", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServerFunc(func(req llmtest.Request) llmtest.Turn {
			switch {
			case strings.Contains(firstUserText(req), "CHILD-TASK") && len(toolResults(req)) == 0:
				return llmtest.Turn{ToolCalls: []llmtest.ToolCall{{ID: "call_child_write", Name: "write_file", Input: map[string]any{"path": "child.txt", "content": "by the child"}}}}
			case strings.Contains(firstUserText(req), "CHILD-TASK"):
				return llmtest.Turn{Text: "the child's report"}
			case len(toolResults(req)) == 0:
				return llmtest.Turn{ToolCalls: []llmtest.ToolCall{{ID: "call_spawn", Name: "spawn",
					Input: map[string]any{"goal": "Write the report", "prompt": "CHILD-TASK: write the report"}}}}
			}
			return llmtest.Turn{Text: "A sub-agent writes the report."}
		})
		t.Cleanup(srv.Close)
		home := t.TempDir()
		ws := workspace(t, home)
		// Default mode: the child's write asks the editor, as the
		// session's own calls do.
		r := h.drive(t, "prompt", driveConfig{Cwd: ws, Env: env(home, srv), Prompts: []string{"Plan it"}, WaitPlanDone: true})
		r.requireDone(t)
		perms := r.all("permission")
		if len(perms) != 1 || !strings.Contains(string(perms[0].Params), `"toolCallId":"call_child_write"`) || !strings.Contains(string(perms[0].Params), "sub-agent #") {
			r.fatalf(t, "permission requests = %d; want 1, the child's write_file, titled as a sub-agent's", len(perms))
		}
		if b, err := os.ReadFile(filepath.Join(ws, "child.txt")); err != nil || string(b) != "by the child" {
			r.fatalf(t, "child.txt = %q, %v; want the child's write, allowed by the editor", b, err)
		}
		plans := r.updates("plan")
		if len(plans) == 0 {
			r.fatalf(t, "no plan update")
		}
		var statuses []string
		for _, p := range plans {
			if len(p.Entries) != 1 || p.Entries[0].Content != "Write the report" {
				r.fatalf(t, "plan entries = %+v; want the one node, Write the report", p.Entries)
			}
			if s := p.Entries[0].Status; len(statuses) == 0 || statuses[len(statuses)-1] != s {
				statuses = append(statuses, s)
			}
		}
		if statuses[len(statuses)-1] != "completed" || !slices.Contains(statuses, "in_progress") {
			r.fatalf(t, "the plan entry's statuses = %q; want in_progress … completed", statuses)
		}
		if got := r.stops(); !slices.Equal(got, []string{"end_turn"}) {
			r.fatalf(t, "stop reasons = %q; want [end_turn]", got)
		}
	})

	t.Run("session/load after a restart replays the conversation", func(t *testing.T) {
		t.Parallel()
		home := t.TempDir()
		ws := workspace(t, home)
		id := h.firstSession(t, home, ws, "My colour is blue", "Noted: blue.")

		srv2 := llmtest.NewServer(llmtest.Turn{Text: "Blue.", Expect: "What is my colour?"})
		t.Cleanup(srv2.Close)
		r2 := h.drive(t, "load", driveConfig{Cwd: ws, Env: env(home, srv2), SessionID: id, Prompts: []string{"What is my colour?"}})
		r2.requireDone(t)
		var replayed []string
		for _, rec := range r2.records {
			if rec.Driver == "loaded" {
				break
			}
			if rec.Driver == "update" && rec.SessionID == id {
				replayed = append(replayed, rec.Update.SessionUpdate+": "+rec.Update.text())
			}
		}
		want := []string{"user_message_chunk: My colour is blue", "agent_message_chunk: Noted: blue."}
		if !slices.Equal(replayed, want) {
			r2.fatalf(t, "updates before session/load's answer = %q; want %q", replayed, want)
		}
		if got := r2.stops(); !slices.Equal(got, []string{"end_turn"}) {
			r2.fatalf(t, "stop reasons = %q; want [end_turn]", got)
		}
		reqs := srv2.Requests()
		if len(reqs) != 1 || len(reqs[0].Messages) != 3 || !strings.Contains(firstUserText(reqs[0]), "My colour is blue") {
			r2.fatalf(t, "the loaded session's model request = %d requests; want 1 carrying the stored conversation", len(reqs))
		}
	})

	// session/list pages a workspace's conversations, the last written
	// first, through the SDK (which checks every answer against the
	// schema); session/resume opens one without a replay.
	t.Run("session/list and session/resume", func(t *testing.T) {
		t.Parallel()
		home := t.TempDir()
		ws := workspace(t, home)
		id := h.firstSession(t, home, ws, "My colour is green", "Noted: green.")
		// More conversations than a page holds, written before it, in
		// this workspace and another; and a tree node's session.
		st, err := sqlite.Open(context.Background(), filepath.Join(home, "state", "arbor", "arbor.db"))
		if err != nil {
			t.Fatal(err)
		}
		old := time.Now().Add(-time.Hour)
		for i := range 60 {
			at := old.Add(time.Duration(i) * time.Second)
			if err := st.CreateSession(context.Background(), store.Session{ID: fmt.Sprintf("old-%02d", i), Workspace: ws, CreatedAt: at, UpdatedAt: at}); err != nil {
				t.Fatal(err)
			}
		}
		now := time.Now()
		for _, s := range []store.Session{{ID: "other-ws", Workspace: filepath.Join(home, "other"), CreatedAt: now}, {ID: "r9.2", Workspace: ws, CreatedAt: now, RunID: "r9", NodeID: 2}} {
			if err := st.CreateSession(context.Background(), s); err != nil {
				t.Fatal(err)
			}
		}
		st.Close()

		srv2 := llmtest.NewServer()
		t.Cleanup(srv2.Close)
		r2 := h.drive(t, "list", driveConfig{Cwd: ws, Env: env(home, srv2)})
		r2.requireDone(t)
		var listed []string
		pages := r2.all("listed")
		for _, p := range pages {
			var res struct {
				Sessions []struct{ SessionID, Cwd, UpdatedAt, Title string }
			}
			if err := json.Unmarshal(p.Result, &res); err != nil {
				t.Fatal(err)
			}
			for _, s := range res.Sessions {
				if s.Cwd != ws || s.UpdatedAt == "" {
					r2.fatalf(t, "session %+v; want the workspace and when it was written", s)
				}
				if want := map[bool]string{true: "My colour is green"}[s.SessionID == id]; s.Title != want {
					r2.fatalf(t, "session %+v; want the title %q (its first prompt)", s, want)
				}
				listed = append(listed, s.SessionID)
			}
		}
		want := []string{id}
		for i := 59; i >= 0; i-- {
			want = append(want, fmt.Sprintf("old-%02d", i))
		}
		if len(pages) != 2 || !slices.Equal(listed, want) {
			r2.fatalf(t, "%d pages listing %q; want 2 pages listing the new session, then old-59 … old-00", len(pages), listed)
		}
		all := r2.all("listed_all")
		if len(all) != 1 || !strings.Contains(string(all[0].Result), `"other-ws"`) || strings.Contains(string(all[0].Result), `"r9.2"`) {
			r2.fatalf(t, "session/list without cwd: %s; want the other workspace's too, never a node's", all[0].Result)
		}
		if e := r2.all("rpc_error"); len(e) != 1 || e[0].Code == nil || *e[0].Code != -32602 {
			r2.fatalf(t, "a cursor arbor never gave: %+v; want -32602", e)
		}

		srv3 := llmtest.NewServer(llmtest.Turn{Text: "Green.", Expect: "What is my colour?"})
		t.Cleanup(srv3.Close)
		r3 := h.drive(t, "resume", driveConfig{Cwd: ws, Env: env(home, srv3), SessionID: id, Prompts: []string{"What is my colour?"}})
		r3.requireDone(t)
		for _, rec := range r3.records {
			if rec.Driver == "resumed" {
				break
			}
			if rec.Driver == "update" && rec.Update.SessionUpdate != "available_commands_update" {
				r3.fatalf(t, "an update before session/resume's answer: %+v; want no replay", rec.Update)
			}
		}
		if got := r3.stops(); !slices.Equal(got, []string{"end_turn"}) {
			r3.fatalf(t, "stop reasons = %q; want [end_turn]", got)
		}
		if reqs := srv3.Requests(); len(reqs) != 1 || !strings.Contains(firstUserText(reqs[0]), "My colour is green") {
			r3.fatalf(t, "the resumed session's model request = %d requests; want 1 carrying the stored conversation", len(reqs))
		}
	})

	t.Run("the client's MCP servers are connected", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer(
			llmtest.Turn{ToolCalls: []llmtest.ToolCall{{ID: "call_echo", Name: "mcp__editor__echo", Input: map[string]any{"text": "from the editor's server"}}}},
			llmtest.Turn{Text: "Echoed.", Expect: "echo: from the editor's server"},
		)
		t.Cleanup(srv.Close)
		home := t.TempDir()
		self, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		r := h.drive(t, "prompt", driveConfig{Cwd: workspace(t, home), Env: env(home, srv), Args: []string{"--mode", "trust"}, Prompts: []string{"Echo"},
			MCPServers: []mcpServer{{Name: "editor", Command: self, Args: []string{}, Env: []nameValue{{Name: mcptest.EnvServe, Value: "1"}}}}})
		r.requireDone(t)
		if got := r.stops(); !slices.Equal(got, []string{"end_turn"}) {
			r.fatalf(t, "stop reasons = %q; want [end_turn]", got)
		}
		reqs := srv.Requests()
		if len(reqs) != 2 || !slices.ContainsFunc(reqs[0].Tools, func(s llm.ToolSpec) bool { return s.Name == "mcp__editor__echo" }) {
			r.fatalf(t, "model requests = %d; want 2, the first offering mcp__editor__echo", len(reqs))
		}
		if tr := toolResults(reqs[1]); len(tr) != 1 || tr[0].IsError || tr[0].Content != "echo: from the editor's server" {
			r.fatalf(t, "tool results = %+v; want the MCP server's echo", tr)
		}
	})

	t.Run("shell commands run in the editor's terminal", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer(
			llmtest.Turn{ToolCalls: []llmtest.ToolCall{{ID: "call_term", Name: "shell", Input: map[string]any{"command": "echo from-the-terminal; pwd; exit 3"}}}},
			llmtest.Turn{Text: "Ran it."},
		)
		t.Cleanup(srv.Close)
		home := t.TempDir()
		ws := workspace(t, home)
		// The sandbox off: with it on, arbor keeps its own (confined) shell.
		r := h.drive(t, "prompt", driveConfig{Cwd: ws, Env: env(home, srv, "ARBOR_SANDBOX=off"), Args: []string{"--mode", "trust"},
			Prompts: []string{"Run it"}, Terminal: true})
		r.requireDone(t)
		terms := r.all("terminal")
		if len(terms) != 1 || !slices.Equal(terms[0].Args, []string{"-c", "echo from-the-terminal; pwd; exit 3"}) {
			r.fatalf(t, "terminal/create = %+v; want one running the command with bash -c", terms)
		}
		if rel := r.all("release"); len(rel) != 1 || rel[0].TerminalID != terms[0].TerminalID {
			r.fatalf(t, "terminal/release = %+v; want the terminal released", rel)
		}
		shown := false
		for _, u := range r.updates("tool_call_update") {
			shown = shown || u.ToolCallID == "call_term" && strings.Contains(string(u.Content), `"terminalId":"`+terms[0].TerminalID+`"`)
		}
		if !shown {
			r.fatalf(t, "no tool_call_update embedding the terminal in call_term")
		}
		reqs := srv.Requests()
		if len(reqs) != 2 {
			r.fatalf(t, "model requests = %d; want 2", len(reqs))
		}
		tr := toolResults(reqs[1])
		if len(tr) != 1 || !tr[0].IsError || !strings.Contains(tr[0].Content, "from-the-terminal\n"+ws) || !strings.Contains(tr[0].Content, "[exit code 3]") {
			r.fatalf(t, "tool result = %+v; want the terminal's output, run in the workspace, and exit code 3", tr)
		}
	})

	t.Run("bad requests get clear errors", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer()
		t.Cleanup(srv.Close)
		home := t.TempDir()
		r := h.drive(t, "errors", driveConfig{Cwd: workspace(t, home), Env: env(home, srv)})
		r.requireDone(t)
		errs := r.all("rpc_error")
		want := map[string]int{"unknown session": -32002, "unknown method": -32601, "load unknown": -32002}
		if len(errs) != len(want) {
			r.fatalf(t, "rpc errors = %+v; want %d", errs, len(want))
		}
		for _, e := range errs {
			if e.Code == nil || *e.Code != want[e.What] || e.Message == "" {
				r.fatalf(t, "%s: code %v %q; want %d and a message", e.What, e.Code, e.Message, want[e.What])
			}
		}
		if !strings.Contains(errs[0].Message, "no-such-session") || !strings.Contains(errs[1].Message, "arbor/no_such_method") {
			r.fatalf(t, "the errors do not name what was wrong: %q, %q", errs[0].Message, errs[1].Message)
		}
	})

	t.Run("a client that never answers a permission request and disconnects", func(t *testing.T) {
		t.Parallel()
		srv := llmtest.NewServer(
			llmtest.Turn{ToolCalls: []llmtest.ToolCall{{ID: "call_never", Name: "write_file", Input: map[string]any{"path": "never.txt", "content": "x"}}}},
			llmtest.Turn{Text: "unused"},
		)
		t.Cleanup(srv.Close)
		home := t.TempDir()
		ws := workspace(t, home)
		r := h.drive(t, "hang", driveConfig{Cwd: ws, Env: env(home, srv), Prompts: []string{"Write it"}})
		r.requireDone(t) // arbor exited, status 0, once its input closed
		if perms := r.all("permission"); len(perms) != 1 {
			r.fatalf(t, "permission requests = %d; want 1", len(perms))
		}
		if _, err := os.Stat(filepath.Join(ws, "never.txt")); !os.IsNotExist(err) {
			r.fatalf(t, "never.txt exists (%v): the unanswered call ran", err)
		}
		if n := len(srv.Requests()); n > 2 {
			r.fatalf(t, "model requests = %d; want at most 2", n)
		}
	})
}

// sleeper drives the cancel scenario (with c's Close or Terminal) against
// a model whose one call runs a command that writes its pid and sleeps,
// with the sandbox off (the pid is then the one the driver can look
// for): the prompt must answer cancelled and the command's process be
// gone.
func (h *harness) sleeper(t *testing.T, c driveConfig) (*sdkRun, *llmtest.Server) {
	t.Helper()
	srv := llmtest.NewServer(
		llmtest.Turn{ToolCalls: []llmtest.ToolCall{{ID: "call_sleep", Name: "shell", Input: map[string]any{"command": "echo $$ > sleeper.pid; exec sleep 300"}}}},
		llmtest.Turn{Text: "never asked"},
	)
	t.Cleanup(srv.Close)
	home := t.TempDir()
	c.Cwd, c.Env, c.Args, c.Prompts = workspace(t, home), env(home, srv, "ARBOR_SANDBOX=off"), []string{"--mode", "trust"}, []string{"Sleep"}
	r := h.drive(t, "cancel", c)
	r.requireDone(t)
	if got := r.stops(); !slices.Equal(got, []string{"cancelled"}) {
		r.fatalf(t, "stop reasons = %q; want [cancelled]", got)
	}
	if alive := r.all("alive"); len(alive) != 1 || alive[0].Pid <= 0 || alive[0].Alive {
		r.fatalf(t, "the command's process after the prompt ended = %+v; want gone", alive)
	}
	return r, srv
}

// firstSession opens a session in ws through the SDK, has one prompt
// answered there, and returns the session's id.
func (h *harness) firstSession(t *testing.T, home, ws, prompt, answer string) string {
	t.Helper()
	srv := llmtest.NewServer(llmtest.Turn{Text: answer})
	t.Cleanup(srv.Close)
	r := h.drive(t, "prompt", driveConfig{Cwd: ws, Env: env(home, srv), Prompts: []string{prompt}})
	r.requireDone(t)
	sessions := r.all("session")
	if len(sessions) != 1 || sessions[0].SessionID == "" {
		r.fatalf(t, "session/new answers = %+v; want one with a session id", sessions)
	}
	// The prompt names the conversation, and the editor is told.
	var titles []string
	for _, u := range r.all("update") {
		if u.Update.SessionUpdate == "session_info_update" {
			titles = append(titles, u.Update.Title)
		}
	}
	if !slices.Equal(titles, []string{prompt}) {
		r.fatalf(t, "session_info_update titles = %q; want [%q]: the first prompt names the conversation", titles, prompt)
	}
	return sessions[0].SessionID
}
