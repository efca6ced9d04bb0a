package envelope_test

import (
	"encoding/json"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/tree/treetest"
)

// agentEvent is the payload of agent_started, agent_notify and agent_done.
type agentEvent struct {
	AgentID         string `json:"agent_id"`
	PreviousAgentID string `json:"previous_agent_id"`
	TaskID          string `json:"task_id"`
	AgentType       string `json:"agent_type"`
	Description     string `json:"description"`
	ParentAgentID   string `json:"parent_agent_id"`
	ParentTaskID    string `json:"parent_task_id"`
	TargetAgentID   string `json:"target_agent_id"`
	TargetTaskID    string `json:"target_task_id"`
	Kind            string `json:"kind"`
	Message         string `json:"message"`
	Summary         string `json:"summary"`
	State           string `json:"state"`
	Runner          string `json:"runner"`
}

// assistantText matches the assistant_message with text.
func assistantText(text string) func(out) bool {
	return func(o out) bool { return o.Type == "assistant_message" && o.P.Text == text }
}

func agentOf(t *testing.T, o out) agentEvent {
	t.Helper()
	var a agentEvent
	if err := json.Unmarshal(o.Payload, &a); err != nil {
		t.Fatal(err)
	}
	return a
}

// treeModel answers the main agent (requests that are no node's) from
// main, turn by turn, repeating its last turn, and node #N from nodes[N].
// It records the last user text of the main agent's requests.
type treeModel struct {
	main  []llmtest.Turn
	nodes treetest.Script

	mu       sync.Mutex
	mainSeen []string
}

func (m *treeModel) respond(req llmtest.Request) llmtest.Turn {
	if id := treetest.NodeOf(req); id != 0 {
		turns := m.nodes[id]
		if i := treetest.Turns(req); i < len(turns) {
			return turns[i]
		}
		return llmtest.Turn{Fault: &llmtest.Fault{Kind: llmtest.FaultServer, Status: 400}}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.mainSeen = append(m.mainSeen, req.LastUserText())
	return m.main[min(treetest.Turns(req), len(m.main)-1)]
}

func (m *treeModel) seen() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.mainSeen...)
}

func spawnTurn(goals ...string) llmtest.Turn {
	var cs []llmtest.ToolCall
	for _, g := range goals {
		cs = append(cs, treetest.Call("spawn", map[string]any{"goal": g, "prompt": "do " + g}))
	}
	return treetest.Calls(cs...)
}

func TestSubAgents(t *testing.T) {
	t.Parallel()

	t.Run("IdleOnlyAfterEveryChildIsDone", func(t *testing.T) {
		t.Parallel()
		m := &treeModel{
			main: []llmtest.Turn{spawnTurn("count", "wait"), {Text: "two helpers started"}, {Text: "all results in"}},
			nodes: treetest.Script{
				2: {treetest.Calls(treetest.Call("notify", map[string]any{"message": "halfway"})), treetest.Complete("counted 2")},
				3: {treetest.Calls(treetest.Call("shell", map[string]any{"command": "read l < gate; echo got $l"})), treetest.Complete("waited")},
			},
		}
		srv := llmtest.NewServerFunc(m.respond)
		defer srv.Close()
		b, ready := setup(t, srv)
		gate := b.mkfifo("gate")
		b.Send(`{"type":"send","content":"count and wait"}`)

		// #3 asks to run its shell command: the approval carries its agent id.
		req := b.Next(typ("confirm_request"))
		b.Send(`{"type":"status"}`)
		if st := b.Next(typ("status_response")); !st.P.Busy {
			t.Fatalf("not busy while a child waits for approval: %s", st.raw)
		}
		started := map[string]agentEvent{}
		for _, o := range b.All {
			if o.Type == "idle" {
				t.Fatalf("idle while children run: %s", o.raw)
			}
			if o.Type == "agent_started" {
				a := agentOf(t, o)
				started[a.TaskID] = a
			}
		}
		sess := ready.P.SessionID
		two, three := started[sess+".2"], started[sess+".3"]
		if three.AgentID == "" {
			// #3's agent_started precedes its confirm_request.
			t.Fatalf("agent_started seen: %+v", started)
		}
		if two.AgentID == "" {
			// #2 was spawned with #3 but may start after #3 asked: its
			// agent_started comes later, and before any idle.
			o := b.Next(func(o out) bool {
				return o.Type == "idle" || o.Type == "agent_started" && agentOf(t, o).TaskID == sess+".2"
			})
			if o.Type == "idle" {
				t.Fatalf("idle while children run: %s", o.raw)
			}
			two = agentOf(t, o)
		}
		if a := agentOf(t, req); a.AgentID != three.AgentID {
			t.Fatalf("confirm_request from %q, want #3's %q: %s", a.AgentID, three.AgentID, req.raw)
		}
		for _, a := range []agentEvent{two, three} {
			if a.ParentAgentID != "" || a.ParentTaskID != "" || a.AgentType != "spawn" || a.AgentID == "" {
				t.Fatalf("agent_started %+v", a)
			}
		}
		b.Send(cmd(map[string]any{"type": "confirm", "request_id": req.P.RequestID, "action": "allow"}))
		if err := os.WriteFile(gate, []byte("go\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		idle := b.Next(typ("idle"))
		if idle.P.LastOutcome != "completed" {
			t.Fatalf("idle %s", idle.raw)
		}
		done := map[string]agentEvent{}
		var notify agentEvent
		var lastText string
		for _, o := range b.All {
			switch o.Type {
			case "agent_done":
				a := agentOf(t, o)
				done[a.TaskID] = a
			case "agent_notify":
				notify = agentOf(t, o)
			case "assistant_message":
				if o.P.Text != "" && agentOf(t, o).AgentID == "" {
					lastText = o.P.Text
				}
			}
		}
		if done[sess+".2"].Summary != "counted 2" || done[sess+".3"].Summary != "waited" || done[sess+".3"].State != "complete" {
			t.Fatalf("agent_done before idle: %+v", done)
		}
		if notify.AgentID != two.AgentID || notify.TargetAgentID != "" || notify.Message != "halfway" || notify.Kind != "progress" {
			t.Fatalf("agent_notify %+v", notify)
		}
		if lastText != "all results in" {
			t.Fatalf("the main agent's last message before idle is %q", lastText)
		}
		delivered := strings.Join(m.seen(), "\n")
		for _, want := range []string{"Sub-agent #2 (count) ended, complete:\ncounted 2", "Sub-agent #3 (wait) ended, complete:\nwaited", "Progress note from sub-agent #2 (count): halfway"} {
			if !strings.Contains(delivered, want) {
				t.Fatalf("the main agent was not told %q; it saw:\n%s", want, delivered)
			}
		}
		b.Send(`{"type":"status"}`)
		if st := b.Next(typ("status_response")); st.P.Busy {
			t.Fatalf("busy after idle: %s", st.raw)
		}
		b.Close()
		b.checkSeq()
		for _, o := range b.All[len(b.All)-1:] {
			if o.Type == "idle" {
				t.Fatalf("a second idle after quiescence: %s", o.raw)
			}
		}
	})

	t.Run("AgentStartedNamesTheRunner", func(t *testing.T) {
		t.Parallel()
		m := &treeModel{main: []llmtest.Turn{
			treetest.Calls(treetest.Call("spawn", map[string]any{"goal": "outsourced", "prompt": "do it", "runner": "claude-code"})),
			{Text: "delegated"}, {Text: "noted"},
		}}
		srv := llmtest.NewServerFunc(m.respond)
		defer srv.Close()
		// The runner's CLI is missing here, so the node fails once started.
		b, _ := setupFiles(t, srv, map[string]string{".arbor/config.yaml": "claude_path: ./no-claude-here\n"})
		b.Send(`{"type":"send","content":"delegate"}`)
		started := agentOf(t, b.Next(typ("agent_started")))
		done := agentOf(t, b.Next(typ("agent_done")))
		if started.Runner != "claude-code" || started.Description != "outsourced" || done.TaskID != started.TaskID || done.State != "failed" {
			t.Fatalf("agent_started %+v, agent_done %+v", started, done)
		}
		b.Next(typ("idle"))
		b.Close()
	})

	t.Run("ChildrenFollowModelSwitches", func(t *testing.T) {
		t.Parallel()
		m := &treeModel{
			main:  []llmtest.Turn{spawnTurn("quick"), {Text: "asked"}, {Text: "done"}},
			nodes: treetest.Script{2: {treetest.Complete("ok")}},
		}
		var mu sync.Mutex
		var childModel string
		srv := llmtest.NewServerFunc(func(req llmtest.Request) llmtest.Turn {
			if treetest.NodeOf(req) == 2 {
				mu.Lock()
				childModel = req.Model
				mu.Unlock()
			}
			return m.respond(req)
		})
		defer srv.Close()
		b, ready := setupFiles(t, srv, map[string]string{".arbor/config.yaml": poolsConfig})
		b.Send(`{"type":"models","action":"set_current_model_pool","pool":"fast"}`)
		if r := b.Next(typ("models_response")); !r.P.OK {
			t.Fatalf("models_response %s", r.raw)
		}
		b.Send(`{"type":"send","content":"delegate"}`)
		b.Next(typ("agent_done"))
		b.Next(typ("idle"))
		// A sub-agent's session is not a conversation to resume.
		b.Send(sendText("/resume " + ready.P.SessionID + ".2"))
		if e := b.Next(typ("error")); !strings.Contains(e.P.Message, "is a tree node's (a sub-agent's)") {
			t.Fatalf("/resume of a sub-agent's session: %s", e.raw)
		}
		b.Close()
		mu.Lock()
		defer mu.Unlock()
		if childModel != "claude-fast" {
			t.Fatalf("the sub-agent used model %q, want the session's claude-fast", childModel)
		}
	})

	t.Run("ASwitchInterruptsAndResumeContinues", func(t *testing.T) {
		t.Parallel()
		var resumed atomic.Bool
		m := &treeModel{
			main:  []llmtest.Turn{spawnTurn("long"), {Text: "started"}, {Text: "got it"}},
			nodes: treetest.Script{2: {treetest.Complete("finished after the resume")}},
		}
		srv := llmtest.NewServerFunc(func(req llmtest.Request) llmtest.Turn {
			if treetest.NodeOf(req) == 2 && !resumed.Load() {
				return llmtest.Turn{Fault: &llmtest.Fault{Kind: llmtest.FaultStall}}
			}
			return m.respond(req)
		})
		defer srv.Close()
		b, ready := setup(t, srv)
		b.Send(`{"type":"send","content":"start it"}`)
		// The child starts while the main agent goes on: its agent_started
		// and the main agent's reply come in either order.
		first := agentOf(t, b.NextAll(typ("agent_started"), assistantText("started"))[0])
		srv.WaitRequests(3) // the child's stalled call is in flight
		b.Send(sendText("/new"))
		b.Next(typ("session_switched"))
		resumed.Store(true)
		b.Send(sendText("/resume " + ready.P.SessionID))
		if sw := b.Next(typ("session_switched")); sw.P.SessionID != ready.P.SessionID {
			t.Fatalf("session_switched %s", sw.raw)
		}
		again := agentOf(t, b.Next(typ("agent_started")))
		if again.TaskID != first.TaskID || again.PreviousAgentID != first.AgentID || again.AgentID == first.AgentID {
			t.Fatalf("the child's runtime after the resume %+v, first %+v", again, first)
		}
		if done := agentOf(t, b.Next(typ("agent_done"))); done.Summary != "finished after the resume" {
			t.Fatalf("agent_done %+v", done)
		}
		b.Next(typ("idle"))
		b.Close()
		b.checkSeq()
	})

	t.Run("AskNodeIsAQuestion", func(t *testing.T) {
		t.Parallel()
		m := &treeModel{main: []llmtest.Turn{
			treetest.Calls(treetest.Call("ask", map[string]any{"question": "Which region?", "options": []string{"eu", "us"}})),
			{Text: "asked"}, {Text: "eu it is"},
		}}
		srv := llmtest.NewServerFunc(m.respond)
		defer srv.Close()
		b, _ := setup(t, srv)
		b.Send(`{"type":"send","content":"deploy"}`)
		// The ask node's question and the main agent's reply come in either
		// order (the node runs on the engine's goroutine).
		q := b.NextAll(typ("question_request"), assistantText("asked"))[0]
		if q.P.ToolName != "ask" || q.P.Question != "Which region?" || agentOf(t, q).AgentID != "" {
			t.Fatalf("question_request of an ask node: %s", q.raw)
		}
		b.Send(`{"type":"status"}`)
		if st := b.Next(typ("status_response")); !st.P.Busy {
			t.Fatalf("not busy while the ask node waits: %s", st.raw)
		}
		for _, o := range b.All {
			if o.Type == "idle" {
				t.Fatalf("idle while the ask node waits: %s", o.raw)
			}
		}
		b.Send(cmd(map[string]any{"type": "question", "request_id": q.P.RequestID, "answers": []string{"eu"}, "reason": "answered"}))
		if m := b.Next(func(o out) bool { return o.Type == "assistant_message" && o.P.Text != "" && o.P.Text != "asked" }); m.P.Text != "eu it is" {
			t.Fatalf("after the answer: %s", m.raw)
		}
		b.Next(typ("idle"))
		b.Close()
		if seen := strings.Join(m.seen(), "\n"); !strings.Contains(seen, "The user answered your question #2 (Which region?): eu") {
			t.Fatalf("the answer was not delivered to the main agent: %q", seen)
		}
	})

	t.Run("CancelStopsChildren", func(t *testing.T) {
		t.Parallel()
		m := &treeModel{
			main:  []llmtest.Turn{spawnTurn("forever"), {Text: "started"}},
			nodes: treetest.Script{2: {{Text: "never", Fault: &llmtest.Fault{Kind: llmtest.FaultStall}}}},
		}
		srv := llmtest.NewServerFunc(m.respond)
		defer srv.Close()
		b, _ := setup(t, srv)
		b.Send(`{"type":"send","content":"start something long"}`)
		// The child's start and the main agent's answer race: wait for both.
		b.NextAll(typ("agent_started"), assistantText("started"))
		b.Send(`{"type":"cancel"}`)
		done := agentOf(t, b.Next(typ("agent_done")))
		if done.State != "cancelled" {
			t.Fatalf("agent_done %+v", done)
		}
		if idle := b.Next(typ("idle")); idle.P.LastOutcome != "cancelled" {
			t.Fatalf("idle after cancel %s", idle.raw)
		}
		b.Close()
		toasts, idled := 0, false
		for _, o := range b.All {
			if o.Type == "idle" && o.P.LastOutcome == "cancelled" {
				idled = true
			}
			if o.Type == "toast" && strings.Contains(o.raw, `"stopped 1 sub-agent"`) && strings.Contains(o.raw, `"level":"warn"`) {
				toasts++
				if idled {
					t.Fatalf("the toast came after the cancel's idle: %s", o.raw)
				}
			}
		}
		if toasts != 1 {
			t.Fatalf("%d toasts saying the sub-agent was stopped", toasts)
		}
		b.checkSeq()
		for _, s := range m.seen()[2:] {
			t.Fatalf("a stopped child's end was delivered to the main agent: %q", s)
		}
	})
}
