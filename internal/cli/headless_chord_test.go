package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/arbor-run/arbor/internal/llm/llmtest"
	"github.com/arbor-run/arbor/internal/tree/treetest"
)

// These tests drive the built binary as a gateway written for Chord does
// (issue #10): every stdout payload is decoded into structs typed as
// Chord's own (cmd/chord/headless.go and chord-gateway's types: integer
// tool_calls, string ids, lists of strings), unknown fields allowed, and
// any type error fails the test.

type chordWorkdir struct {
	Path       string `json:"path"`
	WorktreeID string `json:"worktree_id"`
	Generation int    `json:"generation"`
}

type chordReady struct {
	SessionID string       `json:"session_id"`
	Workdir   chordWorkdir `json:"workdir"`
	Worktree  *struct {
		Name     string `json:"name"`
		Branch   string `json:"branch"`
		Path     string `json:"path"`
		RepoRoot string `json:"repo_root"`
	} `json:"worktree"`
	SkippedLockedSessions []string `json:"skipped_locked_sessions"`
}

type chordConfirm struct {
	ToolName            string   `json:"tool_name"`
	ArgsJSON            string   `json:"args_json"`
	RequestID           string   `json:"request_id"`
	TimeoutMS           int64    `json:"timeout_ms"`
	NeedsApproval       []string `json:"needs_approval"`
	AlreadyAllowed      []string `json:"already_allowed"`
	NeedsApprovalRules  []string `json:"needs_approval_rules"`
	AlreadyAllowedRules []string `json:"already_allowed_rules"`
	DoneReport          string   `json:"done_report"`
	DoneReason          string   `json:"done_reason"`
	AgentID             string   `json:"agent_id"`
}

type chordQuestion struct {
	ToolName      string     `json:"tool_name"`
	Header        string     `json:"header"`
	Question      string     `json:"question"`
	Options       []string   `json:"options"`
	OptionDetails []string   `json:"option_details"`
	DefaultAnswer string     `json:"default_answer"`
	Multiple      bool       `json:"multiple"`
	RequestID     string     `json:"request_id"`
	Deadline      *time.Time `json:"deadline"`
	AgentID       string     `json:"agent_id"`
}

type chordHandoff struct {
	RequestID string `json:"request_id"`
	PlanPath  string `json:"plan_path"`
	PlanText  string `json:"plan_text"`
	PlanError string `json:"plan_error"`
	Agents    []struct {
		Name             string   `json:"name"`
		Default          bool     `json:"default"`
		ModelPools       []string `json:"model_pools"`
		CurrentModelPool string   `json:"current_model_pool"`
	} `json:"agents"`
}

type chordStatus struct {
	SessionID       string         `json:"session_id"`
	Busy            bool           `json:"busy"`
	Phase           string         `json:"phase"`
	PhaseDetail     string         `json:"phase_detail"`
	PendingConfirm  *chordConfirm  `json:"pending_confirm"`
	PendingQuestion *chordQuestion `json:"pending_question"`
	PendingHandoff  *chordHandoff  `json:"pending_handoff"`
	Workdir         chordWorkdir   `json:"workdir"`
	LastError       string         `json:"last_error"`
	LastOutcome     string         `json:"last_outcome"`
	CurrentRole     string         `json:"current_role"`
	UpdatedAt       string         `json:"updated_at"`
	RunningJobs     int            `json:"running_jobs"`
}

type chordAssistant struct {
	AgentID       string `json:"agent_id"`
	TaskID        string `json:"task_id"`
	AgentType     string `json:"agent_type"`
	ParentAgentID string `json:"parent_agent_id"`
	Text          string `json:"text"`
	ToolCalls     int    `json:"tool_calls"`
}

type chordIdle struct {
	LastOutcome              string `json:"last_outcome"`
	SuppressUserNotification bool   `json:"suppress_user_notification"`
	RunningJobs              int    `json:"running_jobs"`
}

type chordAgent struct {
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
	Subtype         string `json:"subtype"`
	Message         string `json:"message"`
	Summary         string `json:"summary"`
}

type chordStrings struct {
	AgentID   string `json:"agent_id"`
	Message   string `json:"message"`
	Code      string `json:"code"`
	Reason    string `json:"reason"`
	RequestID string `json:"request_id"`
	Role      string `json:"role"`
	Level     string `json:"level"`
	Type      string `json:"type"`
	Detail    string `json:"detail"`
	SessionID string `json:"session_id"`
}

type chordModels struct {
	OK      bool   `json:"ok"`
	Message string `json:"message"`
	Status  string `json:"status"`
}

type chordRole struct {
	OK      bool   `json:"ok"`
	Message string `json:"message"`
	Role    string `json:"role"`
	Roles   []struct {
		Name    string `json:"name"`
		Current bool   `json:"current"`
	} `json:"roles"`
}

// chordPayload is a new value of the Chord type of an envelope type; an
// envelope type Chord does not send is nil.
func chordPayload(typ string) any {
	switch typ {
	case "ready":
		return &chordReady{}
	case "status_response":
		return &chordStatus{}
	case "subscribe_response":
		return &struct {
			Events []string `json:"events"`
		}{}
	case "models_response":
		return &chordModels{}
	case "role_response":
		return &chordRole{}
	case "assistant_message":
		return &chordAssistant{}
	case "idle":
		return &chordIdle{}
	case "confirm_request":
		return &chordConfirm{}
	case "question_request":
		return &chordQuestion{}
	case "handoff_request":
		return &chordHandoff{}
	case "agent_started", "agent_notify", "agent_done":
		return &chordAgent{}
	case "error", "activity", "question_resolved", "notification", "handoff_cancelled", "role_change",
		"info", "toast", "assistant_rollback", "session_switched":
		return &chordStrings{}
	case "local_shell_result":
		return &struct {
			Command string `json:"command"`
			Output  string `json:"output"`
			Failed  bool   `json:"failed"`
			Error   string `json:"error"`
		}{}
	case "done_completion":
		return &struct {
			CallID  string `json:"call_id"`
			Report  string `json:"report"`
			Reason  string `json:"reason"`
			Status  string `json:"status"`
			AgentID string `json:"agent_id"`
			Mode    string `json:"mode"`
		}{}
	case "todos":
		return &struct {
			Todos []struct {
				ID         string `json:"id"`
				Content    string `json:"content"`
				Status     string `json:"status"`
				ActiveForm string `json:"active_form"`
			} `json:"todos"`
		}{}
	case "compaction_status":
		return &struct {
			Status    string `json:"status"`
			Trigger   string `json:"trigger"`
			Reason    string `json:"reason"`
			PlanID    string `json:"plan_id"`
			Synthetic bool   `json:"synthetic"`
		}{}
	case "workdir_changed":
		return &chordWorkdir{}
	case "background_result", "context_notice":
		return &struct {
			SessionID     string `json:"session_id"`
			TargetAgentID string `json:"target_agent_id"`
			MessageIndex  int    `json:"message_index"`
			Content       string `json:"content"`
			Level         string `json:"level"`
			Message       string `json:"message"`
		}{}
	}
	return nil
}

// chord decodes line into its Chord type, failing the test on any
// decode error or on an envelope type Chord does not send.
func chord[T any](g *gateway, l gwLine) *T {
	g.t.Helper()
	var env struct {
		Type    string          `json:"type"`
		Seq     uint64          `json:"seq"`
		Payload json.RawMessage `json:"payload"`
	}
	if err := json.Unmarshal([]byte(l.raw), &env); err != nil {
		g.fatalf("a Chord client cannot decode the envelope (%v): %s", err, l.raw)
	}
	v := chordPayload(env.Type)
	if v == nil {
		g.fatalf("envelope type %q is not one Chord sends: %s", env.Type, l.raw)
	}
	if err := json.Unmarshal(env.Payload, v); err != nil {
		g.fatalf("a Chord client cannot decode the %s payload (%v): %s", env.Type, err, l.raw)
	}
	p, ok := v.(*T)
	if !ok {
		var zero T
		g.fatalf("test bug: %s decodes into %T, not %T", env.Type, v, &zero)
	}
	return p
}

// checkChordTypes decodes every line seen so far as a Chord client does.
func (g *gateway) checkChordTypes() {
	g.t.Helper()
	for _, l := range g.seen {
		var env struct {
			Payload json.RawMessage `json:"payload"`
		}
		if err := json.Unmarshal([]byte(l.raw), &env); err != nil {
			g.fatalf("undecodable envelope (%v): %s", err, l.raw)
		}
		v := chordPayload(l.Type)
		if v == nil {
			g.fatalf("envelope type %q is not one Chord sends: %s", l.Type, l.raw)
		}
		if err := json.Unmarshal(env.Payload, v); err != nil {
			g.fatalf("a Chord client cannot decode the %s payload (%v): %s", l.Type, err, l.raw)
		}
		// Internal error text never reaches the wire.
		for _, internal := range []string{"context canceled", "context deadline exceeded", "store messages"} {
			if strings.Contains(l.raw, internal) {
				g.fatalf("internal error text %q on the wire: %s", internal, l.raw)
			}
		}
	}
}

// chordIdleNext reads up to the next idle and returns it typed.
func (g *gateway) chordIdleNext() *chordIdle {
	g.t.Helper()
	return chord[chordIdle](g, g.nextType("idle"))
}

// chordModel is the scripted model of the Chord gateway flows: a user
// message is answered by the first reply whose key it contains, a tool
// result by the tool's name; sub-agent nodes follow their script.
type chordModel struct {
	replies []gwReply
	results map[string]llmtest.Turn
	child   treetest.Script
	hold    string        // a user message containing it is held ...
	held    chan struct{} // ... closed when it arrives; then answered once the request is cancelled

	mu         sync.Mutex
	holding    bool
	unexpected []string
}

func (m *chordModel) respond(req llmtest.Request) llmtest.Turn {
	if node := treetest.NodeOf(req); node != 0 {
		if turns, i := m.child[node], treetest.Turns(req); i < len(turns) {
			return turns[i]
		}
		return m.fail("sub-agent request")
	}
	if name := resultOf(req); name != "" {
		if t, ok := m.results[name]; ok {
			return t
		}
		return m.fail("result of " + name)
	}
	text := req.LastUserText()
	for _, r := range m.replies {
		if strings.Contains(text, r.contains) {
			return r.answer
		}
	}
	if m.hold != "" && strings.Contains(text, m.hold) {
		m.mu.Lock()
		first := !m.holding
		m.holding = true
		m.mu.Unlock()
		if first {
			close(m.held)
			return llmtest.Turn{Text: "never", Fault: &llmtest.Fault{Kind: llmtest.FaultStall}}
		}
	}
	return m.fail(text)
}

func (m *chordModel) fail(what string) llmtest.Turn {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.unexpected = append(m.unexpected, what)
	return llmtest.Turn{Text: "unexpected request: " + what, Fault: &llmtest.Fault{Kind: llmtest.FaultServer, Status: 400}}
}

func (m *chordModel) check(g *gateway) {
	g.t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.unexpected) > 0 {
		g.fatalf("unexpected model requests: %q", m.unexpected)
	}
}

func chordServer(t *testing.T, e *env, m *chordModel) string {
	t.Helper()
	srv := llmtest.NewServerFunc(m.respond)
	t.Cleanup(srv.Close)
	return e.useProvider("anthropic", srv.URL)
}

func TestHeadlessChordGateway(t *testing.T) {
	t.Parallel()
	t.Run("PlainReply", testChordPlainReply)
	t.Run("ConfirmAlwaysAllow", testChordAlwaysAllow)
	t.Run("Question", testChordQuestion)
	t.Run("Handoff", testChordHandoff)
	t.Run("SubAgent", testChordSubAgent)
	t.Run("CancelMidTurn", testChordCancel)
	t.Run("NewThenIdle", testChordNew)
	t.Run("ContinueLastUsed", testChordContinueLastUsed)
}

func testChordPlainReply(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	m := &chordModel{replies: []gwReply{{"hello", llmtest.Turn{Text: "Hello from arbor."}}}}
	g := startGateway(t, e, "--model", chordServer(t, e, m))
	ready := chord[chordReady](g, g.ready)
	if ready.Workdir.Path == "" || ready.Worktree != nil {
		g.fatalf("ready: %s", g.ready.raw)
	}
	g.send(map[string]any{"type": "send", "content": "hello"})
	msg := chord[chordAssistant](g, g.nextType("assistant_message"))
	if msg.Text != "Hello from arbor." || msg.ToolCalls != 0 || msg.AgentID != "" || msg.TaskID != "" || msg.AgentType != "" || msg.ParentAgentID != "" {
		g.fatalf("assistant_message of the main agent: %+v", msg)
	}
	if idle := g.chordIdleNext(); idle.LastOutcome != "completed" || idle.SuppressUserNotification {
		g.fatalf("idle after the reply: %+v", idle)
	}
	g.send(map[string]any{"type": "status"})
	st := chord[chordStatus](g, g.nextType("status_response"))
	if st.Busy || st.LastOutcome != "completed" || st.CurrentRole != "builder" || st.SessionID != ready.SessionID || st.UpdatedAt == "" {
		g.fatalf("status: %+v", st)
	}
	g.closeAndWait()
	g.checkWire()
	g.checkChordTypes()
	m.check(g)
}

// testChordAlwaysAllow answers a shell call's confirm with "always allow"
// in each scope, with the spec's tool:regex rule_pattern, and checks
// that the same call is then allowed without a confirm: in the same
// process for session, in a new process for project and user_global,
// whose rules are stored per role.
func testChordAlwaysAllow(t *testing.T) {
	t.Parallel()
	for _, scope := range []string{"session", "project", "user_global"} {
		t.Run(scope, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			call := treetest.Calls(treetest.Call("shell", map[string]any{"command": "echo chord"}))
			m := &chordModel{
				replies: []gwReply{{"run it", call}, {"again", call}},
				results: map[string]llmtest.Turn{"shell": {Text: "ran it"}},
			}
			model := chordServer(t, e, m)
			g := startGateway(t, e, "--model", model)
			g.send(map[string]any{"type": "send", "content": "run it"})
			req := chord[chordConfirm](g, g.nextType("confirm_request"))
			if req.ToolName != "shell" || req.RequestID == "" || req.AgentID != "" || len(req.NeedsApproval) != 1 || req.NeedsApproval[0] != "echo chord" ||
				len(req.NeedsApprovalRules) != 1 || req.NeedsApprovalRules[0] == "" {
				g.fatalf("confirm_request: %+v", req)
			}
			g.send(map[string]any{"type": "confirm", "request_id": req.RequestID, "action": "allow",
				"rule_pattern": "shell:^echo chord$", "rule_scope": scope})
			if idle := g.chordIdleNext(); idle.LastOutcome != "completed" {
				g.fatalf("idle after the allowed call: %+v", idle)
			}
			if scope != "session" {
				// A new process reads the rule back from the role's file.
				g.closeAndWait()
				g.checkChordTypes()
				file := filepath.Join(e.workspace, ".arbor", "agents", "builder.yaml")
				if scope == "user_global" {
					file = filepath.Join(e.home, "config", "arbor", "agents", "builder.yaml")
				}
				if b, err := os.ReadFile(file); err != nil || !strings.Contains(string(b), "^echo chord$") {
					g.fatalf("the %s rule is not in %s: %q, %v", scope, file, b, err)
				}
				g = startGateway(t, e, "--model", model)
			}
			turn := len(g.seen)
			g.send(map[string]any{"type": "send", "content": "again"})
			if idle := g.chordIdleNext(); idle.LastOutcome != "completed" {
				g.fatalf("idle after the second call: %+v", idle)
			}
			for _, l := range g.seen[turn:] {
				if l.Type == "confirm_request" {
					g.fatalf("the %s rule did not allow the call: %s", scope, l.raw)
				}
			}
			g.closeAndWait()
			g.checkWire()
			g.checkChordTypes()
			m.check(g)
		})
	}
}

func testChordQuestion(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	m := &chordModel{
		replies: []gwReply{{"pick a color", treetest.Calls(treetest.Call("ask_user", map[string]any{
			"question": "Which color?", "options": []string{"red", "green"}}))}},
		results: map[string]llmtest.Turn{"ask_user": {Text: "Green it is."}},
	}
	g := startGateway(t, e, "--model", chordServer(t, e, m))
	g.send(map[string]any{"type": "send", "content": "pick a color"})
	q := chord[chordQuestion](g, g.nextType("question_request"))
	if q.Question != "Which color?" || len(q.Options) != 2 || len(q.OptionDetails) > len(q.Options) || q.RequestID == "" {
		g.fatalf("question_request: %+v", q)
	}
	g.send(map[string]any{"type": "status"})
	if st := chord[chordStatus](g, g.nextType("status_response")); st.PendingQuestion == nil || st.PendingQuestion.RequestID != q.RequestID {
		g.fatalf("status while the question is pending: %+v", st)
	}
	g.send(map[string]any{"type": "question", "request_id": q.RequestID, "answers": []string{"green"}, "reason": "answered"})
	if r := chord[chordStrings](g, g.nextType("question_resolved")); r.RequestID != q.RequestID || r.Reason != "answered" {
		g.fatalf("question_resolved: %+v", r)
	}
	if idle := g.chordIdleNext(); idle.LastOutcome != "completed" {
		g.fatalf("idle: %+v", idle)
	}
	g.closeAndWait()
	g.checkWire()
	g.checkChordTypes()
	m.check(g)
}

func testChordHandoff(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if err := os.MkdirAll(filepath.Join(e.workspace, ".arbor", "roles"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.workspace, ".arbor", "roles", "planner.yaml"), []byte("system: Plan first.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := &chordModel{replies: []gwReply{
		{"plan the work", treetest.Calls(treetest.Call("handoff", map[string]any{"plan": "1. Build it"}))},
		{"1. Build it", llmtest.Turn{Text: "Built."}},
	}}
	g := startGateway(t, e, "--model", chordServer(t, e, m))
	g.send(map[string]any{"type": "role", "action": "set", "role": "planner"})
	if r := chord[chordRole](g, g.nextType("role_response")); !r.OK || r.Role != "planner" {
		g.fatalf("role set: %+v", r)
	}
	g.send(map[string]any{"type": "send", "content": "plan the work"})
	h := chord[chordHandoff](g, g.nextType("handoff_request"))
	if h.RequestID == "" || !strings.Contains(h.PlanText, "1. Build it") || len(h.Agents) == 0 {
		g.fatalf("handoff_request: %+v", h)
	}
	g.send(map[string]any{"type": "handoff", "request_id": h.RequestID, "action": "accept"})
	sw := chord[chordStrings](g, g.nextType("session_switched"))
	if sw.SessionID == "" || sw.SessionID == g.ready.P.SessionID {
		g.fatalf("session_switched: %+v", sw)
	}
	if idle := g.chordIdleNext(); idle.LastOutcome != "completed" || idle.SuppressUserNotification {
		g.fatalf("idle after the plan ran: %+v", idle)
	}
	g.closeAndWait()
	g.checkWire()
	g.checkChordTypes()
	m.check(g)
}

func testChordSubAgent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	m := &chordModel{
		replies: []gwReply{
			{"count the leaves", treetest.Calls(treetest.Call("spawn", map[string]any{"goal": "count", "prompt": "Count the leaves."}))},
			{"412 leaves", llmtest.Turn{Text: "The helper counted 412 leaves."}},
		},
		results: map[string]llmtest.Turn{"spawn": {Text: "A helper is counting."}},
		child:   treetest.Script{2: {treetest.Complete("412 leaves")}},
	}
	g := startGateway(t, e, "--model", chordServer(t, e, m))
	g.send(map[string]any{"type": "send", "content": "count the leaves"})
	call := chord[chordAssistant](g, g.nextType("assistant_message"))
	if call.ToolCalls != 1 || call.AgentID != "" {
		g.fatalf("the main agent's spawn message: %+v", call)
	}
	started := chord[chordAgent](g, g.nextType("agent_started"))
	if started.AgentID == "" || started.TaskID == "" {
		g.fatalf("agent_started: %+v", started)
	}
	done := chord[chordAgent](g, g.nextType("agent_done"))
	if done.AgentID != started.AgentID || done.TaskID != started.TaskID || !strings.Contains(done.Summary, "412 leaves") {
		g.fatalf("agent_done: %+v after %+v", done, started)
	}
	if idle := g.chordIdleNext(); idle.LastOutcome != "completed" {
		g.fatalf("idle: %+v", idle)
	}
	g.closeAndWait()
	g.checkWire()
	g.checkChordTypes()
	m.check(g)
}

func testChordCancel(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	m := &chordModel{hold: "think long", held: make(chan struct{}),
		replies: []gwReply{{"short one", llmtest.Turn{Text: "Short."}}}}
	g := startGateway(t, e, "--model", chordServer(t, e, m))
	g.send(map[string]any{"type": "send", "content": "think long"})
	select {
	case <-m.held:
	case <-time.After(hangBound):
		g.fatalf("the model request did not arrive")
	}
	g.send(map[string]any{"type": "cancel"})
	if idle := g.chordIdleNext(); idle.LastOutcome != "cancelled" {
		g.fatalf("idle after cancel: %+v", idle)
	}
	g.send(map[string]any{"type": "status"})
	if st := chord[chordStatus](g, g.nextType("status_response")); st.Busy || st.LastOutcome != "cancelled" || st.LastError != "" {
		g.fatalf("status after cancel: %+v", st)
	}
	// The next turn is not reported cancelled.
	g.send(map[string]any{"type": "send", "content": "short one"})
	if idle := g.chordIdleNext(); idle.LastOutcome != "completed" {
		g.fatalf("idle of the turn after the cancel: %+v", idle)
	}
	g.closeAndWait()
	g.checkWire()
	g.checkChordTypes()
	m.check(g)
}

func testChordNew(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	m := &chordModel{replies: []gwReply{{"hello", llmtest.Turn{Text: "Hi."}}}}
	g := startGateway(t, e, "--model", chordServer(t, e, m))
	g.send(map[string]any{"type": "send", "content": "hello"})
	if idle := g.chordIdleNext(); idle.SuppressUserNotification {
		g.fatalf("idle after a turn: %+v", idle)
	}
	g.send(map[string]any{"type": "send", "content": "/new"})
	sw := chord[chordStrings](g, g.nextType("session_switched"))
	if sw.SessionID == "" || sw.SessionID == g.ready.P.SessionID {
		g.fatalf("session_switched: %+v", sw)
	}
	// Nothing ran since the last idle: the gateway is told not to notify.
	if idle := g.chordIdleNext(); !idle.SuppressUserNotification || idle.LastOutcome != "completed" {
		g.fatalf("idle after /new: %+v", idle)
	}
	g.send(map[string]any{"type": "status"})
	if st := chord[chordStatus](g, g.nextType("status_response")); st.SessionID != sw.SessionID || st.Busy || st.LastError != "" {
		g.fatalf("status after /new: %+v", st)
	}
	g.closeAndWait()
	g.checkWire()
	g.checkChordTypes()
	m.check(g)
}

// testChordContinueLastUsed: -c continues the session used last, not the
// one created last.
func testChordContinueLastUsed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	m := &chordModel{replies: []gwReply{{"first", llmtest.Turn{Text: "One."}}, {"again", llmtest.Turn{Text: "Two."}}}}
	model := chordServer(t, e, m)
	g := startGateway(t, e, "--model", model)
	used := g.ready.P.SessionID
	g.send(map[string]any{"type": "send", "content": "first"})
	g.chordIdleNext()
	g.send(map[string]any{"type": "send", "content": "/new"})
	newer := chord[chordStrings](g, g.nextType("session_switched")).SessionID
	g.chordIdleNext()
	g.send(map[string]any{"type": "send", "content": "/resume " + used})
	if sw := chord[chordStrings](g, g.nextType("session_switched")); sw.SessionID != used {
		g.fatalf("/resume switched to %q, want %q", sw.SessionID, used)
	}
	g.chordIdleNext()
	g.send(map[string]any{"type": "send", "content": "again"})
	g.chordIdleNext()
	g.closeAndWait()
	g.checkChordTypes()
	c := startGateway(t, e, "-c", "--model", model)
	if got := c.ready.P.SessionID; got != used || got == newer {
		c.fatalf("-c continued %q, want the session used last %q (not the newer %q)", got, used, newer)
	}
	c.closeAndWait()
	m.check(g)
}
