package tool

// Claude Code's tool_response objects of the tools that search and keep
// track (ToClaudeCodeResponse), as Claude Code 2.1 gives a PostToolUse
// hook (recorded: internal/hook/testdata/claude-code-post-tool-use-more.json).

// ccGlob is Claude Code's Glob output.
type ccGlob struct {
	Filenames       []string `json:"filenames"`
	DurationMs      int64    `json:"durationMs"`
	NumFiles        int      `json:"numFiles"`
	Truncated       bool     `json:"truncated"`
	TotalMatches    int      `json:"totalMatches"`
	CountIsComplete bool     `json:"countIsComplete"`
}

// ccGrep is Claude Code's Grep output in its content mode, the one mode
// of arbor's grep: numFiles is 0 and filenames empty there, as Claude
// Code gives them.
type ccGrep struct {
	Mode       string   `json:"mode"`
	NumFiles   int      `json:"numFiles"`
	Filenames  []string `json:"filenames"`
	Content    string   `json:"content"`
	NumLines   int      `json:"numLines"`
	TotalLines int      `json:"totalLines"`
}

// ccTodoWrite is Claude Code's TodoWrite output.
type ccTodoWrite struct {
	OldTodos []ccTodo `json:"oldTodos"`
	NewTodos []ccTodo `json:"newTodos"`
}

// ccTodo is a todo item as Claude Code's TodoWrite has it (no id).
type ccTodo struct {
	Content    string     `json:"content"`
	Status     TodoStatus `json:"status"`
	ActiveForm string     `json:"activeForm"`
}

func ccTodos(items []Todo) []ccTodo {
	out := make([]ccTodo, len(items))
	for i, t := range items {
		out[i] = ccTodo{Content: t.Content, Status: t.Status, ActiveForm: t.ActiveForm}
	}
	return out
}

// ccWebFetch is Claude Code's WebFetch output; result is arbor's text of
// the page (Claude Code's is a small model's answer to the prompt).
type ccWebFetch struct {
	Bytes      int    `json:"bytes"`
	Code       int    `json:"code"`
	CodeText   string `json:"codeText"`
	Result     string `json:"result"`
	DurationMs int64  `json:"durationMs"`
	URL        string `json:"url"`
}
