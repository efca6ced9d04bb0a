package envelope

import (
	"encoding/json"
	"time"

	"github.com/arbor-run/arbor/internal/tool"
)

// Envelope is one output line: {type, seq?, payload}. Seq is set only on
// state-carrying envelopes (pushed events and status_response).
type Envelope struct {
	Type    string          `json:"type"`
	Seq     uint64          `json:"seq,omitempty"`
	Payload json.RawMessage `json:"payload"`
}

// Event and response types that are always sent (no subscription).
const (
	typeReady             = "ready"
	typeSubscribeResponse = "subscribe_response"
	typeStatusResponse    = "status_response"
	typeModelsResponse    = "models_response"
	typeRoleResponse      = "role_response"
	typeError             = "error"
)

// Subscribable push types implemented here.
const (
	evActivity          = "activity"
	evAssistantMessage  = "assistant_message"
	evIdle              = "idle"
	evConfirmRequest    = "confirm_request"
	evQuestionRequest   = "question_request"
	evQuestionResolved  = "question_resolved"
	evNotification      = "notification"
	evError             = "error"
	evLocalShellResult  = "local_shell_result"
	evTodos             = "todos"
	evCompactionStatus  = "compaction_status"
	evContextNotice     = "context_notice"
	evRoleChange        = "role_change"
	evInfo              = "info"
	evSessionSwitched   = "session_switched"
	evBackgroundResult  = "background_result"
	evDoneCompletion    = "done_completion"
	evHandoffRequest    = "handoff_request"
	evHandoffCancelled  = "handoff_cancelled"
	evAgentStarted      = "agent_started"
	evAgentNotify       = "agent_notify"
	evAgentDone         = "agent_done"
	evWorkdirChanged    = "workdir_changed"
	evAssistantRollback = "assistant_rollback"
	evToast             = "toast"
)

// subscribable lists every event name a client may subscribe to, in the
// spec's order, including those this package does not emit yet.
var subscribable = []string{
	"activity", "assistant_message", "idle", "confirm_request", "question_request", "question_resolved",
	"notification", "handoff_request", "handoff_cancelled", "role_change", "error", "agent_started",
	"agent_notify", "agent_done", "info", "toast", "done_completion", "local_shell_result",
	"assistant_rollback", "todos", "compaction_status", "session_switched", "workdir_changed",
	"background_result", "context_notice",
}

// Error codes carried by error envelopes.
const (
	codeLineTooLong    = "stdin_line_too_long"
	codeInvalidJSON    = "invalid_json"
	codeInvalidCommand = "invalid_command"
	codeUnknownCommand = "unknown_command"
	codeUnknownRequest = "unknown_request"
	codeUnknownEvent   = "unknown_event"
	codeFailed         = "command_failed"
	codeTUIOnly        = "tui_only"
	codeUnavailable    = "unavailable"
	codeQueueFull      = "queue_full"
)

// readyPayload is shaped as Chord sends it: the checkout in workdir (as
// status_response reports it) and, when arbor works in a git worktree it
// manages (-w), the worktree object. The worktree's fields are also
// repeated flat (name, branch, path, repo_root), as spec 000's table lists
// them.
type readyPayload struct {
	SessionID string         `json:"session_id"`
	Workdir   workdir        `json:"workdir"`
	Worktree  *readyWorktree `json:"worktree,omitempty"`
	Name      string         `json:"name,omitempty"`
	Branch    string         `json:"branch,omitempty"`
	Path      string         `json:"path,omitempty"`
	RepoRoot  string         `json:"repo_root,omitempty"`
}

// readyWorktree is ready.worktree.
type readyWorktree struct {
	Name     string `json:"name"`
	Branch   string `json:"branch"`
	Path     string `json:"path"`
	RepoRoot string `json:"repo_root"`
}

type subscribeResponse struct {
	Events []string `json:"events"`
}

type errorPayload struct {
	AgentID string `json:"agent_id,omitempty"`
	Message string `json:"message"`
	Code    string `json:"code,omitempty"`
}

type workdir struct {
	Path       string `json:"path"`
	WorktreeID string `json:"worktree_id"`
	Generation int    `json:"generation"`
}

// assistantRollback: text an agent streamed was discarded (reason: the
// outcome of its turn, such as cancelled or error).
type assistantRollback struct {
	AgentID string `json:"agent_id"`
	Reason  string `json:"reason"`
}

// toast is a transient notice (level info, warn or error).
type toast struct {
	AgentID string `json:"agent_id"`
	Message string `json:"message"`
	Level   string `json:"level"`
}

// workdirChanged: the session moved to another checkout; the payload is
// status_response.workdir with the session id.
type workdirChanged struct {
	SessionID string `json:"session_id"`
	workdir
}

// statusPayload is the status_response snapshot of the cached state.
type statusPayload struct {
	SessionID       string           `json:"session_id"`
	Busy            bool             `json:"busy"`
	Phase           string           `json:"phase"`
	PhaseDetail     string           `json:"phase_detail"`
	PendingConfirm  *confirmRequest  `json:"pending_confirm"`
	PendingQuestion *questionRequest `json:"pending_question"`
	PendingHandoff  *handoffRequest  `json:"pending_handoff"`
	Workdir         workdir          `json:"workdir"`
	LastError       string           `json:"last_error"`
	LastOutcome     string           `json:"last_outcome"`
	CurrentRole     string           `json:"current_role"`
	UpdatedAt       time.Time        `json:"updated_at"`
	RunningJobs     int              `json:"running_jobs"`
	// MCPServers are the MCP servers agents use; absent when none is
	// configured.
	MCPServers []mcpServerStatus `json:"mcp_servers,omitempty"`
	// Sandbox says whether shell commands run confined: "on", or
	// "unavailable: why" where it was asked for (docs/sandbox.md); absent
	// when it is off.
	Sandbox string `json:"sandbox,omitempty"`
}

type activity struct {
	AgentID string `json:"agent_id"`
	Type    string `json:"type"`
	Detail  string `json:"detail"`
}

type toolCall struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args"`
}

// assistantMessage is shaped as Chord sends it: tool_calls is the number
// of tool calls in the response, and the main agent's message has empty
// agent_id, task_id, agent_type and parent_agent_id. The calls themselves
// (id, name, arguments) are arbor's addition in tool_call_details.
type assistantMessage struct {
	AgentID         string     `json:"agent_id"`
	TaskID          string     `json:"task_id"`
	AgentType       string     `json:"agent_type"`
	ParentAgentID   string     `json:"parent_agent_id"`
	Text            string     `json:"text"`
	ToolCalls       int        `json:"tool_calls"`
	ToolCallDetails []toolCall `json:"tool_call_details"`
}

// agentStarted: a sub-agent's runtime started. The main agent's children
// have empty parent_agent_id and parent_task_id.
type agentStarted struct {
	AgentID         string `json:"agent_id"`
	PreviousAgentID string `json:"previous_agent_id,omitempty"`
	TaskID          string `json:"task_id"`
	AgentType       string `json:"agent_type"`
	Description     string `json:"description"`
	ParentAgentID   string `json:"parent_agent_id"`
	ParentTaskID    string `json:"parent_task_id"`
	Model           string `json:"model,omitempty"`  // the sub-agent's model when it chose one (provider/name)
	Runner          string `json:"runner,omitempty"` // the external agent that runs it ("claude-code"); absent for arbor's own
}

// agentNotify: a sub-agent's progress note to its parent (the target).
type agentNotify struct {
	AgentID       string `json:"agent_id"`
	TaskID        string `json:"task_id"`
	AgentType     string `json:"agent_type"`
	ParentAgentID string `json:"parent_agent_id"`
	ParentTaskID  string `json:"parent_task_id"`
	TargetAgentID string `json:"target_agent_id"`
	TargetTaskID  string `json:"target_task_id"`
	Kind          string `json:"kind"`
	Subtype       string `json:"subtype"`
	Message       string `json:"message"`
}

// agentDone: a sub-agent's task ended. State (complete, failed or
// cancelled) is arbor's addition; summary is the result, or the state and
// the error.
type agentDone struct {
	AgentID       string `json:"agent_id"`
	TaskID        string `json:"task_id"`
	AgentType     string `json:"agent_type"`
	ParentAgentID string `json:"parent_agent_id"`
	ParentTaskID  string `json:"parent_task_id"`
	Summary       string `json:"summary"`
	State         string `json:"state"`
}

// confirmRequest is shaped as Chord sends it: needs_approval and
// already_allowed list the call's arguments (its command, or its paths)
// that need approval and that rules already allow; needs_approval_rules
// the rule an "always allow" would install when the confirm gives no
// rule_pattern (arbor's form, which rule_pattern accepts back), and
// already_allowed_rules the rules that already allow part of the call.
type confirmRequest struct {
	RequestID           string   `json:"request_id"`
	AgentID             string   `json:"agent_id"`
	ToolName            string   `json:"tool_name"`
	ArgsJSON            string   `json:"args_json"`
	NeedsApproval       []string `json:"needs_approval"`
	AlreadyAllowed      []string `json:"already_allowed"`
	NeedsApprovalRules  []string `json:"needs_approval_rules"`
	AlreadyAllowedRules []string `json:"already_allowed_rules"`
	TimeoutMS           int64    `json:"timeout_ms"`
}

// questionRequest is shaped as Chord sends it: option_details lists one
// description per option (a list of strings), "" where an option has
// none.
type questionRequest struct {
	RequestID     string     `json:"request_id"`
	AgentID       string     `json:"agent_id"`
	ToolName      string     `json:"tool_name"`
	Header        string     `json:"header"`
	Question      string     `json:"question"`
	Options       []string   `json:"options"`
	OptionDetails []string   `json:"option_details"`
	Multiple      bool       `json:"multiple"`
	Deadline      *time.Time `json:"deadline,omitempty"`
}

type questionResolved struct {
	RequestID string `json:"request_id"`
	Reason    string `json:"reason"`
}

type notification struct {
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

type todosPayload struct {
	Todos []tool.Todo `json:"todos"`
}

type compactionStatus struct {
	Status  string `json:"status"`
	Trigger string `json:"trigger"`
	Reason  string `json:"reason"`
	PlanID  string `json:"plan_id"`
}

type idlePayload struct {
	LastOutcome              string `json:"last_outcome"`
	SuppressUserNotification bool   `json:"suppress_user_notification"`
	RunningJobs              int    `json:"running_jobs"`
}

type localShellResult struct {
	Command string `json:"command"`
	Output  string `json:"output"`
	Failed  bool   `json:"failed"`
	Error   string `json:"error"`
}

type modelsResponse struct {
	OK      bool   `json:"ok"`
	Message string `json:"message,omitempty"`
	Status  string `json:"status,omitempty"`
}

type roleEntry struct {
	Name    string `json:"name"`
	Current bool   `json:"current"`
}

type roleResponse struct {
	OK      bool        `json:"ok"`
	Message string      `json:"message,omitempty"`
	Role    string      `json:"role,omitempty"`
	Roles   []roleEntry `json:"roles,omitempty"`
}

type roleChange struct {
	Role string `json:"role"`
}

type infoPayload struct {
	AgentID string `json:"agent_id"`
	Message string `json:"message"`
}

type backgroundResult struct {
	SessionID     string `json:"session_id"`
	TargetAgentID string `json:"target_agent_id"`
	// MessageIndex numbers the session's background results from 0.
	MessageIndex int    `json:"message_index"`
	Content      string `json:"content"`
}

type sessionSwitched struct {
	SessionID string `json:"session_id"`
}

// Inbound commands.

type subscribeCmd struct {
	Events []string `json:"events"`
}

type sendCmd struct {
	Content string `json:"content"`
}

type confirmCmd struct {
	RequestID     string `json:"request_id"`
	Action        string `json:"action"`
	FinalArgsJSON string `json:"final_args_json"`
	DenyReason    string `json:"deny_reason"`
	RulePattern   string `json:"rule_pattern"`
	RuleScope     string `json:"rule_scope"`
}

type questionCmd struct {
	RequestID string   `json:"request_id"`
	Answers   []string `json:"answers"`
	Reason    string   `json:"reason"`
}

type localShellCmd struct {
	Command string `json:"command"`
	Content string `json:"content"`
}

type modelsCmd struct {
	Action string `json:"action"`
	Pool   string `json:"pool"`
}

type roleCmd struct {
	Action string `json:"action"`
	Role   string `json:"role"`
}

// contextNotice warns that the context nears compaction.
type contextNotice struct {
	SessionID string `json:"session_id"`
	Level     string `json:"level"`
	Message   string `json:"message"`
	// MessageIndex numbers the session's notices from 0.
	MessageIndex int `json:"message_index"`
}
