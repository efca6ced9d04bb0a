package acp

import "encoding/json"

// The wire: JSON-RPC 2.0 messages and the ACP (protocol version 1) types
// arbor sends and reads, written from the schema that the official
// TypeScript SDK ships (@agentclientprotocol/sdk, schema/v1/schema.json).
// Every type has explicit tags; fields the schema marks optional are
// omitted when empty.

// protocolVersion is the ACP version arbor speaks.
const protocolVersion = 1

// JSON-RPC error codes (the schema's ErrorCode).
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
	codeMethodNotFound = -32601
	codeInvalidParams  = -32602
	codeInternalError  = -32603
	codeAuthRequired   = -32000
	codeNotFound       = -32002
)

// message is any JSON-RPC message as read: a request (method and id), a
// notification (method, no id) or a response (id, result or error).
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

// rpcError is a JSON-RPC error object.
type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

func (e *rpcError) Error() string { return e.Message }

// outRequest is a request or notification arbor sends.
type outRequest struct {
	JSONRPC string `json:"jsonrpc"`
	ID      *int64 `json:"id,omitempty"`
	Method  string `json:"method"`
	Params  any    `json:"params,omitempty"`
}

// outResponse answers a client's request; exactly one of Result and Error
// is set (Result is then never omitted: null is a valid result).
type outResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result"`
}

type outError struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   rpcError        `json:"error"`
}

// cancelRequest is $/cancel_request: arbor no longer waits for the answer
// to its request RequestID.
type cancelRequest struct {
	RequestID int64 `json:"requestId"`
}

// initialize

type initializeRequest struct {
	ProtocolVersion    int                `json:"protocolVersion"`
	ClientCapabilities clientCapabilities `json:"clientCapabilities"`
}

type clientCapabilities struct {
	FS struct {
		ReadTextFile  bool `json:"readTextFile"`
		WriteTextFile bool `json:"writeTextFile"`
	} `json:"fs"`
	Terminal bool `json:"terminal"`
}

type initializeResponse struct {
	ProtocolVersion   int               `json:"protocolVersion"`
	AgentCapabilities agentCapabilities `json:"agentCapabilities"`
	AuthMethods       []authMethod      `json:"authMethods"`
	AgentInfo         implementation    `json:"agentInfo"`
}

type agentCapabilities struct {
	LoadSession         bool                `json:"loadSession"`
	PromptCapabilities  promptCapabilities  `json:"promptCapabilities"`
	MCPCapabilities     mcpCapabilities     `json:"mcpCapabilities"`
	SessionCapabilities sessionCapabilities `json:"sessionCapabilities"`
}

// sessionCapabilities are the session methods beyond the baseline; {}
// says a method is supported.
type sessionCapabilities struct {
	Close  *struct{} `json:"close,omitempty"`  // session/close
	List   *struct{} `json:"list,omitempty"`   // session/list
	Resume *struct{} `json:"resume,omitempty"` // session/resume
}

type promptCapabilities struct {
	Image           bool `json:"image"`
	Audio           bool `json:"audio"`
	EmbeddedContext bool `json:"embeddedContext"`
}

type mcpCapabilities struct {
	HTTP bool `json:"http"`
	SSE  bool `json:"sse"`
}

type authMethod struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

type implementation struct {
	Name    string `json:"name"`
	Title   string `json:"title,omitempty"`
	Version string `json:"version"`
}

// sessions

type mcpServer struct {
	Type    string      `json:"type,omitempty"` // "" (stdio), http or sse
	Name    string      `json:"name"`
	Command string      `json:"command,omitempty"`
	Args    []string    `json:"args,omitempty"`
	Env     []nameValue `json:"env,omitempty"`
	URL     string      `json:"url,omitempty"`
	Headers []nameValue `json:"headers,omitempty"`
}

type nameValue struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type newSessionRequest struct {
	Cwd        string      `json:"cwd"`
	MCPServers []mcpServer `json:"mcpServers"`
}

type loadSessionRequest struct {
	SessionID  string      `json:"sessionId"`
	Cwd        string      `json:"cwd"`
	MCPServers []mcpServer `json:"mcpServers"`
}

// session/resume takes what session/load takes and answers as it does,
// without the replay.
type resumeSessionRequest = loadSessionRequest

type listSessionsRequest struct {
	Cwd    string `json:"cwd"`
	Cursor string `json:"cursor"`
}

type listSessionsResponse struct {
	Sessions   []sessionInfo `json:"sessions"`
	NextCursor string        `json:"nextCursor,omitempty"`
}

type sessionInfo struct {
	SessionID string `json:"sessionId"`
	Cwd       string `json:"cwd"`
	Title     string `json:"title,omitempty"`     // the conversation's first prompt (app.NameConversation)
	UpdatedAt string `json:"updatedAt,omitempty"` // RFC 3339
}

type newSessionResponse struct {
	SessionID     string         `json:"sessionId"`
	Modes         modeState      `json:"modes"`
	ConfigOptions []configOption `json:"configOptions"`
}

type loadSessionResponse struct {
	Modes         modeState      `json:"modes"`
	ConfigOptions []configOption `json:"configOptions"`
}

type modeState struct {
	CurrentModeID  string        `json:"currentModeId"`
	AvailableModes []sessionMode `json:"availableModes"`
}

type sessionMode struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

// configOption is a select option (the only kind arbor offers: the model).
type configOption struct {
	ID           string         `json:"id"`
	Name         string         `json:"name"`
	Category     string         `json:"category,omitempty"`
	Type         string         `json:"type"`
	CurrentValue string         `json:"currentValue"`
	Options      []selectOption `json:"options"`
}

type selectOption struct {
	Value string `json:"value"`
	Name  string `json:"name"`
}

type setModeRequest struct {
	SessionID string `json:"sessionId"`
	ModeID    string `json:"modeId"`
}

type setConfigOptionRequest struct {
	SessionID string `json:"sessionId"`
	ConfigID  string `json:"configId"`
	Value     string `json:"value"`
}

type setConfigOptionResponse struct {
	ConfigOptions []configOption `json:"configOptions"`
}

type sessionRef struct {
	SessionID string `json:"sessionId"`
}

// prompts

type promptRequest struct {
	SessionID string         `json:"sessionId"`
	Prompt    []contentBlock `json:"prompt"`
}

type promptResponse struct {
	StopReason string `json:"stopReason"`
}

// Stop reasons of a prompt turn.
const (
	stopEndTurn   = "end_turn"
	stopMaxTurns  = "max_turn_requests"
	stopCancelled = "cancelled"
	stopRefusal   = "refusal"
)

// contentBlock is a text block as sent; blocks read may be of other
// types (resource_link, resource), whose text-bearing fields are kept.
type contentBlock struct {
	Type     string    `json:"type"`
	Text     string    `json:"text,omitempty"`
	URI      string    `json:"uri,omitempty"`
	Name     string    `json:"name,omitempty"`
	Resource *resource `json:"resource,omitempty"`
}

type resource struct {
	URI  string `json:"uri"`
	Text string `json:"text,omitempty"`
}

func textBlock(s string) contentBlock { return contentBlock{Type: "text", Text: s} }

// session/update

type sessionNotification struct {
	SessionID string        `json:"sessionId"`
	Update    sessionUpdate `json:"update"`
}

// sessionUpdate is one update; SessionUpdate says which, and only that
// kind's fields are set (the schema's discriminated union, flattened).
type sessionUpdate struct {
	SessionUpdate string `json:"sessionUpdate"`
	// chunks
	Content *contentBlock `json:"content,omitempty"`
	// tool_call, tool_call_update; Title also session_info_update's
	ToolCallID  string            `json:"toolCallId,omitempty"`
	Title       string            `json:"title,omitempty"`
	Kind        string            `json:"kind,omitempty"`
	Status      string            `json:"status,omitempty"`
	ToolContent []toolCallContent `json:"-"`
	Locations   []location        `json:"locations,omitempty"`
	RawInput    json.RawMessage   `json:"rawInput,omitempty"`
	RawOutput   any               `json:"rawOutput,omitempty"`
	// plan
	Entries []planEntry `json:"entries,omitempty"`
	// current_mode_update
	CurrentModeID string `json:"currentModeId,omitempty"`
	// available_commands_update
	Commands []availableCommand `json:"-"`
}

// availableCommand is a slash command the session offers; Input, when
// set, says it takes the text typed after its name.
type availableCommand struct {
	Name        string        `json:"name"`
	Description string        `json:"description"`
	Input       *commandInput `json:"input,omitempty"`
}

type commandInput struct {
	Hint string `json:"hint"`
}

// MarshalJSON writes a tool call's content under "content", where chunks
// have their one block, and a plan's entries even when there are none.
func (u sessionUpdate) MarshalJSON() ([]byte, error) {
	type plain sessionUpdate
	switch u.SessionUpdate {
	case updateToolCall, updateToolCallUpdate:
		return json.Marshal(struct {
			plain
			Content []toolCallContent `json:"content,omitempty"`
		}{plain: plain(u), Content: u.ToolContent})
	case updatePlan:
		return json.Marshal(struct {
			plain
			Entries []planEntry `json:"entries"`
		}{plain: plain(u), Entries: append([]planEntry{}, u.Entries...)})
	case updateCommands:
		return json.Marshal(struct {
			plain
			Commands []availableCommand `json:"availableCommands"`
		}{plain: plain(u), Commands: append([]availableCommand{}, u.Commands...)})
	}
	return json.Marshal(plain(u))
}

// Kinds of session/update.
const (
	updateUserChunk      = "user_message_chunk"
	updateAgentChunk     = "agent_message_chunk"
	updateThoughtChunk   = "agent_thought_chunk"
	updateToolCall       = "tool_call"
	updateToolCallUpdate = "tool_call_update"
	updatePlan           = "plan"
	updateCurrentMode    = "current_mode_update"
	updateCommands       = "available_commands_update"
	updateSessionInfo    = "session_info_update"
)

// toolCallContent is content ({type: content, content}) or a diff.
type toolCallContent struct {
	Type    string        `json:"type"`
	Content *contentBlock `json:"content,omitempty"`
	Path    string        `json:"path,omitempty"`
	OldText *string       `json:"oldText,omitempty"`
	NewText *string       `json:"newText,omitempty"`
	// TerminalID is a terminal's (type terminal).
	TerminalID string `json:"terminalId,omitempty"`
}

type location struct {
	Path string `json:"path"`
}

type planEntry struct {
	Content  string `json:"content"`
	Priority string `json:"priority"`
	Status   string `json:"status"`
}

// permissions

type requestPermissionRequest struct {
	SessionID string             `json:"sessionId"`
	ToolCall  permissionToolCall `json:"toolCall"`
	Options   []permissionOption `json:"options"`
}

// permissionToolCall is the tool call a permission request is about (the
// schema's ToolCallUpdate).
type permissionToolCall struct {
	ToolCallID string            `json:"toolCallId"`
	Title      string            `json:"title,omitempty"`
	Kind       string            `json:"kind,omitempty"`
	Status     string            `json:"status,omitempty"`
	Content    []toolCallContent `json:"content,omitempty"`
	Locations  []location        `json:"locations,omitempty"`
	RawInput   json.RawMessage   `json:"rawInput,omitempty"`
}

type permissionOption struct {
	OptionID string `json:"optionId"`
	Name     string `json:"name"`
	Kind     string `json:"kind"`
}

type requestPermissionResponse struct {
	Outcome struct {
		Outcome  string `json:"outcome"` // cancelled or selected
		OptionID string `json:"optionId"`
	} `json:"outcome"`
}

// fs

type readTextFileRequest struct {
	SessionID string `json:"sessionId"`
	Path      string `json:"path"`
}

type readTextFileResponse struct {
	Content string `json:"content"`
}

type writeTextFileRequest struct {
	SessionID string `json:"sessionId"`
	Path      string `json:"path"`
	Content   string `json:"content"`
}
