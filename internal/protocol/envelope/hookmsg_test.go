package envelope_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/tree/treetest"
)

// TestHookSystemMessage: what the project's hooks say for the person
// (systemMessage) is pushed as an info event of the main agent (agent_id
// ""), worded
// as Claude Code words it, from every point of the turn, and never
// reaches the model.
func TestHookSystemMessage(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(llmtest.Turn{ToolCalls: []llmtest.ToolCall{{ID: "c1", Name: "read_file", Input: map[string]any{"path": "notes.txt"}}}},
		llmtest.Turn{Text: "read"})
	defer srv.Close()
	settings := `{"hooks": {`
	for i, e := range []string{"SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop"} {
		if i > 0 {
			settings += ","
		}
		settings += `"` + e + `": [{"matcher": "", "hooks": [{"type": "command", "command": "sh say.sh ` + e + `"}]}]`
	}
	b, _ := setupFiles(t, srv, map[string]string{
		".claude/settings.json": settings + "}}",
		"say.sh":                "cat >/dev/null\necho \"{\\\"systemMessage\\\": \\\"SAYS-$1\\\"}\"\n",
		"notes.txt":             "notes\n",
	})
	b.Send(sendText("read the notes"))
	if idle := b.Next(typ("idle")); idle.P.LastOutcome != "completed" {
		t.Fatalf("idle %s", idle.raw)
	}
	b.Close()
	var got []string
	for _, o := range b.All {
		var p struct {
			AgentID string `json:"agent_id"`
			Message string `json:"message"`
		}
		if o.Type == "info" && json.Unmarshal(o.Payload, &p) == nil {
			got = append(got, p.AgentID+p.Message)
		}
	}
	want := []string{"SessionStart:startup says: SAYS-SessionStart", "UserPromptSubmit says: SAYS-UserPromptSubmit",
		"PreToolUse:Read says: SAYS-PreToolUse", "PostToolUse:Read says: SAYS-PostToolUse", "Stop says: SAYS-Stop"}
	if !slices.Equal(got, want) {
		t.Fatalf("info events\n%q\nwant\n%q", got, want)
	}
	for _, r := range srv.Requests() {
		if strings.Contains(string(r.Body), "SAYS-") {
			t.Fatalf("a hook's systemMessage reached the model: %s", r.Body)
		}
	}
}

// TestSubAgentHookSystemMessage: a sub-agent's hooks' words are an info
// event of that sub-agent.
func TestSubAgentHookSystemMessage(t *testing.T) {
	t.Parallel()
	m := &treeModel{
		main:  []llmtest.Turn{spawnTurn("look"), {Text: "started"}, {Text: "all in"}},
		nodes: treetest.Script{2: {treetest.Calls(treetest.Call("read_file", map[string]any{"path": "notes.txt"})), treetest.Complete("looked")}},
	}
	srv := llmtest.NewServerFunc(m.respond)
	defer srv.Close()
	b, ready := setupFiles(t, srv, map[string]string{
		".claude/settings.json": `{"hooks": {"PreToolUse": [{"matcher": "Read", "hooks": [{"type": "command", "command": "sh say.sh PreToolUse"}]}]}}`,
		"say.sh":                "cat >/dev/null\necho \"{\\\"systemMessage\\\": \\\"SAYS-$1\\\"}\"\n",
		"notes.txt":             "notes\n",
	})
	b.Send(sendText("look"))
	b.Next(typ("idle"))
	b.Close()
	var sub string
	var got []string
	for _, o := range b.All {
		var p struct {
			AgentID string `json:"agent_id"`
			TaskID  string `json:"task_id"`
			Message string `json:"message"`
		}
		if json.Unmarshal(o.Payload, &p) != nil {
			continue
		}
		switch {
		case o.Type == "agent_started" && p.TaskID == ready.P.SessionID+".2":
			sub = p.AgentID
		case o.Type == "info":
			got = append(got, p.AgentID+" "+p.Message)
		}
	}
	if want := []string{sub + " PreToolUse:Read says: SAYS-PreToolUse"}; sub == "" || !slices.Equal(got, want) {
		t.Fatalf("info events %q, want %q", got, want)
	}
}
