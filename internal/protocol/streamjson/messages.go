package streamjson

import "encoding/json"

// Input message types (client → arbor).
const (
	typeUser            = "user"
	typeControlRequest  = "control_request"
	typeControlResponse = "control_response"
	typeRegistryRequest = "registry_request"
)

// userInput is a "user" line. Content is a string or an array of content
// blocks, as in the Claude Code SDK.
type userInput struct {
	Message struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"message"`
	SessionID    string        `json:"session_id,omitempty"`
	ShellContext *shellContext `json:"shell_context,omitempty"`
	// UUID, when the client stamps its message, is reported under an
	// interrupt's still_queued while the message waits.
	UUID string `json:"uuid,omitempty"`
}

type shellContext struct {
	Cwd          string            `json:"cwd"`
	Env          map[string]string `json:"env"`
	LastExitCode *int              `json:"last_exit_code"`
}

// contentBlock is one block of a user message's content array.
type contentBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
	// Source is an image block's image, as the Claude Agent SDK sends
	// it: {"type": "base64", "media_type": "image/png", "data": …}.
	Source *imageSource `json:"source,omitempty"`
}

type imageSource struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
	URL       string `json:"url,omitempty"`
}

// controlRequestIn is a "control_request" line from the client.
type controlRequestIn struct {
	RequestID string         `json:"request_id"`
	Request   controlPayload `json:"request"`
}

// controlPayload holds the fields of every control request subtype the
// client may send; Subtype says which are meaningful.
type controlPayload struct {
	Subtype string `json:"subtype"`
	// switch_model, set_model
	Model string `json:"model,omitempty"`
	// config_override
	ApprovalMode string   `json:"approval_mode,omitempty"`
	AllowedTools []string `json:"allowed_tools,omitempty"`
	// set_permission_mode (Claude Agent SDK)
	Mode string `json:"mode,omitempty"`
	// initialize: what the client can do
	Capabilities clientCapabilities `json:"capabilities"`
	// initialize (Claude Agent SDK): settings for the session
	SystemPrompt       json.RawMessage          `json:"systemPrompt,omitempty"`
	AppendSystemPrompt string                   `json:"appendSystemPrompt,omitempty"`
	Hooks              map[string][]hookMatcher `json:"hooks,omitempty"`
	// initialize (Claude Agent SDK): the client's in-process MCP servers,
	// and what each answered to initialize and tools/list (see mcp.go)
	// (an array of names from the Claude Agent SDK, an object by name
	// from the Qwen Code SDK; see sdkServerNames)
	SDKMCPServers         json.RawMessage        `json:"sdkMcpServers,omitempty"`
	SDKMCPServerManifests map[string]sdkManifest `json:"sdkMcpServerManifests,omitempty"`
	// mcp_message: a JSON-RPC message of an in-process MCP server
	ServerName string          `json:"server_name,omitempty"`
	Message    json.RawMessage `json:"message,omitempty"`
	// initialize (Claude Agent SDK, with --await-initialize): launch
	// fields, see LaunchInit
	DisallowedTools []string        `json:"disallowedTools,omitempty"`
	MCPServers      json.RawMessage `json:"mcpServers,omitempty"`
	// initialize, set_effort (Qwen Code SDK): the reasoning effort
	Effort string `json:"effort,omitempty"`
	// get_context_usage (Qwen Code SDK)
	ShowDetails bool `json:"show_details,omitempty"`
	// get_usage_info (Qwen Code SDK): today, week, month, all
	Range string `json:"range,omitempty"`
	// unsupported are the initialize fields with a value that arbor does
	// not act on (see initializeFields).
	unsupported []string
}

// clientCapabilities are what a client declares in initialize.
type clientCapabilities struct {
	CanExecuteShell bool `json:"can_execute_shell"`
}

// controlResponseIn is a "control_response" line: the client's answer to a
// request arbor sent.
type controlResponseIn struct {
	Response struct {
		Subtype   string          `json:"subtype"`
		RequestID string          `json:"request_id"`
		Response  json.RawMessage `json:"response,omitempty"`
		Error     string          `json:"error,omitempty"`
	} `json:"response"`
}

// approvalReply is the body of a can_use_tool answer.
type approvalReply struct {
	Behavior     string          `json:"behavior"` // "allow" or "deny"
	UpdatedInput json.RawMessage `json:"updatedInput,omitempty"`
	Message      string          `json:"message,omitempty"`
	// Interrupt, with a denial, also ends the turn.
	Interrupt bool `json:"interrupt,omitempty"`
}

// questionReply is the body of an ask_user answer.
type questionReply struct {
	Answer   string   `json:"answer,omitempty"`
	Answers  []string `json:"answers,omitempty"`
	Declined bool     `json:"declined,omitempty"`
}

// authReply is the body of an auth_response.
type authReply struct {
	ProviderID string            `json:"provider_id"`
	Values     map[string]string `json:"values"`
	Persist    bool              `json:"persist"`
	// refused is set (not from JSON) when the client answered with an
	// error, e.g. a client that does not know auth_required.
	refused string
}

// registryRequest is a "registry_request" line.
type registryRequest struct {
	RequestID string          `json:"request_id"`
	Domain    string          `json:"domain"`
	Action    string          `json:"action"`
	Params    json.RawMessage `json:"params,omitempty"`
}

// Output messages (arbor → client).

// systemMessage is a "system" line other than init.
type systemMessage struct {
	Type      string `json:"type"` // "system"
	Subtype   string `json:"subtype"`
	SessionID string `json:"session_id,omitempty"`
	Model     string `json:"model,omitempty"`
	Reason    string `json:"reason,omitempty"`
	UUID      string `json:"uuid,omitempty"`
	// sandbox_blocked: the call and what the OS sandbox refused during it.
	ToolUseID string   `json:"tool_use_id,omitempty"`
	Blocked   []string `json:"blocked,omitempty"`
}

// informationalMessage is a "system" "informational" line: what a hook
// said for the person (its systemMessage), in Claude Code's field order.
type informationalMessage struct {
	Type      string `json:"type"`    // "system"
	Subtype   string `json:"subtype"` // "informational"
	Content   string `json:"content"`
	Level     string `json:"level"`
	UUID      string `json:"uuid"`
	SessionID string `json:"session_id"`
}

// hookLine is a "system" "hook_started" or "hook_response" line: a
// SessionStart command hook began, or ended with this output, in Claude
// Code's field order.
type hookLine struct {
	Type      string  `json:"type"`    // "system"
	Subtype   string  `json:"subtype"` // "hook_started", "hook_response"
	HookID    string  `json:"hook_id"`
	HookName  string  `json:"hook_name"` // "SessionStart:startup"
	HookEvent string  `json:"hook_event"`
	Output    *string `json:"output,omitempty"` // stdout then stderr
	Stdout    *string `json:"stdout,omitempty"`
	Stderr    *string `json:"stderr,omitempty"`
	ExitCode  *int    `json:"exit_code,omitempty"`
	Outcome   string  `json:"outcome,omitempty"` // success, error, cancelled
	UUID      string  `json:"uuid"`
	SessionID string  `json:"session_id"`
}

// initMessage is the "system" "init" line, with the fields Claude Code SDK
// clients' types declare.
type initMessage struct {
	Type           string      `json:"type"`    // "system"
	Subtype        string      `json:"subtype"` // "init"
	SessionID      string      `json:"session_id"`
	Model          string      `json:"model,omitempty"`
	Tools          []string    `json:"tools"`
	Cwd            string      `json:"cwd"`
	PermissionMode string      `json:"permissionMode"`
	APIKeySource   string      `json:"apiKeySource"`
	MCPServers     []mcpServer `json:"mcp_servers"`
	SlashCommands  []string    `json:"slash_commands"`
	// Skills are the project's and the user's Agent Skills by name (the
	// skill tool loads them), as Claude Code lists its own.
	Skills      []string `json:"skills"`
	OutputStyle string   `json:"output_style"`
	// SandboxEnabled says whether shell commands run confined by the OS
	// sandbox, as Claude Code's init does.
	SandboxEnabled bool   `json:"sandbox_enabled"`
	UUID           string `json:"uuid"`
}

type mcpServer struct {
	Name   string `json:"name"`
	Status string `json:"status"`
	// ServerInfo, Error, Transport and Tools are in mcp_status answers
	// only.
	ServerInfo *mcpServerInfo `json:"serverInfo,omitempty"`
	Error      string         `json:"error,omitempty"`
	Transport  string         `json:"transport,omitempty"`
	// Source is where the server was declared, in Claude Code's words:
	// sdk, dynamic (--mcp-config), project or user.
	Source string        `json:"source,omitempty"`
	Tools  []mcpToolInfo `json:"tools,omitempty"`
}

type streamEvent struct {
	Type            string      `json:"type"` // "stream_event"
	Event           streamDelta `json:"event"`
	SessionID       string      `json:"session_id,omitempty"`
	ParentToolUseID *string     `json:"parent_tool_use_id"`
	UUID            string      `json:"uuid,omitempty"`
}

// rawStreamEvent is a stream_event line as Claude Code writes it: one of
// Anthropic's raw stream events.
type rawStreamEvent struct {
	Type            string   `json:"type"` // "stream_event"
	Event           rawEvent `json:"event"`
	SessionID       string   `json:"session_id"`
	ParentToolUseID *string  `json:"parent_tool_use_id"`
	UUID            string   `json:"uuid"`
}

// modelUsage is one model's share of a turn, as Claude Code's result
// reports it under modelUsage.
type modelUsage struct {
	InputTokens              int64   `json:"inputTokens"`
	OutputTokens             int64   `json:"outputTokens"`
	CacheReadInputTokens     int64   `json:"cacheReadInputTokens"`
	CacheCreationInputTokens int64   `json:"cacheCreationInputTokens"`
	WebSearchRequests        int64   `json:"webSearchRequests"`
	CostUSD                  float64 `json:"costUSD"`
	ContextWindow            int64   `json:"contextWindow"`
	MaxOutputTokens          int64   `json:"maxOutputTokens"`
}

type streamDelta struct {
	Subtype   string `json:"subtype"`
	Content   string `json:"content,omitempty"`
	ToolName  string `json:"tool_name,omitempty"`
	ToolUseID string `json:"tool_use_id,omitempty"`
}

// messageLine carries a whole message ("assistant" or "user") in the
// Anthropic Messages shape, as Claude Code SDK clients expect.
type messageLine struct {
	Type            string     `json:"type"`
	Message         apiMessage `json:"message"`
	SessionID       string     `json:"session_id"`
	ParentToolUseID *string    `json:"parent_tool_use_id"`
	UUID            string     `json:"uuid"`
}

type apiMessage struct {
	ID      string     `json:"id,omitempty"`
	Type    string     `json:"type,omitempty"` // "message" for assistant messages
	Role    string     `json:"role"`
	Model   string     `json:"model,omitempty"`
	Content []apiBlock `json:"content"`
	// StopReason is the raw stop_reason: a string, or null as Claude Code
	// writes its assistant lines (before the stop reason is known);
	// omitted when empty (user messages).
	StopReason   json.RawMessage `json:"stop_reason,omitempty"`
	StopSequence json.RawMessage `json:"stop_sequence,omitempty"`
	Usage        *apiUsage       `json:"usage,omitempty"`
}

type apiBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	Thinking  string          `json:"thinking,omitempty"`
	Signature string          `json:"signature,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   string          `json:"content,omitempty"`
	// IsError is set on tool results, false included, as Claude Code
	// writes them.
	IsError *bool `json:"is_error,omitempty"`
}

type apiUsage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	// TotalTokens is the qwen CLI's (input plus output), set for its
	// clients only.
	TotalTokens *int64 `json:"total_tokens,omitempty"`
}

type resultMessage struct {
	Type    string `json:"type"` // "result"
	Subtype string `json:"subtype"`
	IsError bool   `json:"is_error"`
	Result  string `json:"result"`
	// StopReason is the raw stop_reason: the last model call's, or
	// null for a local command's result (as Claude Code writes it);
	// omitted when empty.
	StopReason        json.RawMessage       `json:"stop_reason,omitempty"`
	Errors            []string              `json:"errors,omitempty"`
	SessionID         string                `json:"session_id"`
	DurationMS        int64                 `json:"duration_ms"`
	DurationAPIMS     int64                 `json:"duration_api_ms"`
	NumTurns          int                   `json:"num_turns"`
	Usage             apiUsage              `json:"usage"`
	TotalCostUSD      float64               `json:"total_cost_usd"`
	ModelUsage        map[string]modelUsage `json:"modelUsage"`
	PermissionDenials []permissionDenial    `json:"permission_denials"`
	UUID              string                `json:"uuid"`
	// LocalCommand names the command a turn ran instead of the model
	// ("compact"), as Claude Code's result does.
	LocalCommand string `json:"local_command,omitempty"`
	// Error is what the Qwen Code SDK's error result reads
	// (error.message); set for its clients only.
	Error *resultError `json:"error,omitempty"`
}

type resultError struct {
	Type    string `json:"type,omitempty"`
	Message string `json:"message"`
}

// permissionUpdate is a Claude Code permission suggestion: add these
// allow rules for the session.
type permissionUpdate struct {
	Type        string      `json:"type"` // "addRules"
	Rules       []ruleValue `json:"rules"`
	Behavior    string      `json:"behavior"`    // "allow"
	Destination string      `json:"destination"` // "session"
}

type ruleValue struct {
	ToolName    string `json:"toolName"`
	RuleContent string `json:"ruleContent,omitempty"`
}

// permissionDenial is one refused call, as Claude Code lists them in the
// result.
type permissionDenial struct {
	ToolName  string          `json:"tool_name"`
	ToolUseID string          `json:"tool_use_id"`
	ToolInput json.RawMessage `json:"tool_input"`
}

// controlRequestOut is a request arbor sends the client.
// controlCancelOut withdraws a control_request of arbor's that needs no
// answer any more.
type controlCancelOut struct {
	Type      string `json:"type"` // "control_cancel_request"
	RequestID string `json:"request_id"`
}

type controlRequestOut struct {
	Type      string     `json:"type"` // "control_request"
	RequestID string     `json:"request_id"`
	Request   outRequest `json:"request"`
}

type outRequest struct {
	Subtype string `json:"subtype"`
	// can_use_tool: the spec's tool_input and the Claude Agent SDK's input
	// carry the same arguments.
	ToolName  string          `json:"tool_name,omitempty"`
	ToolInput json.RawMessage `json:"tool_input,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Reason    string          `json:"reason,omitempty"`
	// can_use_tool, as Claude Code sends them: why it asks, and the rule
	// that would allow such calls for the session.
	DecisionReason        string             `json:"decision_reason,omitempty"`
	PermissionSuggestions []permissionUpdate `json:"permission_suggestions,omitempty"`
	// hook_callback (its input is Input)
	CallbackID string `json:"callback_id,omitempty"`
	// ask_user
	Question string   `json:"question,omitempty"`
	Options  []string `json:"options,omitempty"`
	Default  string   `json:"default,omitempty"`
	// auth_required
	Providers []authProvider `json:"providers,omitempty"`
	// host_shell
	Command string `json:"command,omitempty"`
	Cwd     string `json:"cwd,omitempty"`
	Timeout int    `json:"timeout,omitempty"`
}

type authProvider struct {
	ID     string   `json:"id"`
	Type   string   `json:"type"`
	Fields []string `json:"fields"`
}

// controlResponseOut answers a client's control request.
type controlResponseOut struct {
	Type     string       `json:"type"` // "control_response"
	Response responseBody `json:"response"`
}

type responseBody struct {
	Subtype   string `json:"subtype"` // "success" or "error"
	RequestID string `json:"request_id"`
	Response  any    `json:"response,omitempty"`
	Error     string `json:"error,omitempty"`
}

type registryResponse struct {
	Type      string `json:"type"` // "registry_response"
	RequestID string `json:"request_id"`
	Domain    string `json:"domain"`
	Action    string `json:"action"`
	Success   bool   `json:"success"`
	Data      any    `json:"data,omitempty"` // a typed value of the domain
	Error     string `json:"error,omitempty"`
}
