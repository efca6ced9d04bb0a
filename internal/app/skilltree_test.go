package app_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/app"
	"github.com/arbor-run/arbor/internal/config"
	"github.com/arbor-run/arbor/internal/llm"
	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/store"
	"github.com/arbor-run/arbor/internal/tree"
	"github.com/arbor-run/arbor/internal/tree/treetest"
)

// TestTreeChildUsesSkill: in a tree run, the root's prompt lists the
// project's skill, a child calls the skill tool, and the skill's body
// reaches that child's next request.
func TestTreeChildUsesSkill(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	ws := filepath.Join(home, "ws")
	writeFiles(t, ws, map[string]string{
		".claude/settings.json": `{"hooks": {
		  "Stop": [{"hooks": [{"type": "command", "command": "cat >> stop.log; echo >> stop.log"}]}],
		  "SubagentStop": [{"hooks": [{"type": "command", "command": "cat >> subagent.log; echo >> subagent.log"}]}]}}`,
		".agents/skills/release-notes/SKILL.md": "---\nname: release-notes\ndescription: Write the release notes of a version.\n---\nSKILL-BODY-42: list every merged change under its heading.\n",
	})
	srv := llmtest.NewServerFunc(treetest.Responder(treetest.Script{
		1: {treetest.Calls(treetest.Call("spawn", map[string]any{"goal": "notes", "prompt": "Write the release notes."})),
			treetest.Complete("draft"), treetest.Complete("all done")},
		2: {treetest.Calls(treetest.Call("skill", map[string]any{"name": "release-notes", "args": "v1.2"})),
			treetest.Complete("notes written")},
	}))
	defer srv.Close()
	env := map[string]string{"ANTHROPIC_BASE_URL": srv.URL, "ANTHROPIC_API_KEY": "test-key-123",
		"XDG_CONFIG_HOME": filepath.Join(home, "config"), "XDG_STATE_HOME": filepath.Join(home, "state"), "HOME": home}
	a, err := app.Open(context.Background(), app.Options{Workspace: ws, Getenv: func(k string) string { return env[k] },
		Overrides: config.Overrides{Model: "anthropic/claude-test", Mode: "default"}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	e, _, err := a.Engine("", 0)
	if err != nil {
		t.Fatal(err)
	}
	r, err := e.Create(context.Background(), tree.RunOptions{ID: "r-skill", Goal: "release", Workspace: ws})
	if err != nil {
		t.Fatal(err)
	}
	fin, err := e.Drive(context.Background(), r.ID)
	if err != nil || fin.Status != store.RunComplete {
		t.Fatalf("run %+v, %v", fin, err)
	}
	var rootFirst, childAfter *llmtest.Request
	for _, req := range srv.Requests() {
		switch {
		case treetest.NodeOf(req) == 1 && treetest.Turns(req) == 0:
			rootFirst = &req
		case treetest.NodeOf(req) == 2 && treetest.Turns(req) == 1:
			childAfter = &req
		}
	}
	if rootFirst == nil || childAfter == nil {
		t.Fatal("the root's first or the child's second request is missing")
	}
	if !strings.Contains(rootFirst.System, "- release-notes: Write the release notes of a version.") || strings.Contains(rootFirst.System, "SKILL-BODY-42") {
		t.Fatalf("the root's prompt must list the skill, not its body:\n%s", rootFirst.System)
	}
	for file, want := range map[string]string{"stop.log": `"hook_event_name":"Stop"`, "subagent.log": `"hook_event_name":"SubagentStop"`} {
		b, err := os.ReadFile(filepath.Join(ws, file))
		if err != nil || strings.Count(string(b), want) < 1 || strings.Count(string(b), "\n") > 2 {
			t.Errorf("%s = %q (%v); want the %s hook's input, once per turn that ended", file, b, err, want)
		}
	}
	if got := childAfter.LastUserText(); !strings.Contains(got, "SKILL-BODY-42: list every merged change") || !strings.Contains(got, "<args>v1.2</args>") {
		t.Fatalf("the child's next request lacks the skill's body: %q", got)
	}
}

// TestUserSkillFilesReadable: the files beside a user's skill, outside
// the workspace, are readable through the file tools; a file beside
// them that belongs to no skill is not.
func TestUserSkillFilesReadable(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	ws := filepath.Join(home, "ws")
	skill := filepath.Join(home, "config", "arbor", "skills", "lint")
	writeFiles(t, home, map[string]string{
		"ws/README.md":                          "hi\n",
		"config/arbor/skills/lint/SKILL.md":     "---\nname: lint\ndescription: Lint the code.\n---\nRead reference.md.\n",
		"config/arbor/skills/lint/reference.md": "LINT-REFERENCE-9\n",
		"config/arbor/secret.txt":               "not a skill's\n",
	})
	srv := llmtest.NewServer(
		call("c1", "read_file", `{"path":"`+filepath.Join(skill, "reference.md")+`"}`),
		call("c2", "read_file", `{"path":"`+filepath.Join(home, "config", "arbor", "secret.txt")+`"}`),
		llmtest.Turn{Text: "done"},
	)
	defer srv.Close()
	env := map[string]string{"ANTHROPIC_API_KEY": "sk-test-0123456789", "ANTHROPIC_BASE_URL": srv.URL,
		"XDG_CONFIG_HOME": filepath.Join(home, "config"), "XDG_STATE_HOME": filepath.Join(home, "state"), "HOME": home}
	b := setupIn(t, ws, env)
	s, err := b.app.NewSession(context.Background(), app.SessionOptions{Model: "anthropic/claude-test"})
	if err != nil {
		t.Fatal(err)
	}
	if res := s.Agent.Send(context.Background(), llm.UserText("go")); res.Text != "done" {
		t.Fatalf("result %+v", res)
	}
	reqs := srv.Requests()
	if got := reqs[1].LastUserText(); !strings.Contains(got, "LINT-REFERENCE-9") {
		t.Fatalf("the skill's file was not read: %q", got)
	}
	if got := reqs[2].LastUserText(); strings.Contains(got, "not a skill's") || !strings.Contains(got, "outside the workspace") {
		t.Fatalf("a file outside the skill was read: %q", got)
	}
}
