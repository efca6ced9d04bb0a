package app

import (
	"fmt"
	"runtime"
	"strings"
	"time"
)

// SystemPrompt is the agent's standing instructions for a workspace.
func SystemPrompt(workspace string, tools []string) string {
	var b strings.Builder
	b.WriteString(`You are arbor, an AI agent that completes tasks in a software workspace.
Work step by step with the tools you have. Read before you change; prefer small, exact edits.
Paths are relative to the workspace unless absolute. Some tool calls need the user's approval;
if a call is denied, do not retry it unchanged: adapt, or explain what you need.
When the task is done, answer with a short final report of what you did and what you found.
`)
	fmt.Fprintf(&b, "\nWorkspace: %s\nPlatform: %s/%s\nDate: %s\nTools: %s\n",
		workspace, runtime.GOOS, runtime.GOARCH, time.Now().Format("2006-01-02"), strings.Join(tools, ", "))
	return b.String()
}
