package envelope_test

// The golden cases: each names testdata/<name>.jsonl. The harness is in
// golden_test.go; the hooks and checks some cases add are in
// golden_checks_test.go.

import (
	"encoding/json"
	"strings"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/testutil"
	"github.com/arbor-run/arbor/internal/tree/treetest"
)

// goldenUsage makes token counts, and so /stats, the same in every run.
var goldenUsage = llmtest.Usage{Input: 20, Output: 8}

func goldenWrite(path string) llmtest.Turn {
	return llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "write_file", Input: map[string]any{"path": path, "content": "x"}}}, Usage: goldenUsage}
}

func goldenShell(command string) llmtest.Turn {
	return llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "shell", Input: map[string]any{"command": command}}}, Usage: goldenUsage}
}

func goldenAsk() llmtest.Turn {
	return llmtest.Turn{ToolCalls: []llmtest.ToolCall{{Name: "ask_user",
		Input: map[string]any{"question": "Which color?", "options": []any{"red", "blue"}}}}, Usage: goldenUsage}
}

func goldenText(text, expect string) llmtest.Turn {
	return llmtest.Turn{Text: text, Expect: expect, Usage: goldenUsage}
}

func goldenHandoff() llmtest.Turn {
	return llmtest.Turn{Expect: "plan it", Usage: goldenUsage,
		ToolCalls: []llmtest.ToolCall{{Name: "handoff", Input: map[string]any{"plan": planText}}}}
}

// goldenStalled streams a few events of text, then stalls until cancelled.
func goldenStalled(text string) llmtest.Turn {
	return llmtest.Turn{Text: text, Usage: goldenUsage, Fault: &llmtest.Fault{Kind: llmtest.FaultStall, AfterEvents: 4}}
}

// goldenSpawn is the main agent's turn that spawns one child, and
// spawned the turn that follows it, which checks the child's id.
func goldenSpawn(goal string) llmtest.Turn {
	return llmtest.Turn{Usage: goldenUsage, ToolCalls: []llmtest.ToolCall{
		treetest.Call("spawn", map[string]any{"goal": goal, "prompt": "do " + goal})}}
}

var spawned = goldenText("started", `{"id": "#2"}`)

// goldenTodos is a todo_write call: items are id, content, status and
// active_form, four strings each.
func goldenTodos(expect string, items ...[4]string) llmtest.Turn {
	var todos []any
	for _, it := range items {
		todos = append(todos, map[string]any{"id": it[0], "content": it[1], "status": it[2], "active_form": it[3]})
	}
	return llmtest.Turn{Expect: expect, Usage: goldenUsage,
		ToolCalls: []llmtest.ToolCall{{Name: "todo_write", Input: map[string]any{"todos": todos}}}}
}

// goldenBackground starts command as a background job of the shell tool.
func goldenBackground(command string) llmtest.Turn {
	return llmtest.Turn{Usage: goldenUsage, ToolCalls: []llmtest.ToolCall{{Name: "shell",
		Input: map[string]any{"command": command, "run_in_background": true}}}}
}

// waitGate is a command that waits for the workspace file gate, which
// the case's hook creates.
const waitGate = "while [ ! -e gate ]; do sleep 0.01; done; echo released"

// agentEvents are what the sub-agent cases subscribe to: with the main
// agent's and the children's activity left out, the holds fix their order.
var agentEvents = []string{"assistant_message", "idle", "error", "agent_started", "agent_notify", "agent_done"}

func sendContent(text string) step {
	b, _ := json.Marshal(text)
	return send(`{"type":"send","content":` + string(b) + `}`)
}

const (
	status    = `{"type":"status"}`
	askAnswer = `{"type":"question","request_id":"req_1","answers":["blue"],"reason":"answered"}`

	setPlanner = `{"type":"role","action":"set","role":"planner"}`
	// afterTurn is a barrier: /resume runs on the runner behind the
	// running turn, so its answer comes after the turn has ended. The
	// planner's turn ends without idle while its handoff waits, and
	// whether it has ended changes the seqs of what follows (a state
	// mutation of its own, or one folded into a later push). The session
	// does not exist, so the switch fails (an error, no idle) and changes
	// nothing.
	afterTurn  = `{"type":"send","content":"/resume after-turn"}`
	acceptPlan = `{"type":"handoff","request_id":"handoff-1","action":"accept","agent":"builder","pool":"thinking"}`
)

// planned is the steps of every handoff case up to the pending handoff
// of a planner whose turn has ended.
func planned(more ...step) []step {
	return append([]step{send(setPlanner), await("role_response"),
		sendContent("plan it"), await("notification"),
		send(afterTurn), await("error")}, more...)
}

const pools = "pools:\n  thinking: [anthropic/claude-think, anthropic/claude-test]\n  fast: [anthropic/claude-fast]\n"

var (
	// plannerWorkspace is a workspace with the planner role and two pools.
	plannerWorkspace = map[string]string{
		".arbor/roles/planner.yaml": "system: Plan before acting.\n",
		".arbor/config.yaml":        pools,
	}
	// rolesWorkspace adds two custom roles and a broken role file.
	rolesWorkspace = map[string]string{
		".arbor/roles/planner.yaml":  "system: Plan before acting.\n",
		".arbor/roles/reviewer.yaml": "system: Review only.\n",
		".arbor/roles/auditor.yaml":  "system: Audit.\n",
		".arbor/roles/broken.yaml":   "system: [unclosed\n",
		".arbor/config.yaml":         pools,
	}
)

func goldenCases() []goldenCase {
	return []goldenCase{{
		name:  "walkthrough",
		files: map[string]string{"README.md": "# demo\nA tiny project.\n"},
		turns: []llmtest.Turn{
			{ToolCalls: []llmtest.ToolCall{{Name: "read_file", Input: map[string]any{"path": "README.md"}}}, Expect: "Explain", Usage: goldenUsage},
			goldenText("This project is a tiny demo.", "A tiny project."),
		},
		steps: []step{send(status), await("status_response"),
			sendContent("Explain this project without changing files."), await("idle"),
			send(status), await("status_response")},
	}, {
		name:  "subscribe",
		turns: []llmtest.Turn{goldenText("hello there", "hi")},
		steps: []step{
			send(`{"type":"subscribe","events":["nonsense"]}`), await("error"),
			send(`{"type":"subscribe","events":["assistant_message","idle"]}`), await("subscribe_response"),
			sendContent("hi"), await("idle"),
			send(status), await("status_response")},
	}, {
		name: "line_too_long",
		steps: []step{sendLong(`{"type":"send","content":"`, "a", 1<<20, `"}`), await("error"),
			send(status), await("status_response")},
	}, {
		name: "unknown_command",
		steps: []step{
			send(`{"type":"teleport"}`), await("error"),
			send(`{"type":"handoff","request_id":"handoff-1","action":"accept"}`), await("error"),
			sendRaw(`{not json`), await("error"),
			send(status), await("status_response")},
	}, {
		name:  "cancel_midstream",
		turns: []llmtest.Turn{goldenStalled("one two three four"), goldenText("after the cancel", "again")},
		steps: []step{sendContent("talk"), awaitActivity("streaming"),
			send(`{"type":"cancel"}`), await("idle"),
			send(status), await("status_response"),
			sendContent("again"), await("idle")},
	}, {
		name:  "slash",
		turns: []llmtest.Turn{goldenText("hello", "hi")},
		steps: []step{sendContent("hi"), await("idle"),
			sendContent("/help"), await("info"),
			sendContent("/stats"), await("info"),
			sendContent("/new"), await("session_switched"), await("idle"),
			sendContent("/export"), await("error"),
			send(status), await("status_response")},
	}, {
		// Confirmations, and rules saved in each scope.
		name:  "confirm_allow",
		turns: []llmtest.Turn{goldenWrite("a.txt"), goldenText("wrote a", "created a.txt")},
		steps: []step{sendContent("write a"), await("notification"),
			send(status), await("status_response"),
			send(`{"type":"confirm","request_id":"req_1","action":"allow"}`), await("idle"),
			send(status), await("status_response")},
	}, {
		name:  "confirm_deny",
		turns: []llmtest.Turn{goldenWrite("a.txt"), goldenText("a refused", "not now")},
		steps: []step{sendContent("write a"), await("notification"),
			send(`{"type":"confirm","request_id":"req_1","action":"deny","deny_reason":"not now"}`), await("idle"),
			send(status), await("status_response")},
	}, {
		name:  "confirm_rule_session",
		turns: []llmtest.Turn{goldenWrite("a.txt"), goldenWrite("b.txt"), goldenText("wrote both", "created b.txt")},
		steps: []step{sendContent("write twice"), await("notification"),
			send(`{"type":"confirm","request_id":"req_1","action":"allow","rule_pattern":"write_file","rule_scope":"session"}`),
			await("idle")},
	}, {
		name:  "confirm_rule_project",
		turns: []llmtest.Turn{goldenWrite("a.txt"), goldenWrite("b.txt"), goldenText("wrote both", "created b.txt")},
		steps: []step{sendContent("write twice"), await("notification"),
			send(`{"type":"confirm","request_id":"req_1","action":"allow","rule_pattern":"*.txt","rule_scope":"project"}`),
			await("idle"), send(status), await("status_response")},
		check: checkSavedRule("project", "write_file(*.txt)", "d.md"),
	}, {
		name:  "confirm_rule_user_global",
		turns: []llmtest.Turn{goldenWrite("a.txt"), goldenWrite("b.txt"), goldenText("wrote both", "created b.txt")},
		steps: []step{sendContent("write twice"), await("notification"),
			send(`{"type":"confirm","request_id":"req_1","action":"allow","rule_pattern":"write_file","rule_scope":"user_global"}`),
			await("idle"), send(status), await("status_response")},
		check: checkSavedRule("user", "write_file"),
	}, {
		// The spec's own rule form, "tool:regex": saved as arbor's regex
		// rule, it allows the second call without a confirm.
		name:  "confirm_rule_regex",
		turns: []llmtest.Turn{goldenShell("echo hi"), goldenShell("echo hi"), goldenText("ran it twice", "hi")},
		steps: []step{sendContent("echo twice"), await("notification"),
			send(`{"type":"confirm","request_id":"req_1","action":"allow","rule_pattern":"shell:^echo hi$","rule_scope":"project"}`),
			await("idle"), send(status), await("status_response")},
		// The saved rule is about shell: the check's writes still ask.
		check: checkSavedRule("project", "shell(re:^echo hi$)", "c.txt", "d.md"),
	}, {
		// Questions: answered, declined, superseded by a send, and late.
		name:  "question_answered",
		turns: []llmtest.Turn{goldenAsk(), goldenText("blue it is", "blue")},
		steps: []step{sendContent("pick a color"), await("notification"),
			send(status), await("status_response"),
			send(askAnswer), await("idle")},
	}, {
		name:  "question_declined",
		turns: []llmtest.Turn{goldenAsk(), goldenText("no color then", "")},
		steps: []step{sendContent("pick a color"), await("notification"),
			send(`{"type":"question","request_id":"req_1","answers":["blue"],"reason":"superseded"}`), await("error"),
			send(`{"type":"question","request_id":"req_1","answers":[],"reason":"declined"}`), await("idle")},
	}, {
		name:  "question_superseded",
		turns: []llmtest.Turn{goldenAsk(), goldenText("fine", ""), goldenText("next", "never mind")},
		steps: []step{sendContent("pick a color"), await("notification"),
			sendContent("never mind"), await("idle"),
			send(status), await("status_response")},
	}, {
		name:  "question_late",
		turns: []llmtest.Turn{goldenAsk(), goldenText("blue it is", "blue")},
		steps: []step{sendContent("pick a color"), await("notification"),
			send(askAnswer), await("idle"),
			send(`{"type":"question","request_id":"req_1","answers":["red"],"reason":"answered"}`), await("error"),
			send(`{"type":"question","request_id":"req_7","answers":["red"],"reason":"answered"}`), await("error"),
			send(status), await("status_response")},
	}, {
		// Models and roles, including rejections and a switch under a
		// running turn.
		name:  "models_role",
		files: plannerWorkspace,
		steps: []step{
			send(`{"type":"models","action":"status"}`), await("models_response"),
			send(`{"type":"models","action":"set_current_model_pool","pool":"huge"}`), await("models_response"),
			send(`{"type":"role","action":"list"}`), await("role_response"),
			send(`{"type":"role","action":"set","role":""}`), await("role_response"),
			send(`{"type":"role","action":"set","role":"ghost"}`), await("role_response"),
			send(`{"type":"role","action":"set","role":"builder"}`), await("role_response"),
			send(setPlanner), await("role_response"),
			send(setPlanner), await("role_response"),
			send(`{"type":"role","action":"explode"}`), await("role_response"),
			send(status), await("status_response")},
	}, {
		name:  "role_flows",
		files: rolesWorkspace,
		turns: []llmtest.Turn{goldenStalled("one two three four")},
		steps: []step{
			send(`{"type":"role","action":"list"}`), await("role_response"),
			send(`{"type":"role","action":"set","role":"reviewer"}`), await("role_response"),
			send(`{"type":"role","action":"set","role":"broken"}`), await("role_response"),
			send(`{"type":"role","action":"set","role":"Planner"}`), await("role_response"),
			sendContent("/role"), await("role_response"),
			sendContent("/role planner"), await("role_response"),
			sendContent("/role planner"), await("role_response"),
			sendContent("talk"), awaitActivity("streaming"),
			send(`{"type":"role","action":"set","role":"auditor"}`), await("role_response"),
			send(status), await("status_response"),
			send(`{"type":"cancel"}`), await("idle"),
			send(status), await("status_response")},
	}, {
		// The ends of a handoff: accepted, denied, cancelled, superseded
		// by a send or by /new.
		name:  "handoff_accept",
		files: rolesWorkspace,
		turns: []llmtest.Turn{goldenHandoff(), goldenText("building", "Execute this plan")},
		steps: planned(send(status), await("status_response"),
			send(acceptPlan), await("idle"),
			send(status), await("status_response"),
			send(`{"type":"models","action":"status"}`), await("models_response")),
	}, {
		name:  "handoff_deny",
		files: rolesWorkspace,
		turns: []llmtest.Turn{goldenHandoff(), goldenText("revising", "The user rejected the plan: add release steps")},
		steps: planned(
			send(`{"type":"handoff","request_id":"handoff-1","action":"deny","deny_reason":"add release steps"}`), await("idle"),
			send(status), await("status_response")),
	}, {
		name:  "handoff_cancel",
		files: rolesWorkspace,
		turns: []llmtest.Turn{goldenHandoff()},
		steps: planned(
			send(`{"type":"role","action":"set","role":"builder"}`), await("role_response"),
			send(status), await("status_response"),
			send(`{"type":"handoff","request_id":"handoff-1","action":"cancel"}`), await("idle"),
			send(status), await("status_response"),
			send(acceptPlan), await("error")),
	}, {
		name:  "handoff_superseded",
		files: rolesWorkspace,
		turns: []llmtest.Turn{goldenHandoff(), goldenText("ok", "something else")},
		steps: planned(sendContent("something else"), await("idle"),
			send(status), await("status_response"),
			send(acceptPlan), await("error")),
	}, {
		name:  "handoff_superseded_new",
		files: rolesWorkspace,
		turns: []llmtest.Turn{goldenHandoff()},
		steps: planned(sendContent("/new"), await("idle"),
			send(status), await("status_response")),
	}, {
		// cancel stops a running local_shell: its result says cancelled.
		// Nothing else runs, so no idle follows.
		name: "local_shell_cancel",
		steps: []step{
			send(`{"type":"local_shell","command":"touch started; sleep 600"}`),
			send(status), await("status_response"),
			send(`{"type":"cancel"}`), await("local_shell_result"),
			send(status), await("status_response")},
	}, {
		// Regression: a send that superseded a pending handoff left the
		// idle owed to the handoff's turn, and a later /new paid it.
		name:  "handoff_superseded_then_new",
		files: rolesWorkspace,
		turns: []llmtest.Turn{goldenHandoff(), goldenText("ok", "something else")},
		steps: planned(sendContent("something else"), await("idle"),
			send(status), await("status_response"),
			send(acceptPlan), await("error"),
			sendContent("/new"), await("session_switched"), await("idle"),
			send(status), await("status_response")),
	}, {
		// Sub-agents (see the doc comment of golden_test.go on holds and
		// subscribe). The child notifies, then completes, while the
		// main agent's next model call is held: both updates reach it in
		// one delivery turn, and idle comes once, after agent_done.
		name:      "subagents_idle",
		subscribe: agentEvents,
		turns: []llmtest.Turn{goldenSpawn("count"), spawned,
			goldenText("all results in", "Progress note from sub-agent #2 (count): halfway\n\nSub-agent #2 (count) ended, complete:\ncounted 2")},
		nodes: treetest.Script{2: {
			treetest.Calls(treetest.Call("notify", map[string]any{"message": "halfway"})),
			treetest.Complete("counted 2")}},
		holds: []hold{{node: 0, turn: 1, until: typeIs("agent_done")}},
		steps: []step{sendContent("count"), await("idle"),
			send(status), await("status_response")},
	}, {
		// The child's first model call is held until the main agent's
		// turn has ended (afterTurn's answer); it asks for a shell
		// command: the confirm_request carries its agent_id, and no idle
		// comes while it waits.
		name:      "subagents_approval",
		subscribe: append([]string{"confirm_request", "notification"}, agentEvents...),
		turns:     []llmtest.Turn{goldenSpawn("greet"), spawned, goldenText("greeted", "Sub-agent #2 (greet) ended, complete:\nhello")},
		nodes: treetest.Script{2: {
			treetest.Calls(treetest.Call("shell", map[string]any{"command": "echo hello"})),
			{ToolCalls: []llmtest.ToolCall{treetest.Call("complete", map[string]any{"result": "hello"})}, Expect: "hello"}}},
		holds: []hold{{node: 0, turn: 1, until: typeIs("agent_started")}, {node: 2, turn: 0, until: typeIs("error")}},
		steps: []step{sendContent("greet"), send(afterTurn), await("error"), await("notification"),
			send(status), await("status_response"),
			send(`{"type":"confirm","request_id":"req_1","action":"allow"}`), await("idle"),
			send(status), await("status_response")},
	}, {
		// The child's model call stalls; the main agent's turn has ended
		// without idle. cancel stops the child: agent_done, then idle.
		name:      "subagents_cancel",
		subscribe: agentEvents,
		turns:     []llmtest.Turn{goldenSpawn("forever"), spawned},
		nodes:     treetest.Script{2: {{Text: "never", Fault: &llmtest.Fault{Kind: llmtest.FaultStall}}}},
		holds:     []hold{{node: 0, turn: 1, until: typeIs("agent_started")}},
		steps: []step{sendContent("start something long"), send(afterTurn), await("error"),
			send(status), await("status_response"),
			send(`{"type":"cancel"}`), await("idle"),
			send(status), await("status_response")},
	}, {
		// todo_write replaces the list twice: todos carries the whole list.
		name: "todos",
		turns: []llmtest.Turn{
			goldenTodos("", [4]string{"1", "Read the README", "in_progress", "Reading the README"},
				[4]string{"2", "Summarize it", "pending", "Summarizing it"}),
			goldenTodos("todo list updated (0/2 completed)", [4]string{"1", "Read the README", "completed", "Reading the README"},
				[4]string{"2", "Summarize it", "in_progress", "Summarizing it"}),
			goldenText("The README is read; the summary is next.", "todo list updated (1/2 completed)")},
		steps: []step{sendContent("plan the summary"), await("idle"),
			send(status), await("status_response")},
	}, {
		// /compact with nothing to compact is skipped; after a turn it
		// compacts (the summary is one more model request).
		name:  "compact",
		files: map[string]string{".arbor/config.yaml": "compaction:\n  keep_recent: 1\n"},
		turns: []llmtest.Turn{goldenText("hello", "hi"),
			goldenText("The user greeted the agent, which said hello.", "Conversation to summarize")},
		steps: []step{sendContent("/compact"), await("compaction_status"), await("idle"),
			sendContent("hi"), await("idle"),
			sendContent("/compact"), await("compaction_status"), await("compaction_status"), await("idle"),
			send(status), await("status_response")},
	}, {
		// A window of 1,000 tokens: compaction at 800, the notice from
		// 600, once per context. The first request holds about 650
		// tokens (the system prompt and the message), the second a few
		// more.
		name: "context_notice",
		files: map[string]string{
			".arbor/config.yaml": "providers:\n  anthropic:\n    models:\n      claude-test:\n        context_window: 1000\n"},
		turns: []llmtest.Turn{goldenText("noted", "lorem ipsum"), goldenText("still here", "and again")},
		steps: []step{sendContent(strings.Repeat("lorem ipsum ", 100)), await("idle"),
			sendContent("and again"), await("idle")},
	}, {
		// A loop: the first turn ends without done and is continued; the
		// continuation calls done, which ends the loop and the turn.
		name: "loop_done",
		turns: []llmtest.Turn{goldenText("started", "build it"),
			{Expect: "Continue working toward the goal", Usage: goldenUsage, ToolCalls: []llmtest.ToolCall{
				{Name: "done", Input: map[string]any{"report": "all built", "reason": "goal met"}}}}},
		steps: []step{sendContent("/loop on"), await("info"),
			sendContent("build it"), await("idle"),
			send(status), await("status_response")},
	}, {
		// A background job: it waits for a gate the hook opens on the
		// status answer while it runs, so its result comes after.
		name:  "background_result",
		turns: []llmtest.Turn{goldenBackground(waitGate), goldenText("started it", "job_1"), goldenText("the job said released", "released")},
		steps: []step{sendContent("run it in the background"), await("notification"),
			send(`{"type":"confirm","request_id":"req_1","action":"allow"}`), await("idle"),
			send(status), await("status_response"), await("idle"),
			send(status), await("status_response")},
		on: touchOn("status_response", "gate"),
	}, {
		// /worktree moves the session into a managed worktree and back:
		// workdir_changed, then a toast, each time.
		name:  "worktree",
		setup: testutil.GitInit,
		steps: []step{sendContent("/worktree feat"), await("toast"), await("idle"),
			send(status), await("status_response"),
			sendContent("/worktree off"), await("toast"), await("idle"),
			send(status), await("status_response")},
	}}
}
